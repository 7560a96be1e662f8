import Dispatch
import FileCoordination
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

// Canonical item identity on a real case-insensitive file system (issue 14, SEMANTICS.md §4): an exFAT image made
// with `mkfs.exfat`, attached with `losetup` and mounted with `mount.exfat-fuse` (Debian exfatprogs and exfat-fuse,
// scripts/install-deps.sh). This needs root, /dev/fuse and a loop device: without them every test here is reported
// as skipped with the reason (and the reason is printed), never passed.

/// A freshly made exFAT volume, mounted on a unique temporary directory. ``remove()`` unmounts, detaches and deletes
/// in every case; a failure while making it undoes what was done.
final class ExFATVolume {
    let root: URL
    private let base: URL
    private var loopDevice: String?
    private var mounted = false

    init() throws {
        base = URL(fileURLWithPath: NSTemporaryDirectory()).resolvingSymlinksInPath()
            .appendingPathComponent("fc-exfat-\(UUID().uuidString)", isDirectory: true)
        root = base.appendingPathComponent("mnt", isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            let image = base.appendingPathComponent("image").path
            guard FileManager.default.createFile(atPath: image, contents: nil),
                truncate(image, 16 << 20) == 0
            else { throw Failure("cannot make the image file \(image)") }
            try Self.run("mkfs.exfat", [image])
            loopDevice = try Self.run("losetup", ["--find", "--show", image])
            try Self.run("mount.exfat-fuse", [loopDevice!, root.path])
            mounted = true
        } catch {
            remove()
            throw error
        }
    }

    func remove() {
        if mounted { _ = try? Self.run("umount", [root.path]) }
        mounted = false
        if let loopDevice { _ = try? Self.run("losetup", ["-d", loopDevice]) }
        loopDevice = nil
        try? FileManager.default.removeItem(at: base)
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Runs a tool found on the PATH (or in /sbin, /usr/sbin) and returns its standard output, trimmed.
    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) throws -> String {
        let directories =
            (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
            + ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        guard let path = directories.map({ $0 + "/" + tool }).first(where: { access($0, X_OK) == 0 }) else {
            throw Failure("\(tool) is not installed (Debian packages exfatprogs and exfat-fuse)")
        }
        // Output goes to a file, not a pipe: mount.exfat-fuse leaves a FUSE daemon behind that inherits it, and a
        // pipe would never reach its end.
        let log = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
            "fc-exfat-\(UUID().uuidString).log"
        )
        guard FileManager.default.createFile(atPath: log.path, contents: nil) else {
            throw Failure("cannot make \(log.path)")
        }
        defer { try? FileManager.default.removeItem(at: log) }
        // posix_spawn and waitpid rather than Foundation's Process, whose wait never ended once the FUSE daemon
        // forked off by mount.exfat-fuse outlived its parent.
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log.path, O_WRONLY | O_APPEND, 0)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard spawned == 0 else { throw Failure("cannot start \(tool): error \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let exitCode = (status >> 8) & 0xFF
        let text = ((try? String(contentsOf: log, encoding: .utf8)) ?? "").trimmingCharacters(
            in: .whitespacesAndNewlines
        )
        guard status & 0x7F == 0, exitCode == 0 else {
            throw Failure("\(tool) \(arguments.joined(separator: " ")) failed (status \(status)): \(text)")
        }
        return text
    }

    /// `nil` when a volume can be made here, else why not. Tried once per process.
    static let unavailableReason: String? = {
        var reason: String?
        if getuid() != 0 {
            reason = "not root"
        } else if access("/dev/fuse", R_OK | W_OK) != 0 {
            reason = "no /dev/fuse"
        } else {
            do {
                try ExFATVolume().remove()
            } catch {
                reason = "\(error)"
            }
        }
        if let reason {
            print(
                "CaseInsensitiveFileSystemTests DID NOT RUN: cannot mount an exFAT image here (\(reason)). "
                    + "They need root, /dev/fuse, a loop device, exfatprogs and exfat-fuse."
            )
        }
        return reason
    }()

    static var isAvailable: Bool { unavailableReason == nil }
}

@Suite(
    .enabled(
        if: ExFATVolume.isAvailable,
        "DID NOT RUN: needs an exFAT image mounted through FUSE (root, /dev/fuse, a loop device, exfatprogs, exfat-fuse)"
    )
)
struct CaseInsensitiveFileSystemTests {
    @Test func aPresenterAndAWriterSpellingTheFileInDifferentCasesMeet() throws {
        let volume = try ExFATVolume()
        defer { volume.remove() }
        let file = volume.root.appendingPathComponent("Note.txt")
        try Data("a".utf8).write(to: file)
        let shouted = volume.root.appendingPathComponent("NOTE.TXT")
        let presenter = RecordingPresenter(url: file)
        var handed: URL?
        withPresenters([presenter]) {
            #expect(CanonicalizationTests.write(shouted) { handed = $0 } == nil)
            settle(presenter)
        }
        #expect(handed == shouted)  // the writer's own spelling
        #expect(presenter.events == ["relinquishToWriter", "didChange", "reacquire"])
        #expect(presenter.presentedItemURL == file)
    }

    @Test func writersOfTheSameNewFileInDifferentCasesExcludeEachOther() throws {
        let volume = try ExFATVolume()
        defer { volume.remove() }
        // An entry with a cased name lets the probe decide the directory at once. In a directory with none (an empty
        // volume's root) a FUSE file system cannot be probed, and the first writer's key may be taken before the
        // folder is known to be case-insensitive: a known gap (docs/ARCHITECTURE.md §8.3), seen as a flaky failure
        // of this test when the volume was empty.
        try Data("x".utf8).write(to: volume.root.appendingPathComponent("Existing.txt"))
        let lower = volume.root.appendingPathComponent("new.txt")
        let upper = volume.root.appendingPathComponent("NEW.txt")
        let timeline = WaitingTests.checkWaits(
            first: { accessor in _ = CanonicalizationTests.write(lower) { _ in accessor() } },
            second: { accessor in _ = CanonicalizationTests.write(upper) { _ in accessor() } }
        )
        #expect(timeline == ["first in", "first out", "second"])
    }

    @Test func aFolderPresenterHearsOfASubitemSpelledWithItsOwnURL() throws {
        let volume = try ExFATVolume()
        defer { volume.remove() }
        let folder = volume.root.appendingPathComponent("Docs", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        let presenter = RecordingPresenter(url: folder)
        let written = volume.root.appendingPathComponent("DOCS/New.TXT")
        withPresenters([presenter]) {
            #expect(CanonicalizationTests.write(written) { try? Data("n".utf8).write(to: $0) } == nil)
            settle(presenter)
        }
        // The folder as its presenter spells it, the new name as the directory lists it.
        let heard = volume.root.path + "/Docs/New.TXT"
        #expect(presenter.events == ["subitemDidChange(\(heard))", "subitemDidAppear(\(heard))"])
    }

    @Test func aCaseOnlyRenameHandsBothURLsSucceedsAndTellsTheFileAndFolderPresenters() throws {
        let volume = try ExFATVolume()
        defer { volume.remove() }
        let folder = volume.root.appendingPathComponent("Folder", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        let old = folder.appendingPathComponent("my text")
        let new = folder.appendingPathComponent("My Text")
        try Data("t".utf8).write(to: old)
        let filePresenter = RecordingPresenter(url: old)
        let folderPresenter = RecordingPresenter(url: folder)
        var urls: [URL] = []
        var renameResult: Int32 = -1
        var error: NSError?
        withPresenters([filePresenter, folderPresenter]) {
            let coordinator = NSFileCoordinator()
            coordinator.coordinate(
                writingItemAt: old,
                options: .forMoving,
                writingItemAt: new,
                options: .forReplacing,
                error: &error
            ) { from, to in
                urls = [from, to]
                renameResult = rename(from.path, to.path)
                if renameResult == 0 { coordinator.item(at: from, didMoveTo: to) }
            }
            settle(filePresenter, folderPresenter)
        }
        #expect(error == nil)
        #expect(urls == [old, new])
        #expect(renameResult == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["My Text"])
        #expect(filePresenter.events.contains("didMove(\(new.path))"))
        #expect(filePresenter.presentedItemURL == new)
        #expect(folderPresenter.events.contains("subitemDidMove(\(old.path) -> \(new.path))"))
        // Every spelling a presenter heard is one this process used: the old name before the rename (the folder is
        // asked to accommodate the deletion of the destination, which is the file itself), the new one after; never
        // a folded one (`folder`).
        #expect(
            folderPresenter.events == [
                "accommodateSubitemDeletion(\(old.path))", "subitemDidMove(\(old.path) -> \(new.path))",
                "subitemDidChange(\(new.path))",
            ]
        )
        for event in filePresenter.events + folderPresenter.events {
            #expect(!event.contains("/folder/"), "\(event)")
        }
    }
}
