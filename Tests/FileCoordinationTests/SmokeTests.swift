import FileCoordination
import Foundation
import Testing

final class RecordingPresenter: NSObject, NSFilePresenter, @unchecked Sendable {
    let url: URL
    let presentedItemOperationQueue: OperationQueue = {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        return queue
    }()
    private let lock = NSLock()
    private var log: [String] = []
    var events: [String] { lock.withLock { log } }
    init(url: URL) { self.url = url }
    var presentedItemURL: URL? { url }
    func record(_ event: String) { lock.withLock { log.append(event) } }
    func relinquishPresentedItem(toWriter writer: @escaping @Sendable ((@Sendable () -> Void)?) -> Void) {
        record("relinquishToWriter")
        writer { self.record("reacquire") }
    }
    func presentedItemDidChange() { record("didChange") }
}

@Test func writeMessagesAPresenterInTheSameProcess() throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    let file = dir.appendingPathComponent("doc.txt")
    try Data("a".utf8).write(to: file)
    let presenter = RecordingPresenter(url: file)
    NSFileCoordinator.addFilePresenter(presenter)
    defer { NSFileCoordinator.removeFilePresenter(presenter) }
    var error: NSError?
    var ran = false
    NSFileCoordinator(filePresenter: nil).coordinate(writingItemAt: file, options: [], error: &error) { url in
        ran = true
        try? Data("b".utf8).write(to: url)
    }
    #expect(error == nil)
    #expect(ran)
    presenter.presentedItemOperationQueue.waitUntilAllOperationsAreFinished()
    Thread.sleep(forTimeInterval: 0.05)
    presenter.presentedItemOperationQueue.waitUntilAllOperationsAreFinished()
    #expect(presenter.events == ["relinquishToWriter", "didChange", "reacquire"])
}
