import Dispatch
import Foundation
import Testing

@testable import FileCoordination

/// docs/SEMANTICS.md §7: a client put in charge of a new connection declares there the claims whose accessors still
/// run, and only those. A claim another thread made and was granted on the new connection, once it was in charge and
/// while the client still registered its presenters there, is the new daemon's already: it was declared too, and the
/// daemon closed the connection as a client that reuses a live claim id (CI, stop 68: "claim id 8 reused while
/// live", on the first connection of a process whose threads coordinated at once).
@Suite struct HeldClaimDeclarationTests {
    @Test func aClaimGrantedOnTheConnectionPutInChargeIsNotDeclaredToItAgain() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let daemon = try TestDaemon()
        defer { daemon.stop() }
        // Without leases: every claim goes to the daemon (one a lease decided is not the daemon's to know).
        var policy = ConnectionPolicy.daemon(at: daemon.socket)
        policy.answersRecalls = false
        let client = CoordinationClient(policy: policy)
        func read() -> NSError? {
            var error: NSError?
            NSFileCoordinator(filePresenter: nil, client: client).coordinate(readingItemAt: file, error: &error) { _ in
            }
            return error
        }
        #expect(read() == nil)
        let transport = try #require(client.connection.current as? DaemonTransport)

        // The connection is put in charge again, as after a reconnect; once it is (`install`), and before the
        // client is done with it, another thread's claim goes through it, is granted, and runs on.
        let granted = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = Locked<DispatchSemaphore?>(nil)
        defer {
            release.signal()
            _ = holder.withLock { $0 }?.wait(seconds: patience)
        }
        client.connected(to: transport) {
            let thread = spawn {
                var error: NSError?
                NSFileCoordinator(filePresenter: nil, client: client).coordinate(readingItemAt: file, error: &error) {
                    _ in
                    granted.signal()
                    _ = release.wait(seconds: patience)
                }
            }
            holder.withLock { $0 = thread }
            #expect(granted.wait(seconds: patience), "the other thread's claim was not granted")
        }

        // The daemon read whatever the client declared before it answers this claim: the connection lives on.
        #expect(read() == nil)
        #expect(!transport.isLost, "the daemon closed the connection")
        #expect(client.connection.current === transport)
    }
}
