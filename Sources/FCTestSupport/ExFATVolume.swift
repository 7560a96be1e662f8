import FCSystem
public import Foundation

// An exFAT volume for the tests of canonical identity on a real case-insensitive file system (issue 14), shared by
// FileCoordinationTests and EndToEndTests: an image made with `mkfs.exfat`, attached with `losetup` and mounted with
// `mount.exfat-fuse` (Debian exfatprogs and exfat-fuse, scripts/install-deps.sh). It needs root, /dev/fuse and a
// loop device; without them, tests report themselves skipped with the reason (printed), never passed, except where
// they are required (`isRequired`: CI), where they fail.

/// A freshly made exFAT volume, mounted on a unique temporary directory. ``remove()`` unmounts, detaches and deletes
/// in every case; a failure while making it undoes what was done.
// @unchecked: `loopDevice` and `mounted` change only in `init` and `remove()`, which a test calls once, at its end.
public final class ExFATVolume: @unchecked Sendable {
    /// The mount point: the volume's root directory.
    public let root: URL
    private let base: URL
    private var loopDevice: String?
    private var mounted = false

    /// Makes, attaches and mounts a new 16 MiB volume, at `mountPoint` (an existing folder, which it covers until
    /// ``remove()``) or at a folder of its own.
    public init(at mountPoint: URL? = nil) throws {
        base = URL(fileURLWithPath: NSTemporaryDirectory()).resolvingSymlinksInPath()
            .appendingPathComponent("fc-exfat-\(UUID().uuidString)", isDirectory: true)
        root = mountPoint ?? base.appendingPathComponent("mnt", isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
            if mountPoint == nil {
                try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            }
            let image = base.appendingPathComponent("image").path
            guard FileManager.default.createFile(atPath: image, contents: nil),
                (try? FileSystemCalls.setLength(image, to: 16 << 20)) != nil
            else { throw Failure("cannot make the image file \(image)") }
            try Self.run("mkfs.exfat", [image])
            loopDevice = try Self.run("losetup", ["--find", "--show", image])
            // Over a folder that holds something: FUSE refuses that unless told.
            let options = mountPoint == nil ? [] : ["-o", "nonempty"]
            try Self.run("mount.exfat-fuse", options + [loopDevice!, root.path])
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
        let termination: ChildProcess.Termination
        do {
            termination = try ChildProcess.run([path] + arguments, outputPath: log.path)
        } catch {
            throw Failure("cannot run \(tool): \(error)")
        }
        let text = ((try? String(contentsOf: log, encoding: .utf8)) ?? "").trimmingCharacters(
            in: .whitespacesAndNewlines
        )
        guard termination == .exited(0) else {
            throw Failure("\(tool) \(arguments.joined(separator: " ")) failed (\(termination)): \(text)")
        }
        return text
    }

    /// Where `tool` is installed (the PATH, then /usr/sbin, /sbin, /usr/bin, /bin), or `nil`.
    public static func path(of tool: String) -> String? {
        let directories =
            (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
            + ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        return directories.map({ $0 + "/" + tool }).first(where: FileSystemCalls.isExecutable)
    }

    /// `nil` when a volume can be made here, else why not. Tried once per process.
    public static let unavailableReason: String? = {
        var reason: String?
        if ProcessIdentity.userID != 0 {
            reason = "not root"
        } else if !FileSystemCalls.isReadableAndWritable("/dev/fuse") {
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

    /// `true` where the tests that need a volume must run: in CI (`CI=true`, or `FC_REQUIRE_EXFAT=1`, which
    /// `.ci/run` sets). There a volume that cannot be made fails those tests, naming why, instead of skipping them.
    public static var isRequired: Bool {
        let environment = ProcessInfo.processInfo.environment
        return environment["FC_REQUIRE_EXFAT"] == "1" || environment["CI"] == "true"
    }

    /// Whether the tests that need a volume run: where one is required (they fail if it cannot be made) or can be
    /// made. Elsewhere they are reported as skipped, with the reason printed.
    public static var shouldRun: Bool { isRequired || isAvailable }
}
