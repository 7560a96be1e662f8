import FCSystem
import Foundation
import SystemPackage

/// Copying and flushing whole trees: the contents of a version added (``add(_:)``) or repaired.
extension VersionStore {
    /// Copies the file or tree at `source` to `destination` (reflinking files where possible), flushing every file
    /// and directory made.
    static func copyTree(from source: String, to destination: String) throws {
        let manager = FileManager.default
        let type = try manager.attributesOfItem(atPath: source)[.type] as? FileAttributeType
        switch type {
        case .typeDirectory?:
            try manager.createDirectory(atPath: destination, withIntermediateDirectories: false)
            for entry in try manager.contentsOfDirectory(atPath: source) {
                try copyTree(from: source + "/" + entry, to: destination + "/" + entry)
            }
            try FileSystemCalls.sync(FilePath(destination))
        case .typeSymbolicLink?:
            try manager.createSymbolicLink(
                atPath: destination,
                withDestinationPath: manager.destinationOfSymbolicLink(atPath: source)
            )
        default:
            try FileCloning.cloneOrCopy(from: FilePath(source), to: FilePath(destination))
        }
    }

    /// Flushes every file and directory of the tree at `path`.
    static func syncTree(_ path: String) throws {
        let manager = FileManager.default
        let type = try manager.attributesOfItem(atPath: path)[.type] as? FileAttributeType
        switch type {
        case .typeDirectory?:
            for entry in try manager.contentsOfDirectory(atPath: path) { try syncTree(path + "/" + entry) }
            try FileSystemCalls.sync(FilePath(path))
        case .typeRegular?:
            try FileSystemCalls.sync(FilePath(path))
        default:
            break
        }
    }
}
