public import Foundation

/// The contents of a document stored as a folder (a package): its files by relative path (`"Images/cover.png"`).
///
/// Linux's Foundation has no `FileWrapper`; a document whose ``CoordinatedDocument/storage`` is
/// ``CoordinatedDocument/Storage/folder`` reads and writes its contents as a value of this type. Only regular files
/// are kept: empty folders and symbolic links are not.
public struct DocumentFolder: Sendable, Equatable {
    /// The files, by path relative to the document's folder, `/`-separated, never starting with `/` or holding `..`.
    public var files: [String: Data]

    /// A folder with the given files.
    public init(files: [String: Data] = [:]) {
        self.files = files
    }

    /// Reads every regular file under `url`.
    ///
    /// - Throws: `CocoaError(.fileReadNoSuchFile)` when there is nothing at `url`, `CocoaError(.fileReadCorruptFile)`
    ///   when it is not a folder, or the error of the file system when a file cannot be read.
    public init(contentsOf url: URL) throws {
        var files: [String: Data] = [:]
        let base = url.standardizedFileURL.path
        var isFolder: ObjCBool = false
        // swift-corelibs-foundation enumerates a missing path as an empty one: a missing document is not an empty one.
        guard FileManager.default.fileExists(atPath: base, isDirectory: &isFolder) else {
            throw CocoaError(.fileReadNoSuchFile, userInfo: [NSURLErrorKey: url, NSFilePathErrorKey: base])
        }
        guard isFolder.boolValue else {
            throw CocoaError(
                .fileReadCorruptFile,
                userInfo: [
                    NSURLErrorKey: url,
                    NSLocalizedDescriptionKey: "\(base) is a file, and this document is stored as a folder.",
                ]
            )
        }
        guard let enumerator = FileManager.default.enumerator(atPath: base) else {
            throw CocoaError(.fileReadNoSuchFile, userInfo: [NSURLErrorKey: url])
        }
        while let relative = enumerator.nextObject() as? String {
            let path = base + "/" + relative
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
                (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) == nil
            else { continue }
            files[relative] = try Data(contentsOf: URL(fileURLWithPath: path))
        }
        self.files = files
    }

    /// Writes the files into the folder `url`, which must not exist yet.
    ///
    /// - Throws: `CocoaError(.fileWriteInvalidFileName)` for a path that leaves the folder, or the error of the file
    ///   system.
    public func write(to url: URL) throws {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
        for (relative, data) in files.sorted(by: { $0.key < $1.key }) {
            let parts = relative.split(separator: "/", omittingEmptySubsequences: false)
            guard !relative.hasPrefix("/"), !parts.isEmpty,
                !parts.contains(where: { $0.isEmpty || $0 == ".." || $0 == "." })
            else {
                throw CocoaError(
                    .fileWriteInvalidFileName,
                    userInfo: [NSLocalizedDescriptionKey: "The path \(relative) leaves the document's folder."]
                )
            }
            let file = url.appendingPathComponent(relative)
            try FileManager.default.createDirectory(
                at: file.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try data.write(to: file)
        }
    }
}
