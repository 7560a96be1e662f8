import FCProtocol
import Foundation
import Logging
import Testing

@testable import FCDaemon

/// The daemon's answers to version store requests (issue 15), without a socket: every operation, and bad requests
/// answered with an error instead of harm.
@Suite struct VersionStoreServiceTests {
    private func request(
        _ operation: Filecoord_V1_VersionStoreOperation,
        _ fill: (inout Filecoord_V1_VersionStoreRequest) -> Void = { _ in }
    ) -> Filecoord_V1_VersionStoreRequest {
        var request = Filecoord_V1_VersionStoreRequest()
        request.requestID = 1
        request.operation = operation
        fill(&request)
        return request
    }

    /// A folder of the test's own (`root`, removed by the caller) with `root/files/doc.txt` holding "one", and a
    /// service whose store is `root/store`.
    private func folderAndService(
        _ name: String,
        maximumReplySize: Int = 1 << 20
    ) throws -> (root: String, item: String, service: VersionStoreService) {
        let root = NSTemporaryDirectory() + "fcversions-\(name)-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: root + "/files", withIntermediateDirectories: true)
        let item = root + "/files/doc.txt"
        try Data("one".utf8).write(to: URL(fileURLWithPath: item))
        let service = VersionStoreService(
            directory: root + "/store",
            logger: Logger(label: "test"),
            maximumReplySize: maximumReplySize
        )
        return (root, item, service)
    }

    @Test func answersEveryOperationAndRefusesBadRequests() throws {
        let (root, item, service) = try folderAndService("service")
        defer { try? FileManager.default.removeItem(atPath: root) }

        let added = service.handle(
            request(.add) {
                $0.itemPath = Data(item.utf8)
                $0.contentsPath = Data(item.utf8)
                $0.savingComputer = "laptop"
            }
        )
        #expect(added.errorCode == 0 && added.requestID == 1)
        let version = try #require(added.versions.first)
        #expect(version.isConflict && !version.isResolved && version.savingComputer == "laptop")
        #expect(service.handle(request(.list) { $0.itemPath = Data(item.utf8) }).versions.map(\.id) == [version.id])
        #expect(service.handle(request(.resolve) { $0.versionID = version.id }).versions.first?.isResolved == true)
        #expect(service.handle(request(.discardable) { $0.versionID = version.id }).found)
        let moved = root + "/files/moved.txt"
        try FileManager.default.moveItem(atPath: item, toPath: moved)
        #expect(
            service.handle(
                request(.moved) {
                    $0.itemPath = Data(item.utf8)
                    $0.toPath = Data(moved.utf8)
                }
            ).errorCode
                == 0
        )
        let replaced = service.handle(
            request(.replace) {
                $0.itemPath = Data(moved.utf8)
                $0.versionID = version.id
            }
        )
        #expect(String(decoding: replaced.path, as: UTF8.self) == moved)
        let temporary = String(decoding: service.handle(request(.temporaryDirectory)).path, as: UTF8.self)
        #expect(FileManager.default.fileExists(atPath: temporary))
        // The watcher's entry point (issue 13): a move seen without coordination, queued on the store's queue.
        let renamed = root + "/files/renamed.txt"
        try FileManager.default.moveItem(atPath: moved, toPath: renamed)
        service.itemMoved(from: moved, to: renamed)
        service.queue.sync {}
        #expect(service.handle(request(.list) { $0.itemPath = Data(renamed.utf8) }).versions.map(\.id) == [version.id])
        try FileManager.default.moveItem(atPath: renamed, toPath: moved)
        service.itemMoved(from: renamed, to: moved)
        service.queue.sync {}
        #expect(service.handle(request(.remove) { $0.versionID = version.id }).versions.count == 1)
        #expect(service.handle(request(.removeAll) { $0.itemPath = Data(moved.utf8) }).versions.isEmpty)

        // Bad requests: an error for that call, nothing else touched.
        let unspecified = service.handle(request(.unspecified))
        #expect(unspecified.errorCode == 3 && !unspecified.errorMessage.isEmpty)
        let missing = service.handle(
            request(.add) {
                $0.itemPath = Data(moved.utf8)
                $0.contentsPath = Data((root + "/nothing").utf8)
            }
        )
        #expect(missing.errorCode == 1 && missing.errorMessage.contains("nothing"))
        let gone = service.handle(
            request(.replace) {
                $0.itemPath = Data(moved.utf8)
                $0.versionID = "no-such"
            }
        )
        #expect(gone.errorCode == 2)
        #expect(try String(contentsOfFile: moved, encoding: .utf8) == "one")
    }

    @Test func aReplyLargerThanAFrameIsAnErrorOrIdsNeverADroppedReply() throws {
        // Until stop 69 a listing of more versions than a frame holds could not be encoded, was dropped, and its
        // caller waited 120 s; a removal of them all removed them and answered nothing.
        let (root, item, service) = try folderAndService("large", maximumReplySize: 4_096)
        defer { try? FileManager.default.removeItem(atPath: root) }
        var added: [String] = []
        for _ in 0..<30 {
            let reply = service.handle(
                request(.add) {
                    $0.itemPath = Data(item.utf8)
                    $0.contentsPath = Data(item.utf8)
                }
            )
            try #require(reply.errorCode == 0)
            added.append(try #require(reply.versions.first).id)
        }

        let listed = service.handle(request(.list) { $0.itemPath = Data(item.utf8) })
        #expect(listed.errorCode == 4 && listed.versions.isEmpty)
        #expect(listed.errorMessage.contains("30 versions"), "\(listed.errorMessage)")
        let removed = service.handle(request(.removeAll) { $0.itemPath = Data(item.utf8) })
        #expect(removed.errorCode == 0)
        #expect(Set(removed.versions.map(\.id)) == Set(added))
        #expect(removed.versions.allSatisfy { $0.itemPath.isEmpty && $0.contentsPath.isEmpty })
        // Both replies fit in a frame of that size as they are encoded.
        let encoder = FrameEncoder(maximumFrameSize: 4_096)
        #expect(throws: Never.self) { _ = try encoder.encode(Filecoord_V1_Frame(.versionStoreReply(listed))) }
        #expect(throws: Never.self) { _ = try encoder.encode(Filecoord_V1_Frame(.versionStoreReply(removed))) }
        #expect(service.handle(request(.list) { $0.itemPath = Data(item.utf8) }).versions.isEmpty)
    }
}
