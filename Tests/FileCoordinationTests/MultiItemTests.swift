import Dispatch
import FileCoordination
import Foundation
import Testing

// Accesses of several items at once: the two-URL methods, intents and `prepare(forReadingItemsAt:…)` (reference
// §1.1, §2.1 "canonical lock ordering").

@Suite struct MultiItemTests {
    @Test func readOneItemAndWriteAnother() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let source = try dir.file("source.txt", "data")
        let target = try dir.file("target.txt", "old")
        let reading = RecordingPresenter(url: source)
        let writing = RecordingPresenter(url: target)
        var error: NSError?
        var urls: [[URL]] = []
        withPresenters([reading, writing]) {
            NSFileCoordinator().coordinate(
                readingItemAt: source,
                options: [],
                writingItemAt: target,
                options: .forMerging,
                error: &error
            ) { readURL, writeURL in
                urls.append([readURL, writeURL])
                reading.record("accessor")
                writing.record("accessor")
                if let data = try? Data(contentsOf: readURL) { try? data.writeClosingOnExec(to: writeURL) }
            }
            settle(reading, writing)
        }
        #expect(error == nil)
        #expect(urls == [[source, target]])
        #expect(try String(contentsOf: target, encoding: .utf8) == "data")
        #expect(reading.events == ["relinquishToReader", "save", "accessor", "reacquire"])
        #expect(writing.events == ["relinquishToWriter", "save", "accessor", "didChange", "reacquire"])
        #expect(reading.offQueueCallbacks.isEmpty)
        #expect(writing.offQueueCallbacks.isEmpty)
    }

    @Test func writeTwoItems() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let first = try dir.file("first.txt")
        let second = try dir.file("second.txt")
        let firstPresenter = RecordingPresenter(url: first)
        let secondPresenter = RecordingPresenter(url: second)
        let folder = RecordingPresenter(url: dir.url)
        var error: NSError?
        var urls: [[URL]] = []
        withPresenters([firstPresenter, secondPresenter, folder]) {
            NSFileCoordinator().coordinate(
                writingItemAt: first,
                options: [],
                writingItemAt: second,
                options: .forDeleting,
                error: &error
            ) { url1, url2 in
                urls.append([url1, url2])
                firstPresenter.record("accessor")
                secondPresenter.record("accessor")
                try? Data("1".utf8).writeClosingOnExec(to: url1)
                try? FileManager.default.removeItem(at: url2)
            }
            settle(firstPresenter, secondPresenter, folder)
        }
        #expect(error == nil)
        #expect(urls == [[first, second]])
        #expect(firstPresenter.events == ["relinquishToWriter", "accessor", "didChange", "reacquire"])
        #expect(secondPresenter.events == ["relinquishToWriter", "accommodateDeletion", "accessor", "reacquire"])
        // The deleted item's folder is asked to accommodate its deletion first (issue 10), then hears both changes.
        #expect(folder.events.first == "accommodateSubitemDeletion(\(second.path))")
        #expect(
            Set(folder.events.dropFirst()) == ["subitemDidChange(\(first.path))", "subitemDidChange(\(second.path))"]
        )
        #expect(folder.events.count == 3)
    }

    @Test func twoURLMethodsTakingTheSamePairInOppositeOrdersDoNotDeadlock() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let a = try dir.file("a.txt")
        let b = try dir.file("b.txt")
        let inside = Locked(0)
        let done = (0..<4).map { index in
            spawn {
                for _ in 0..<25 {
                    var error: NSError?
                    let (x, y) = index % 2 == 0 ? (a, b) : (b, a)
                    NSFileCoordinator().coordinate(
                        readingItemAt: x,
                        options: [],
                        writingItemAt: y,
                        options: [],
                        error: &error
                    ) { _, _ in
                        inside.withLock { $0 += 1 }
                    }
                }
            }
        }
        for semaphore in done { #expect(semaphore.wait(seconds: patience)) }
        #expect(inside.current == 100)
    }

    @Test func intentsRunOnTheGivenQueueWithTheirURLs() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let source = try dir.file("source.txt")
        let target = try dir.file("target.txt")
        let reading = RecordingPresenter(url: source)
        let writing = RecordingPresenter(url: target)
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let readIntent = NSFileAccessIntent.readingIntent(with: source, options: [])
        let writeIntent = NSFileAccessIntent.writingIntent(with: target, options: .forMerging)
        let result = Locked<(error: NSError?, onQueue: Bool, urls: [URL])?>(nil)
        let done = DispatchSemaphore(value: 0)
        withPresenters([reading, writing]) {
            NSFileCoordinator().coordinate(with: [readIntent, writeIntent], queue: queue) { error in
                result.set(
                    (error.map { $0 as NSError }, OperationQueue.current === queue, [readIntent.url, writeIntent.url])
                )
                reading.record("accessor")
                writing.record("accessor")
                done.signal()
            }
            #expect(done.wait(seconds: patience))
            queue.waitUntilAllOperationsAreFinished()
            settle(reading, writing)
        }
        #expect(result.current?.error == nil)
        #expect(result.current?.onQueue == true)
        #expect(result.current?.urls == [source, target])
        #expect(reading.events == ["relinquishToReader", "save", "accessor", "reacquire"])
        #expect(writing.events == ["relinquishToWriter", "save", "accessor", "didChange", "reacquire"])
    }

    @Test func intentWriterWaitsForAHeldReader() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = spawn {
            var error: NSError?
            NSFileCoordinator().coordinate(readingItemAt: file, options: [], error: &error) { _ in
                inside.signal()
                _ = release.wait(seconds: patience)
            }
        }
        #expect(inside.wait(seconds: patience))
        let done = DispatchSemaphore(value: 0)
        let queue = OperationQueue()
        NSFileCoordinator().coordinate(with: [.writingIntent(with: file)], queue: queue) { _ in done.signal() }
        #expect(done.staysUnsignalled())
        release.signal()
        #expect(done.wait(seconds: patience))
        #expect(holder.wait(seconds: patience))
        queue.waitUntilAllOperationsAreFinished()
    }

    @Test func prepareAsksPresentersFirstAndReturnsWhenTheBatchReturnsBeforeItsCompletionHandler() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let source = try dir.file("source.txt", "data")
        let target = try dir.file("target.txt", "old")
        let reading = RecordingPresenter(url: source)
        let writing = RecordingPresenter(url: target)
        let completed = Locked(false)
        let returned = DispatchSemaphore(value: 0)
        var handlerCalled: DispatchSemaphore?
        var error: NSError?
        var nestedErrors: [NSError?] = []
        withPresenters([reading, writing]) {
            let coordinator = NSFileCoordinator()
            coordinator.prepare(
                forReadingItemsAt: [source],
                options: [],
                writingItemsAt: [target],
                options: [],
                error: &error
            ) { completionHandler in
                reading.record("batch")
                writing.record("batch")
                // The documented pattern: the preparation made presenters save; the reads inside do not ask again.
                var nested: NSError?
                var data: Data?
                coordinator.coordinate(readingItemAt: source, options: .withoutChanges, error: &nested) { url in
                    reading.record("read")
                    data = try? Data(contentsOf: url)
                }
                nestedErrors.append(nested)
                coordinator.coordinate(writingItemAt: target, options: [], error: &nested) { url in
                    writing.record("write")
                    try? data?.writeClosingOnExec(to: url)
                }
                nestedErrors.append(nested)
                // The handler may be called later, from any thread: here only once prepare has returned.
                handlerCalled = spawn {
                    _ = returned.wait(seconds: patience)
                    completed.set(true)
                    completionHandler()
                }
            }
            #expect(!completed.current, "prepare returns when its block returns, before the handler is called")
            returned.signal()
            #expect(handlerCalled?.wait(seconds: patience) == true)
            settle(reading, writing)
        }
        #expect(error == nil)
        #expect(nestedErrors == [nil, nil])
        #expect(try String(contentsOf: target, encoding: .utf8) == "data")
        // The preparation's own reacquirers run when the batch ends; the nested accesses message presenters too.
        #expect(
            reading.events == [
                "relinquishToReader", "save", "batch", "relinquishToReader", "read", "reacquire", "reacquire",
            ]
        )
        #expect(
            writing.events == [
                "relinquishToWriter", "batch", "relinquishToWriter", "write", "didChange", "reacquire", "reacquire",
            ]
        )
    }

    @Test func prepareFailsWithAPresentersErrorWithoutRunningTheBatch() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let saveError = PresenterErrorTests.presenterError()
        let presenter = RecordingPresenter(url: file, saveError: saveError)
        var error: NSError?
        var ran = false
        withPresenters([presenter]) {
            NSFileCoordinator().prepare(
                forReadingItemsAt: [file],
                options: [],
                writingItemsAt: [],
                options: [],
                error: &error
            ) { completionHandler in
                ran = true
                completionHandler()
            }
            settle(presenter)
        }
        #expect(!ran)
        PresenterErrorTests.expectSame(error, as: saveError)
        #expect(presenter.events == ["relinquishToReader", "save", "reacquire"])
    }
}
