// Issue 26 with the document portal: a sandboxed (Flatpak) app sees a file the user gave it through the portal's
// FUSE file system (`$XDG_RUNTIME_DIR/doc/<ID>/<name>`, or `doc/by-app/<APP>/<ID>/<name>` on the host), whose
// inode numbers are the portal's own; a host app sees it at its host path. The daemon asks the portal which host
// file a document exports, so the two coordinate on one file. Each test starts a real `xdg-document-portal` on a
// session bus of its own (`dbus-run-session`), with a runtime folder of its own. They need /dev/fuse (root in CI);
// CI (CI=true or FC_REQUIRE_PORTAL=1) runs them whatever the machine has, so that a CI run without the portal fails
// instead of skipping.

import FCTestSupport
import Foundation
import Testing

/// A document portal on a private session bus, its file system mounted in the test's folder.
///
/// - Important: Used from one test task at a time.
final class DocumentPortalSession {
    static let executable = "/usr/libexec/xdg-document-portal"

    /// The portal can run here, or CI requires it to (`CI=true`, or `FC_REQUIRE_PORTAL=1` as .ci/run sets).
    static let shouldRun =
        ProcessInfo.processInfo.environment["CI"] == "true"
        || ProcessInfo.processInfo.environment["FC_REQUIRE_PORTAL"] == "1"
        || (FileManager.default.isExecutableFile(atPath: executable)
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-run-session")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/gdbus")
            && FileManager.default.fileExists(atPath: "/dev/fuse"))

    let runtime: String
    /// Where the portal mounts its file system: `<runtime>/doc`.
    let mountPoint: String
    /// The session bus's address, for the daemon (which asks the portal) and for `gdbus`.
    let busAddress: String
    private let session: Process
    private let portalPID: Int32

    /// Starts the portal with `<env>/runtime` as its `XDG_RUNTIME_DIR` and waits until its file system is mounted.
    init(_ env: TestEnvironment) async throws {
        runtime = env.path("runtime")
        mountPoint = runtime + "/doc"
        try FileManager.default.createDirectory(
            atPath: runtime,
            withIntermediateDirectories: false,
            attributes: [.posixPermissions: 0o700]
        )
        let addressFile = runtime + "/bus-address"
        let pidFile = runtime + "/portal-pid"
        let session = Process()
        session.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-run-session")
        session.arguments = [
            "--", "/bin/sh", "-c",
            "echo \"$DBUS_SESSION_BUS_ADDRESS\" > \"$1.tmp\" && mv \"$1.tmp\" \"$1\" && echo $$ > \"$2\" && exec \"$3\"",
            "sh", addressFile, pidFile, Self.executable,
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = runtime
        environment["DBUS_SESSION_BUS_ADDRESS"] = nil
        session.environment = environment
        session.standardInput = FileHandle.nullDevice
        let log = FileHandle(forWritingAtPath: try env.file("portal.log", ""))
        session.standardOutput = log
        session.standardError = log
        try session.run()
        self.session = session
        try await eventually("the portal's bus address and pid") {
            FileManager.default.fileExists(atPath: addressFile) && FileManager.default.fileExists(atPath: pidFile)
        }
        busAddress = try String(contentsOfFile: addressFile, encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        portalPID =
            Int32(
                try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            ) ?? 0
        let mountPoint = mountPoint
        try await eventually("the portal's file system at \(mountPoint)") {
            let table = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
            return table.split(separator: "\n").contains { line in
                let fields = line.split(separator: " ")
                return fields.count > 4 && fields[4] == mountPoint && line.contains(" - fuse.portal ")
            }
        }
    }

    /// Runs `body` with a portal, and always stops it (unmounting its file system) before the test's folder goes.
    static func run(_ env: TestEnvironment, _ body: (DocumentPortalSession) async throws -> Void) async throws {
        let portal = try await DocumentPortalSession(env)
        do {
            try await body(portal)
        } catch {
            await portal.stop()
            throw error
        }
        await portal.stop()
    }

    /// Stops the portal, its bus and what the bus started (the permission store), and makes sure its mount is gone.
    /// SIGKILL, to the session's process group (Foundation starts each child in a group of its own; the bus and the
    /// services it starts stay in it): children of the test process inherit its blocked signals, SIGTERM among them,
    /// so neither a SIGTERM of ours nor dbus-run-session's own to its bus would end them.
    func stop() async {
        let group = session.processIdentifier
        if getpgid(group) == group { kill(-group, SIGKILL) } else { kill(group, SIGKILL) }
        if portalPID > 0 { kill(portalPID, SIGKILL) }
        try? await eventually("the portal's session to end") { !session.stillRuns }
        try? runToCompletion("/usr/bin/umount", ["-l", mountPoint])
    }

    /// `gdbus call` on the portal's bus; returns what it printed.
    private func call(_ method: String, _ arguments: [String], input file: String? = nil) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        // The file to export is passed as fd 3 (`h` arguments name an index in the message's fd list).
        process.arguments =
            [
                "-c", "file=$1; shift; exec \"$@\" 3< \"$file\"", "sh", file ?? "/dev/null", "/usr/bin/gdbus", "call",
                "--session", "--dest", "org.freedesktop.portal.Documents", "--object-path",
                "/org/freedesktop/portal/documents", "--method", "org.freedesktop.portal.Documents.\(method)",
            ] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = busAddress
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitForEnd()
        guard process.endStatus == 0 else {
            throw HarnessError(description: "gdbus \(method) \(arguments) failed: \(text)")
        }
        return text
    }

    /// Exports the host file at `path` through the portal (`Add`) and returns its document id.
    func export(_ path: String) throws -> String {
        let text = try call("Add", ["3", "true", "false"], input: path)
        // `('d4a504e4',)`
        let parts = text.split(separator: "'")
        guard parts.count >= 2 else { throw HarnessError(description: "unexpected Add reply: \(text)") }
        return String(parts[1])
    }

    /// Lets the app `app` read and write document `id`: it then shows under `by-app/<app>/<id>`.
    func grant(_ id: String, to app: String) throws {
        _ = try call("GrantPermissions", [id, app, "['read', 'write']"])
    }

    /// The document's file as a sandboxed app sees it on the host (`doc/<ID>/<name>`).
    func path(of id: String, _ name: String) -> String { "\(mountPoint)/\(id)/\(name)" }
}

@Suite(
    "A sandboxed app's document-portal path and the host path coordinate on one file (issue 26)",
    // One portal at a time: each session's bus, portal and permission store take inotify instances (128 per user by
    // default), which the suite's daemons and the watcher tests need too.
    .serialized
)
struct DocumentPortalEndToEndTests {
    static let disabledReason: Comment =
        "DID NOT RUN: needs /usr/libexec/xdg-document-portal (xdg-desktop-portal), dbus-run-session, gdbus, /dev/fuse"

    /// `docs/note.txt` with `v1`, exported through the portal; its host path and its portal path.
    static func export(
        _ env: TestEnvironment,
        _ portal: DocumentPortalSession
    ) throws -> (
        host: String, portal: String, id: String
    ) {
        try FileManager.default.createDirectory(atPath: env.path("docs"), withIntermediateDirectories: false)
        let host = try env.file("docs/note.txt", "v1")
        let id = try portal.export(host)
        let inPortal = portal.path(of: id, "note.txt")
        #expect(try String(contentsOfFile: inPortal, encoding: .utf8) == "v1")
        return (host, inPortal, id)
    }

    /// Runs `body` in a test environment with a portal of its own that exports `docs/note.txt` (``export(_:_:)``:
    /// the host path, the path through the portal, the document id) and a daemon that asks that portal.
    static func withExportedNote(
        _ body: (TestEnvironment, DocumentPortalSession, String, String, String) async throws -> Void
    ) async throws {
        try await TestEnvironment.run { env in
            try await DocumentPortalSession.run(env) { portal in
                let (host, inPortal, id) = try Self.export(env, portal)
                _ = try await env.startDaemon(environment: ["DBUS_SESSION_BUS_ADDRESS": portal.busAddress])
                try await body(env, portal, host, inPortal, id)
            }
        }
    }

    @Test(
        "A writer through the portal path waits for a host reader of the host path, and the reverse",
        .enabled(if: DocumentPortalSession.shouldRun, disabledReason)
    )
    func aWriteThroughThePortalWaitsForAHostReaderAndTheReverse() async throws {
        try await Self.withExportedNote { env, portal, host, inPortal, _ in
            let app = try await env.host("App")
            let sync = try await env.host("Sync")
            // The sandboxed app writes through the portal while the host's sync client wants to read.
            try await app.expectHeldWriteHoldsBack(
                inPortal,
                "v2",
                reader: sync,
                reading: host,
                "a read of the host path ran while the portal path was written"
            )
            // The host writes while the app wants to read through the portal.
            try await sync.expectHeldWriteHoldsBack(
                host,
                "v3",
                reader: app,
                reading: inPortal,
                "a read of the portal path ran while the host path was written"
            )
        }
    }

    @Test(
        "A presenter of the host path hears a write through the portal path; one of the portal path, a host write",
        .enabled(if: DocumentPortalSession.shouldRun, disabledReason)
    )
    func presentersOfEitherPathHearAWriteThroughTheOther() async throws {
        try await Self.withExportedNote { env, portal, host, inPortal, _ in
            let sync = try await env.host("Sync")
            let app = try await env.host("App")
            try await sync.present("File", host)
            try await sync.present("Folder", env.path("docs"))
            try await app.present("File", inPortal)

            try app.send("write \(inPortal) v2")
            try await app.waitFor("done write \(inPortal)")
            let once = ["relinquishToWriter", "didChange", "reacquire"]
            #expect(try await sync.settledPresenterEvents("File", count: 3) == once)
            #expect(try await sync.settledPresenterEvents("Folder", count: 1) == ["subitemDidChange \(host)"])
            #expect(try String(contentsOfFile: host, encoding: .utf8) == "v2")

            // The host writes: the app's presenter hears it (its own write's coordinator was another, so it heard
            // that one too).
            try sync.send("write \(host) v3")
            try await sync.waitFor("done write \(host)")
            #expect(try await app.settledPresenterEvents("File", count: 6) == once + once)
            #expect(try String(contentsOfFile: inPortal, encoding: .utf8) == "v3")
        }
    }

    @Test(
        "A reader through the portal's per-app view waits for a host writer; its presenter hears the host's write",
        .enabled(if: DocumentPortalSession.shouldRun, disabledReason)
    )
    func theByAppViewMapsToTheHostFileToo() async throws {
        try await Self.withExportedNote { env, portal, host, _, id in
            try portal.grant(id, to: "org.example.Editor")
            let byApp = "\(portal.mountPoint)/by-app/org.example.Editor/\(id)/note.txt"
            let app = try await env.host("App")
            let sync = try await env.host("Sync")
            try await app.present("File", byApp)
            try await sync.expectHeldWriteHoldsBack(
                host,
                "v2",
                reader: app,
                reading: byApp,
                "a read of the per-app portal path ran while the host path was written"
            )
            #expect(try String(contentsOfFile: byApp, encoding: .utf8) == "v2")
            let events = try await app.settledPresenterEvents("File", count: 6)
            // Asked by the host's writer, then (its own coordinator being another) by its own read.
            let expected = [
                "relinquishToWriter", "didChange", "reacquire", "relinquishToReader", "save", "reacquire",
            ]
            #expect(events == expected, "\(events)")
        }
    }

    @Test(
        "fcdump shows the portal path as another name of the host file",
        .enabled(if: DocumentPortalSession.shouldRun, disabledReason)
    )
    func fcdumpShowsThePortalPathAsAnotherName() async throws {
        try await Self.withExportedNote { env, portal, host, inPortal, _ in
            let sync = try await env.host("Sync")
            let app = try await env.host("App")
            try await sync.present("File", host)
            try await app.present("File", inPortal)
            let text = try await env.runTool("fcdump", [])
            #expect(text.output.contains("also named \(inPortal)"), "\(text.output)")
            let json = try await env.runTool("fcdump", ["--json"])
            let dump = try #require(
                try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
            )
            let presenters = try #require(dump["presenters"] as? [[String: Any]])
            // Both presenters stand at the host path; each shows the portal path as its other name.
            #expect(presenters.compactMap { $0["path"] as? String } == [host, host], "\(presenters)")
            #expect(presenters.compactMap { $0["otherNames"] as? [String] } == [[inPortal], [inPortal]])
        }
    }

    @Test(
        "A process that sees the portal as a Flatpak app does (its by-app folder at the portal's path) coordinates",
        .enabled(
            if: DocumentPortalSession.shouldRun && MountNamespaces.shouldRun,
            "DID NOT RUN: needs the document portal and root for a mount namespace of its own"
        )
    )
    func aSandboxedProcessCoordinatesWithTheHost() async throws {
        try await Self.withExportedNote { env, portal, host, _, id in
            try portal.grant(id, to: "org.example.Editor")
            let sync = try await env.host("Sync")
            // As Flatpak mounts it: the app's folder of the portal at the portal's own path, in the app's own
            // mount namespace, and the host's folder out of its sight (an empty tmpfs over it). The app's path
            // is `<portal>/<ID>/note.txt`, which only the daemon, through the app's mount table and then the
            // portal, can take to the host file; and what the daemon sends back must come in that spelling, since
            // the host path shows the app nothing.
            let sandboxed = try await env.host(
                "App",
                wrapper: [
                    "/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                    "mount --bind \"$1\" \"$2\" && mount -t tmpfs -o size=1m tmpfs \"$3\" || exit 97; shift 3; "
                        + "exec \"$@\"",
                    "sh", "\(portal.mountPoint)/by-app/org.example.Editor", portal.mountPoint, env.path("docs"),
                ]
            )
            let inSandbox = portal.path(of: id, "note.txt")
            try await sandboxed.present("File", inSandbox)
            try await sync.expectHeldWriteHoldsBack(
                host,
                "v2",
                reader: sandboxed,
                reading: inSandbox,
                "the sandboxed read ran while the host wrote the file"
            )
            try await sandboxed.expectHeldWriteHoldsBack(
                inSandbox,
                "v3",
                reader: sync,
                reading: host,
                "the host's read ran while the sandboxed process wrote the file"
            )
            let events = try await sandboxed.settledPresenterEvents("File", count: 6)
            let expected = [
                "relinquishToWriter", "didChange", "reacquire", "relinquishToReader", "save", "reacquire",
            ]
            #expect(Array(events.prefix(6)) == expected, "\(events)")
        }
    }

    /// The leases `fcdump --json` shows now.
    static func leases(_ env: TestEnvironment) async throws -> [[String: Any]] {
        let json = try await env.runTool("fcdump", ["--json"])
        let dump = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        return dump["leases"] as? [[String: Any]] ?? []
    }

    @Test(
        "With leases on, an app's claims through the portal go on, earn no lease, and still wait for the host's",
        .enabled(if: DocumentPortalSession.shouldRun, disabledReason)
    )
    func withLeasesOnPortalClaimsNeitherLoopNorEscape() async throws {
        try await Self.withExportedNote { env, portal, host, inPortal, _ in
            let app = try await env.host("App", environment: LeaseEndToEndTests.leasing)
            let sync = try await env.host("Sync")
            // Each claim is keyed as the host file: the folder it is in would be leased to the app, which spells
            // the file otherwise and so could not decide it there (the daemon would hand it back, forever).
            for round in 1...3 {
                try app.send("write \(inPortal) r\(round)")
                try await app.waitFor("done write \(inPortal)", count: round)
            }
            try await app.barrier()
            #expect(try await Self.leases(env).isEmpty, "a lease was granted for claims through the portal")
            try await sync.expectHeldWriteHoldsBack(
                host,
                "v2",
                reader: app,
                reading: inPortal,
                "the app's read through the portal ran while the host wrote the file"
            )
        }
    }

    @Test(
        "No lease on a document's folder in the portal: a write there by the app still waits for the host's reader",
        .enabled(if: DocumentPortalSession.shouldRun, disabledReason)
    )
    func noLeaseInsideThePortal() async throws {
        try await Self.withExportedNote { env, portal, host, inPortal, id in
            let app = try await env.host("App", environment: LeaseEndToEndTests.leasing)
            let sync = try await env.host("Sync")
            // An editor's temporary file in the document's folder stays by path; a lease on that folder would
            // let the app decide its writes of the document there, unseen by the host.
            let temporary = "\(portal.mountPoint)/\(id)/.note.txt.tmp"
            try app.send("write \(temporary) draft")
            try await app.waitFor("done write \(temporary)")
            try await app.barrier()
            let leases = try await Self.leases(env)
            #expect(
                !leases.contains { ($0["subtree"] as? String)?.hasPrefix(portal.mountPoint) == true },
                "\(leases)"
            )
            try await app.expectHeldWriteHoldsBack(
                inPortal,
                "v2",
                reader: sync,
                reading: host,
                "the host's read ran while the app wrote the document inside a lease"
            )
        }
    }
}
