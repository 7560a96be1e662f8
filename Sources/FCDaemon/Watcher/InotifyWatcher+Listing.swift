import FCCore
import FCFileSystemPolicy
import FCSystem
import Foundation

// Listing a watched directory's entries, spelling their names as the arbiter's keys are, and reading the kernel's
// limits. On the watcher's thread, as the rest of ``InotifyWatcher``'s state.

extension InotifyWatcher {
    /// The names of a directory's entries as their bytes, in byte order (none when it cannot be read).
    static func names(in path: [UInt8]) -> [[UInt8]] {
        var names: [[UInt8]] = []
        try? FileSystemCalls.forEachEntry(ofDirectoryBytes: path) { name in
            names.append(Array(name))
            return true
        }
        return names.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// A name case-folded as the client folds names in case-insensitive directories (bytes that are not UTF-8 kept).
    static func folded(_ name: [UInt8]) -> [UInt8] {
        guard let text = String(validating: name, as: UTF8.self) else { return name }
        return Array(CaseFolding.fold(text).utf8)
    }

    /// Reports what a directory holds (`names`, sorted, listed from `path`) as created: it was made before its watch
    /// existed.
    func scan(
        _ directory: ItemPath,
        path: [UInt8],
        names: [[UInt8]],
        folds: Bool,
        into batch: inout [FileSystemEvent]
    ) {
        for name in names {
            let entry = try? FileSystemCalls.status(pathBytes: path + [Self.slash] + name, followingLinks: true)
            let bytes = folds ? Self.folded(name) : name
            batch.append(.created(directory.appending(bytes), isDirectory: entry?.kind == .directory))
        }
    }

    /// The kernel's inotify limit `name` (`/proc/sys/fs/inotify/`), for the status.
    static func readLimit(_ name: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/sys/fs/inotify/\(name)", encoding: .utf8) else {
            return nil
        }
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
