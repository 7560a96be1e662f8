import FCCore
import FCFileSystemPolicy
import FCSystem
import Foundation

// Listing a watched directory's entries, and spelling their names as the arbiter's keys are. On the watcher's thread,
// as the rest of ``InotifyWatcher``'s state.

extension InotifyWatcher {
    /// The names of a directory's entries, sorted (none when it cannot be read).
    static func names(in path: String) -> [String] {
        var names: [String] = []
        try? FileSystemCalls.forEachEntry(ofDirectory: path) { name in
            names.append(name)
            return true
        }
        return names.sorted()
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
        path: String,
        names: [String],
        folds: Bool,
        into batch: inout [FileSystemEvent]
    ) {
        for name in names {
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: path + "/" + name, isDirectory: &isDirectory)
            let bytes = folds ? Self.folded(Array(name.utf8)) : Array(name.utf8)
            batch.append(.created(directory.appending(bytes), isDirectory: isDirectory.boolValue))
        }
    }
}
