import FileCoordination
import Foundation
import Testing
import ZIPFoundation

/// `.forUploading` (issue 15): the accessor gets a snapshot made under the read claim, the claim is released
/// before the accessor runs, and the snapshot is gone when it returns.
@Suite struct UploadingTests {
    @Test func aFileIsSnapshottedAndWritersNeedNotWaitForTheUpload() throws {
        let directory = try TempDirectory()
        defer { directory.remove() }
        let url = try directory.file("report.txt", "as uploaded")
        var snapshot: URL?
        var error: NSError?
        NSFileCoordinator().coordinate(readingItemAt: url, options: .forUploading, error: &error) { uploadURL in
            snapshot = uploadURL
            #expect(uploadURL != url)
            #expect(uploadURL.lastPathComponent == "report.txt")
            // A writer proceeds while the upload still runs.
            let writer = spawn {
                var writeError: NSError?
                NSFileCoordinator().coordinate(writingItemAt: url, options: [], error: &writeError) { writeURL in
                    try? Data("changed meanwhile".utf8).writeClosingOnExec(to: writeURL)
                }
                #expect(writeError == nil)
            }
            #expect(writer.wait(seconds: patience), "the write waited for the uploading accessor")
            #expect((try? String(contentsOf: uploadURL, encoding: .utf8)) == "as uploaded")
        }
        #expect(error == nil)
        let taken = try #require(snapshot)
        #expect(!FileManager.default.fileExists(atPath: taken.path), "the snapshot is removed afterwards")
        #expect(!FileManager.default.fileExists(atPath: taken.deletingLastPathComponent().path))
        #expect(try String(contentsOf: url, encoding: .utf8) == "changed meanwhile")
    }

    @Test func aDirectoryIsZippedWithEveryFile() throws {
        let directory = try TempDirectory()
        defer { directory.remove() }
        let package = try directory.directory("Album.pkg")
        try Data("one".utf8).writeClosingOnExec(to: package.appendingPathComponent("one.txt"))
        try FileManager.default.createDirectory(
            at: package.appendingPathComponent("inner"),
            withIntermediateDirectories: false
        )
        try Data("two".utf8).writeClosingOnExec(to: package.appendingPathComponent("inner/two.txt"))
        var entries: [String: String] = [:]
        var snapshot: URL?
        var error: NSError?
        NSFileCoordinator().coordinate(readingItemAt: package, options: .forUploading, error: &error) { zipURL in
            snapshot = zipURL
            #expect(zipURL.lastPathComponent == "Album.pkg.zip")
            guard let archive = try? Archive(url: zipURL, accessMode: .read, pathEncoding: nil) else {
                Issue.record("not a valid zip archive")
                return
            }
            for entry in archive where entry.type == .file {
                var data = Data()
                _ = try? archive.extract(entry) { data.append($0) }
                entries[entry.path] = String(decoding: data, as: UTF8.self)
            }
        }
        #expect(error == nil)
        #expect(entries == ["Album.pkg/one.txt": "one", "Album.pkg/inner/two.txt": "two"])
        #expect(!FileManager.default.fileExists(atPath: try #require(snapshot).path))
    }

    @Test func theAsyncReadHandsBodyASnapshotToo() async throws {
        let directory = try TempDirectory()
        defer { directory.remove() }
        let url = try directory.file("report.txt", "async upload")
        let (snapshot, text) = try await NSFileCoordinator().read(at: url, options: .forUploading) { uploadURL in
            (uploadURL, try String(contentsOf: uploadURL, encoding: .utf8))
        }
        #expect(snapshot != url && text == "async upload")
        #expect(!FileManager.default.fileExists(atPath: snapshot.path))
    }

    @Test func aMissingItemFailsAndTheAccessorDoesNotRun() throws {
        let directory = try TempDirectory()
        defer { directory.remove() }
        let missing = directory.url.appendingPathComponent("missing")
        var ran = false
        var error: NSError?
        NSFileCoordinator().coordinate(readingItemAt: missing, options: .forUploading, error: &error) { _ in ran = true
        }
        #expect(!ran)
        #expect(error?.code == CocoaError.fileReadNoSuchFile.rawValue)
    }
}
