// Issue 26 across mount namespaces: a folder bind-mounted at a second path, as containers, systemd units and build
// sandboxes do. Each test makes its bind mounts in private mount namespaces of its own (`unshare --mount`), so
// nothing is mounted where other tests or the machine could see it. These tests need root (CI runs as root); CI
// (CI=true) runs them whatever the user is, so that a CI run without the ability fails instead of skipping.

import FCSystem
import FCTestSupport
import Foundation
import Testing

/// Hosts in mount namespaces of their own.
enum MountNamespaces {
    /// Root can make mount namespaces and bind mounts; CI must be able to.
    static let shouldRun = ProcessIdentity.effectiveUserID == 0 || ProcessInfo.processInfo.environment["CI"] == "true"

    /// Runs a host in a new private mount namespace where `source` is bind-mounted at `target` (exit 97, so no
    /// `ready` line and a failed test, when it cannot be).
    static func bound(_ source: String, at target: String) -> [String] {
        [
            "/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
            "mount --bind \"$1\" \"$2\" || exit 97; shift 2; exec \"$@\"", "sh", source, target,
        ]
    }

    /// Runs a host in a new private mount namespace where `source` is bind-mounted at `target` and then `hidden`
    /// (the mount that held `source`) is unmounted: the namespace sees `source`'s file system only at `target`, as a
    /// container sees a folder bind-mounted into it.
    static func bound(_ source: String, at target: String, hiding hidden: String) -> [String] {
        [
            "/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
            "mount --bind \"$1\" \"$2\" && umount -l \"$3\" || exit 97; shift 3; exec \"$@\"", "sh", source,
            target, hidden,
        ]
    }

    /// Runs `body` with a file system of the test's own (a tmpfs at `fs`, unmounted when `body` returns) holding an
    /// empty folder `docs`, and `view`, an empty folder outside it: a contained process can be left seeing it at
    /// `view` alone (``bound(_:at:hiding:)``), its own mount table then naming no other path for it, so that only the
    /// daemon, reading that table, can map its paths to the host's.
    static func withOwnFileSystem(
        _ env: TestEnvironment,
        _ body: (_ fs: String, _ docs: String, _ view: String) async throws -> Void
    ) async throws {
        let fs = env.path("fs")
        let view = env.path("view")
        try FileManager.default.createDirectory(atPath: fs, withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: view, withIntermediateDirectories: false)
        try runToCompletion("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", fs])
        defer { try? runToCompletion("/usr/bin/umount", ["-l", fs]) }
        let docs = fs + "/docs"
        try FileManager.default.createDirectory(atPath: docs, withIntermediateDirectories: false)
        try await body(fs, docs, view)
    }

    /// Runs a host in the mount namespace of the process `pid`.
    static func joining(_ pid: Int32) -> [String] {
        ["/usr/bin/nsenter", "--target", "\(pid)", "--mount", "--"]
    }
}

@Suite("One folder at two paths through a bind mount, across processes and mount namespaces (issue 26)")
struct MountNamespaceEndToEndTests {
    /// `docs/doc.txt` with `v1`, and `view`, an empty folder to mount `docs` on.
    static func makeFolders(_ env: TestEnvironment) throws -> (docs: String, view: String) {
        let docs = env.path("docs")
        let view = env.path("view")
        try FileManager.default.createDirectory(atPath: docs, withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: view, withIntermediateDirectories: false)
        try env.file("docs/doc.txt", "v1")
        return (docs, view)
    }

    @Test(
        "In one private namespace, a reader of the folder's path waits for a writer through its bind mount",
        .enabled(if: MountNamespaces.shouldRun, "DID NOT RUN: bind mounts in a private mount namespace need root")
    )
    func aReaderOfTheOriginalPathWaitsForAWriterThroughTheBindMount() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let (docs, view) = try Self.makeFolders(env)
            let writer = try await env.host("W", wrapper: MountNamespaces.bound(docs, at: view))
            let reader = try await env.host("R", wrapper: MountNamespaces.joining(writer.pid))
            // The mount is there for both, and for neither outside.
            try reader.send("read \(view)/doc.txt")
            try await reader.waitFor("done read \(view)/doc.txt v1")
            #expect(try FileManager.default.contentsOfDirectory(atPath: view).isEmpty)

            try await reader.present("File", docs + "/doc.txt")
            try await writer.expectHeldWriteHoldsBack(
                "\(view)/doc.txt",
                "v2",
                reader: reader,
                reading: "\(docs)/doc.txt",
                "a read of docs/doc.txt ran while view/doc.txt was written"
            )
            // Asked by the writer through the mount, then (its own coordinator being another) by its own read.
            let events = try await reader.settledPresenterEvents("File", count: 6)
            let expected = ["relinquishToWriter", "didChange", "reacquire", "relinquishToReader", "save", "reacquire"]
            #expect(events == expected, "\(events)")
        }
    }

    @Test(
        "In one private namespace, a folder and a file not yet created meet under the folder's path and its mount",
        .enabled(if: MountNamespaces.shouldRun, "DID NOT RUN: bind mounts in a private mount namespace need root")
    )
    func aNewFileAndItsFolderMeetUnderBothPaths() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let (docs, view) = try Self.makeFolders(env)
            let first = try await env.host("W", wrapper: MountNamespaces.bound(docs, at: view))
            let second = try await env.host("R", wrapper: MountNamespaces.joining(first.pid))
            try await second.present("Folder", docs)
            // A file that does not exist yet has no identity: the two paths meet because the mount is mapped.
            try await first.expectHeldWriteHoldsBackWrite(
                "\(view)/new.txt",
                "first",
                writer: second,
                writing: "\(docs)/new.txt",
                "second",
                "a writer of docs/new.txt ran while view/new.txt was written"
            )
            #expect(try String(contentsOfFile: docs + "/new.txt", encoding: .utf8) == "second")
            // The folder's presenter heard the creation through the mount (a written subitem that appeared, as for any
            // writer that creates a file), then the second write, each spelled under its own path.
            let events = try await second.settledPresenterEvents("Folder", count: 3)
            let created = docs + "/new.txt"
            #expect(
                events == [
                    "subitemDidChange \(created)", "subitemDidAppear \(created)", "subitemDidChange \(created)",
                ],
                "\(events)"
            )
        }
    }

    @Test(
        "A process that sees a folder only through its bind mount coordinates on the folder and on new files",
        .enabled(if: MountNamespaces.shouldRun, "DID NOT RUN: mounts and a mount namespace of its own need root")
    )
    func theDaemonMapsAClientsPathsThroughItsMountNamespace() async throws {
        try await TestEnvironment.run { env in
            try await MountNamespaces.withOwnFileSystem(env) { fs, docs, view in
                _ = try await env.startDaemon()
                let host = try await env.host("H")
                let contained = try await env.host("C", wrapper: MountNamespaces.bound(docs, at: view, hiding: fs))
                try await host.present("Folder", docs)
                try await contained.present("Folder", view)

                // A file neither has created yet: no identity, the paths alone must meet.
                try await contained.expectHeldWriteHoldsBackWrite(
                    "\(view)/new.txt",
                    "first",
                    writer: host,
                    writing: "\(docs)/new.txt",
                    "second",
                    "the host's writer of docs/new.txt ran while the contained process wrote view/new.txt"
                )
                #expect(try String(contentsOfFile: docs + "/new.txt", encoding: .utf8) == "second")
                // Each folder's presenter hears the file in its own process's spelling.
                let hostEvents = try await host.settledPresenterEvents("Folder", count: 3)
                #expect(hostEvents.contains("subitemDidAppear \(docs)/new.txt"), "\(hostEvents)")
                let containedEvents = try await contained.settledPresenterEvents("Folder", count: 3)
                #expect(containedEvents.contains("subitemDidChange \(view)/new.txt"), "\(containedEvents)")
                #expect(!containedEvents.contains { $0.contains(fs) }, "\(containedEvents)")
            }
        }
    }

    @Test(
        "A process in another mount namespace, seeing the folder at another path, coordinates with the host's",
        .enabled(if: MountNamespaces.shouldRun, "DID NOT RUN: a mount namespace of its own needs root")
    )
    func aProcessInAnotherNamespaceCoordinatesWithTheHost() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let (docs, view) = try Self.makeFolders(env)
            let host = try await env.host("H")
            let contained = try await env.host("C", wrapper: MountNamespaces.bound(docs, at: view))
            try await host.present("File", docs + "/doc.txt")
            try await contained.present("File", view + "/doc.txt")

            // The contained process writes through its path: the host's presenter is asked and hears it.
            try contained.send("write \(view)/doc.txt v2")
            try await contained.waitFor("done write \(view)/doc.txt")
            let once = ["relinquishToWriter", "didChange", "reacquire"]
            #expect(try await host.settledPresenterEvents("File", count: 3) == once)
            #expect(try String(contentsOfFile: docs + "/doc.txt", encoding: .utf8) == "v2")

            // The host writes through its path: the contained process's presenter hears it, and a write of the
            // contained process waits for the host's.
            try host.send("write \(docs)/doc.txt v3 hold")
            try await host.waitFor("holding write \(docs)/doc.txt")
            // (Its own process's write asked it first: the write's coordinator was not made with it.)
            let asked = try await contained.settledPresenterEvents("File", count: 4)
            #expect(asked == once + ["relinquishToWriter"], "\(asked)")
            try contained.send("write \(view)/doc.txt v4")
            #expect(
                try await contained.staysWithout("granted write \(view)/doc.txt", count: 2),
                "the contained process's write ran while the host held the file"
            )
            try host.send("release")
            try await host.waitFor("done write \(docs)/doc.txt")
            try await contained.waitFor("done write \(view)/doc.txt", count: 2)
            #expect(try String(contentsOfFile: docs + "/doc.txt", encoding: .utf8) == "v4")
            let heard = try await contained.settledPresenterEvents("File", count: 9)
            #expect(heard == once + once + once, "\(heard)")
        }
    }
}
