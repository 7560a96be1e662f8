public import Foundation

#if canImport(Glibc)
import Glibc
#endif

// An exFAT volume for the tests of canonical identity on a real case-insensitive file system (issue 14), shared by
// FileCoordinationTests and EndToEndTests: an image made with `mkfs.exfat`, attached with `losetup` and mounted with
// `mount.exfat-fuse` (Debian exfatprogs and exfat-fuse, scripts/install-deps.sh). It needs root, /dev/fuse and a
// loop device; without them, tests report themselves skipped with the reason (printed), never passed.

/// A freshly made exFAT volume, mounted on a unique temporary directory. ``remove()`` unmounts, detaches and deletes
/// in every case; a failure while making it undoes what was done.
// @unchecked: `loopDevice` and `mounted` change only in `init` and `remove()`, which a test calls once, at its end.
public final class ExFATVolume: @unchecked Sendable {
    /// The mount point: the volume's root directory.
    public let root: URL
    private let base: URL
    private var loopDevice: String?
    private var mounted = false

    /// Makes, attaches and mounts a new 16 MiB volume.
    public init() throws {
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

    /// Unmounts, detaches and deletes the volume (idempotent).
    public func remove() {
        if mounted { _ = try? Self.run("umount", [root.path]) }
        mounted = false
        if let loopDevice { _ = try? Self.run("losetup", ["-d", loopDevice]) }
        loopDevice = nil
        try? FileManager.default.removeItem(at: base)
    }

    /// Why a volume could not be made.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong.
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// Runs a tool found on the PATH (or in /sbin, /usr/sbin) and returns its standard output, trimmed.
    @discardableResult
    public static func run(_ tool: String, _ arguments: [String]) throws -> String {
        guard let path = path(of: tool) else {
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

    /// Where `tool` is installed (the PATH, then /usr/sbin, /sbin, /usr/bin, /bin), or `nil`.
    public static func path(of tool: String) -> String? {
        let directories =
            (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
            + ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        return directories.map({ $0 + "/" + tool }).first(where: { access($0, X_OK) == 0 })
    }

    /// `nil` when a volume can be made here, else why not. Tried once per process.
    public static let unavailableReason: String? = {
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

    /// Whether a volume can be made here.
    public static var isAvailable: Bool { unavailableReason == nil }
}
