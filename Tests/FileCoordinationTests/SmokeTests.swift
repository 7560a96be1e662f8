import FileCoordination
import Foundation
import Testing

// RecordingPresenter lives in TestPresenters.swift.

@Test func writeMessagesAPresenterInTheSameProcess() throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let file = dir.appendingPathComponent("doc.txt")
    try Data("a".utf8).writeClosingOnExec(to: file)
    let presenter = RecordingPresenter(url: file)
    NSFileCoordinator.addFilePresenter(presenter)
    defer { NSFileCoordinator.removeFilePresenter(presenter) }
    var error: NSError?
    var ran = false
    NSFileCoordinator(filePresenter: nil).coordinate(writingItemAt: file, options: [], error: &error) { url in
        ran = true
        try? Data("b".utf8).writeClosingOnExec(to: url)
    }
    #expect(error == nil)
    #expect(ran)
    presenter.presentedItemOperationQueue.waitUntilAllOperationsAreFinished()
    Thread.sleep(forTimeInterval: 0.05)
    presenter.presentedItemOperationQueue.waitUntilAllOperationsAreFinished()
    #expect(presenter.events == ["relinquishToWriter", "didChange", "reacquire"])
}
