import FCSystem
import Foundation
import SystemPackage
import ZIPFoundation

/// `.forUploading` (docs/SEMANTICS.md §8, issue 15): the accessor of a coordinated read with that option gets a
/// snapshot of the item, made under the read claim, which is then released so that writers need not wait for the
/// upload; the snapshot is removed when the accessor returns.
///
/// A file's snapshot is a copy (a reflink where the file system can) under the file's own name; a directory's or a
/// package's is a zip archive of it (ZIPFoundation), named `<name>.zip`, holding the directory itself. Symbolic links
/// inside a directory are archived as links. Snapshots live in a folder of their own in the temporary directory.
///
/// - Important: Thread-safe (no state); runs on the caller's thread.
enum UploadSnapshot {
    /// Runs a coordinated read of `url` through `read` (which runs its body under the claim and returns the error
    /// that kept it from running), makes the snapshot there, and hands it to `reader` once the claim is released.
    /// Returns the error of the read or of the snapshot; `reader` does not run then.
    static func coordinate(
        _ url: URL,
        read: (_ body: (URL) -> Void) -> (any Error)?,
        reader: (URL) -> Void
    ) -> (any Error)? {
        var made: Result<URL, any Error> = .failure(CocoaError(.fileReadUnknown))
        if let error = read({ granted in made = Result { try make(of: granted) } }) { return error }
        switch made {
        case .failure(let error):
            return error
        case .success(let snapshot):
            defer { remove(snapshot) }
            reader(snapshot)
            return nil
        }
    }

    /// Makes the snapshot of the item at `url` in a new folder of its own.
    static func make(of url: URL) throws -> URL {
        let manager = FileManager.default
        let folder = manager.temporaryDirectory.appendingPathComponent(
            "filecoord-upload-\(ProcessIdentity.processID)-\(UUID().uuidString)",
            isDirectory: true
        )
        try manager.createDirectory(
            at: folder,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700]
        )
        do {
            var isDirectory: ObjCBool = false
            guard manager.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
                throw CocoaError(
                    .fileReadNoSuchFile,
                    userInfo: [
                        NSURLErrorKey: url, NSLocalizedDescriptionKey: "There is no item at \(url.path) to upload.",
                    ]
                )
            }
            if isDirectory.boolValue {
                let archive = folder.appendingPathComponent(url.lastPathComponent + ".zip")
                try manager.zipItem(at: url, to: archive, shouldKeepParent: true)
                return archive
            }
            let copy = folder.appendingPathComponent(url.lastPathComponent)
            do {
                try FileCloning.cloneOrCopy(from: FilePath(url.path), to: FilePath(copy.path))
            } catch {
                throw CocoaError(
                    .fileReadUnknown,
                    userInfo: [
                        NSURLErrorKey: url,
                        NSLocalizedDescriptionKey: "No snapshot of \(url.path) could be made for uploading (\(error)).",
                    ]
                )
            }
            return copy
        } catch {
            try? manager.removeItem(at: folder)
            throw error
        }
    }

    /// Removes a snapshot and its folder.
    static func remove(_ snapshot: URL) {
        try? FileManager.default.removeItem(at: snapshot.deletingLastPathComponent())
    }
}
