import FCCore
import FCSystem
import Logging
import Synchronization
import Testing

@testable import FCDaemon

// Document-portal paths to the host files they export (issue 26), against a portal of the test's own: the cache,
// its checks, the failures that leave paths as they are, and the way back. DocumentPortalEndToEndTests run the real
// portal.
struct DocumentPortalMappingTests {
    /// A portal that exports `documents` (id to host path) and counts what it is asked.
    final class FakePortal: Sendable {
        let documents: Mutex<[String: String]>
        let asked = Mutex(0)
        let reachable = Mutex(true)

        init(_ documents: [String: String]) { self.documents = Mutex(documents) }

        var portal: DocumentPortalMapping.Portal {
            DocumentPortalMapping.Portal(
                mountPoint: { .success(Array("/run/user/1000/doc".utf8)) },
                hostPath: { id in
                    self.asked.withLock { $0 += 1 }
                    guard self.reachable.withLock({ $0 }) else {
                        return .failure(
                            .init(name: "org.freedesktop.DBus.Error.NoReply", message: "")
                        )
                    }
                    guard let path = self.documents.withLock({ $0[id] }) else {
                        return .failure(
                            .init(name: "org.freedesktop.portal.Error.InvalidArgument", message: "")
                        )
                    }
                    return .success(Array(path.utf8))
                }
            )
        }
    }

    static func mapping(
        _ fake: FakePortal,
        now: @escaping () -> ContinuousClock.Instant = { .now }
    )
        -> DocumentPortalMapping
    {
        let mapping = DocumentPortalMapping(portal: fake.portal, logger: Logger(label: "test"), now: now)
        mapping.discoverMountPoint()
        return mapping
    }

    static func p(_ text: String) -> ItemPath { try! ItemPath(absolute: text) }

    @Test func portalPathsMapToTheHostFileAndOtherPathsAreLeftAlone() {
        let fake = FakePortal(["a1b2": "/home/ann/notes/todo.txt", "dir9": "/home/ann/photos"])
        let mapping = Self.mapping(fake)
        let identity = ItemIdentity(device: 39, inode: 7)
        #expect(
            mapping.hostPath(of: Self.p("/run/user/1000/doc/a1b2/todo.txt"), identity: identity)
                == Self.p("/home/ann/notes/todo.txt")
        )
        #expect(
            mapping.hostPath(of: Self.p("/run/user/1000/doc/by-app/org.x.App/a1b2/todo.txt"), identity: nil)
                == Self.p("/home/ann/notes/todo.txt")
        )
        // A folder exported whole: what is inside it maps too.
        #expect(
            mapping.hostPath(of: Self.p("/run/user/1000/doc/dir9/photos/2024/a.jpg"), identity: nil)
                == Self.p("/home/ann/photos/2024/a.jpg")
        )
        // Another name in a document's folder (an editor's temporary file), the folders themselves, and paths
        // outside the portal stay as they are, and cost no portal call.
        let before = fake.asked.withLock { $0 }
        #expect(mapping.hostPath(of: Self.p("/run/user/1000/doc"), identity: nil) == nil)
        #expect(mapping.hostPath(of: Self.p("/run/user/1000/doc/a1b2"), identity: nil) == nil)
        #expect(mapping.hostPath(of: Self.p("/run/user/1000/doc/by-app/org.x.App"), identity: nil) == nil)
        #expect(mapping.hostPath(of: Self.p("/run/user/1000/doc/by-app/org.x.App/a1b2"), identity: nil) == nil)
        #expect(mapping.hostPath(of: Self.p("/home/ann/notes/todo.txt"), identity: nil) == nil)
        #expect(fake.asked.withLock { $0 } == before)
        #expect(mapping.hostPath(of: Self.p("/run/user/1000/doc/a1b2/.goutputstream-X"), identity: nil) == nil)
    }

    @Test func theCacheIsCheckedAgainstThePortalFilesIdentity() {
        let fake = FakePortal(["a1b2": "/home/ann/a.txt"])
        let mapping = Self.mapping(fake)
        let path = Self.p("/run/user/1000/doc/a1b2/a.txt")
        let first = ItemIdentity(device: 39, inode: 7)
        #expect(mapping.hostPath(of: path, identity: first) == Self.p("/home/ann/a.txt"))
        #expect(mapping.hostPath(of: path, identity: first) == Self.p("/home/ann/a.txt"))
        #expect(mapping.hostPath(of: path, identity: nil) == Self.p("/home/ann/a.txt"))
        #expect(fake.asked.withLock { $0 } == 1)
        // The document removed and its id given to another file: the portal shows another inode, and is asked.
        fake.documents.withLock { $0["a1b2"] = "/home/bob/a.txt" }
        #expect(mapping.hostPath(of: path, identity: ItemIdentity(device: 39, inode: 8)) == Self.p("/home/bob/a.txt"))
        #expect(fake.asked.withLock { $0 } == 2)
    }

    @Test func anUnknownOrUnreachableDocumentIsLeftByPathForAWhile() {
        let fake = FakePortal([:])
        let clock = Mutex(ContinuousClock.now)
        let mapping = Self.mapping(fake) { clock.withLock { $0 } }
        let path = Self.p("/run/user/1000/doc/zzzz/a.txt")
        #expect(mapping.hostPath(of: path, identity: nil) == nil)
        #expect(mapping.hostPath(of: path, identity: nil) == nil)
        #expect(fake.asked.withLock { $0 } == 1)
        clock.withLock { $0 += DocumentPortalMapping.negativeLifetime }
        fake.documents.withLock { $0["zzzz"] = "/home/ann/a.txt" }
        #expect(mapping.hostPath(of: path, identity: nil) == Self.p("/home/ann/a.txt"))

        // Unreachable: left by path, and not asked again until the back-off is over.
        fake.reachable.withLock { $0 = false }
        let other = Self.p("/run/user/1000/doc/yyyy/b.txt")
        #expect(mapping.hostPath(of: other, identity: nil) == nil)
        #expect(mapping.hostPath(of: other, identity: nil) == nil)
        #expect(fake.asked.withLock { $0 } == 3)
        // A document already known is still mapped.
        #expect(mapping.hostPath(of: path, identity: nil) == Self.p("/home/ann/a.txt"))
        fake.reachable.withLock { $0 = true }
        fake.documents.withLock { $0["yyyy"] = "/home/ann/b.txt" }
        clock.withLock { $0 += DocumentPortalMapping.backoff }
        #expect(mapping.hostPath(of: other, identity: nil) == Self.p("/home/ann/b.txt"))
    }

    @Test func theCacheIsBounded() {
        let fake = FakePortal([:])
        fake.documents.withLock { documents in
            for index in 0...DocumentPortalMapping.maximumDocuments { documents["d\(index)"] = "/h/f\(index)" }
        }
        let mapping = Self.mapping(fake)
        for index in 0...DocumentPortalMapping.maximumDocuments {
            _ = mapping.hostPath(of: Self.p("/run/user/1000/doc/d\(index)/f\(index)"), identity: nil)
        }
        #expect(mapping.cachedDocuments <= DocumentPortalMapping.maximumDocuments)
    }

    @Test func noPortalMeansNoMountPointAndNothingMapped() {
        let mapping = DocumentPortalMapping(portal: .none, logger: Logger(label: "test"))
        mapping.discoverMountPoint()
        #expect(mapping.mountPoint == nil)
        #expect(mapping.hostPath(of: Self.p("/run/user/1000/doc/a1b2/a.txt"), identity: nil) == nil)
    }

    @Test func spellingsComeBackToTheClient() {
        var spellings = DocumentPortalSpellings()
        spellings.remember(host: Self.p("/home/ann/a.txt"), portal: Self.p("/run/user/1000/doc/a1b2/a.txt"))
        spellings.remember(host: Self.p("/home/ann/photos"), portal: Self.p("/run/user/1000/doc/dir9/photos"))
        #expect(spellings.toClient(Self.p("/home/ann/a.txt")) == Self.p("/run/user/1000/doc/a1b2/a.txt"))
        #expect(
            spellings.toClient(Self.p("/home/ann/photos/2024/x.jpg"))
                == Self.p("/run/user/1000/doc/dir9/photos/2024/x.jpg")
        )
        #expect(spellings.toClient(Self.p("/home/ann/b.txt")) == Self.p("/home/ann/b.txt"))
        #expect(spellings.toClient(Self.p("/home/ann")) == Self.p("/home/ann"))
        // The effects a client gets name its portal paths.
        let grant = ArbiterEffect.grant(ClaimID(1), client: ClientID(1), paths: [Self.p("/home/ann/a.txt")])
        #expect(
            grant.mappingPaths(spellings.toClient)
                == .grant(ClaimID(1), client: ClientID(1), paths: [Self.p("/run/user/1000/doc/a1b2/a.txt")])
        )
    }
}
