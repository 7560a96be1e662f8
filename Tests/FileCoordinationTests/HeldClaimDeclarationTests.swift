import Dispatch
import FCCore
import FCProtocol
import Foundation
import Logging
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

    /// Stop 69's review: a move that an accessor reports while its client declares its held claims to a new daemon
    /// may reach that daemon before the declaration, which ignores a move of a claim it does not know; the
    /// declaration named the claim's first place only, and the new daemon granted the new place to another process
    /// beside the running write. The moves reported meanwhile are held back and sent once, after the declarations
    /// (sent twice, a second `itemMoved` moves whatever stands at its source by then: a save's new file put there).
    @Test func aMoveReportedWhileHeldClaimsAreDeclaredReachesTheNewDaemon() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let moved = dir.url.appendingPathComponent("moved.txt")
        let first = try TestDaemon()
        defer { first.stop() }
        let second = try TestDaemon()
        defer { second.stop() }
        var policy = ConnectionPolicy.daemon(at: first.socket)
        policy.answersRecalls = false
        var secondPolicy = ConnectionPolicy.daemon(at: second.socket)
        secondPolicy.answersRecalls = false
        let client = CoordinationClient(policy: policy)

        // A write runs, granted by the first daemon.
        let granted = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = spawn {
            var error: NSError?
            NSFileCoordinator(filePresenter: nil, client: client).coordinate(
                writingItemAt: file,
                options: .forMoving,
                error: &error
            ) { _ in
                granted.signal()
                _ = release.wait(seconds: patience)
            }
        }
        defer { release.signal() }  // Were the test to stop early (the holder is waited for below).
        #expect(granted.wait(seconds: patience), "the write was not granted")
        let request = try #require(client.claims.heldRequests.first)
        let from = try #require(request.items.first?.path)
        let to = try ItemPath(absolute: moved.path)

        // A connection to the second daemon is put in charge; once it is, and before the held write is declared
        // there, the accessor reports its move, which reaches the second daemon first.
        let transport = try DaemonTransport.connect(
            policy: secondPolicy,
            mayStart: false,
            client: client.clientID,
            delegate: client,
            logger: { Logger(label: "test") }
        ).get()
        client.connected(to: transport) {
            client.send(.itemMoved(request.id, from: from, to: to, fromName: nil), preferring: transport)
        }

        // Another process's write of the new place waits on the second daemon while the write runs.
        let other = CoordinationClient(policy: secondPolicy)
        let otherGranted = DispatchSemaphore(value: 0)
        let otherDone = spawn {
            var error: NSError?
            NSFileCoordinator(filePresenter: nil, client: other).coordinate(writingItemAt: moved, error: &error) {
                _ in otherGranted.signal()
            }
        }
        #expect(!otherGranted.wait(seconds: 0.5), "the second daemon granted the moved file beside the running write")
        // The write ends; its finish goes to the daemon that granted it, and here to the second one too.
        release.signal()
        _ = holder.wait(seconds: patience)
        transport.send(.finishClaim(request.id, created: []))
        #expect(otherGranted.wait(seconds: patience), "the other write was never granted")
        _ = otherDone.wait(seconds: patience)
    }
}
