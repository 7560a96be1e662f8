import Dispatch
import FileCoordination
import Foundation
import Testing

// Cancel, nesting and unsupported URLs (docs/SEMANTICS.md §4, §5).

/// `true` for `CocoaError(.userCancelled)` as an `NSError`.
func isUserCancelled(_ error: NSError?) -> Bool {
    error?.domain == NSCocoaErrorDomain && error?.code == 3072 && error?.code == CocoaError.Code.userCancelled.rawValue
}

/// `true` for a ``FileCoordinationError`` with `code`, as an `NSError`.
func isFileCoordinationError(_ error: NSError?, _ code: FileCoordinationError.Code) -> Bool {
    error?.domain == "FileCoordinationErrorDomain" && error?.domain == FileCoordinationError.errorDomain
        && error?.code == code.rawValue
}

@Suite struct CancelTests {
    @Test func cancelFromAnotherThreadEndsAWaitingCallAtOnceAndEveryLaterCall() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let presenter = RecordingPresenter(url: file)
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let cancelled = NSFileCoordinator()
        let result = Locked<(ran: Bool, error: NSError?)?>(nil)
        withPresenters([presenter]) {
            let holder = spawn {
                var error: NSError?
                NSFileCoordinator().coordinate(readingItemAt: file, options: [], error: &error) { _ in
                    inside.signal()
                    _ = release.wait(seconds: patience)
                }
            }
            #expect(inside.wait(seconds: patience))
            let waiter = spawn {
                var error: NSError?
                var ran = false
                cancelled.coordinate(writingItemAt: file, options: [], error: &error) { _ in ran = true }
                result.set((ran, error))
            }
            #expect(waiter.staysUnsignalled(), "the write waits for the read")
            spawn { cancelled.cancel() }
            // The reader still holds the file: the cancelled call returns without waiting for it.
            #expect(waiter.wait(seconds: patience))
            release.signal()
            #expect(holder.wait(seconds: patience))
            settle(presenter)
        }
        #expect(result.current?.ran == false)
        #expect(isUserCancelled(result.current?.error))
        // The cancelled write never got as far as asking the presenter.
        #expect(presenter.events == ["relinquishToReader", "save", "reacquire"])

        // Later calls fail the same way without running their accessors.
        var error: NSError?
        var ran = false
        cancelled.coordinate(readingItemAt: file, options: [], error: &error) { _ in ran = true }
        #expect(!ran)
        #expect(isUserCancelled(error))
        error = nil
        cancelled.coordinate(
            readingItemAt: file,
            options: [],
            writingItemAt: file,
            options: [],
            error: &error
        ) { _, _ in
            ran = true
        }
        #expect(!ran)
        #expect(isUserCancelled(error))
        error = nil
        cancelled.prepare(forReadingItemsAt: [file], options: [], writingItemsAt: [], options: [], error: &error) {
            completionHandler in
            ran = true
            completionHandler()
        }
        #expect(!ran)
        #expect(isUserCancelled(error))
        let queue = OperationQueue()
        let intentError = Locked<NSError?>(nil)
        let done = DispatchSemaphore(value: 0)
        cancelled.coordinate(with: [.writingIntent(with: file)], queue: queue) { error in
            intentError.set(error.map { $0 as NSError })
            done.signal()
        }
        #expect(done.wait(seconds: patience))
        #expect(isUserCancelled(intentError.current))
    }

    @Test func cancelLetsARunningAccessorFinish() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let coordinator = NSFileCoordinator()
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let result = Locked<(finished: Bool, error: NSError?)?>(nil)
        let running = spawn {
            var error: NSError?
            var finished = false
            coordinator.coordinate(writingItemAt: file, options: [], error: &error) { url in
                inside.signal()
                _ = release.wait(seconds: patience)
                try? Data("written".utf8).writeClosingOnExec(to: url)
                finished = true
            }
            result.set((finished, error))
        }
        #expect(inside.wait(seconds: patience))
        coordinator.cancel()
        #expect(running.staysUnsignalled(), "cancel does not interrupt a running accessor")
        release.signal()
        #expect(running.wait(seconds: patience))
        #expect(result.current?.finished == true)
        #expect(result.current?.error == nil)
        #expect(try String(contentsOf: file, encoding: .utf8) == "written")
        // The file is free again for others.
        var error: NSError?
        var ran = false
        NSFileCoordinator().coordinate(writingItemAt: file, options: [], error: &error) { _ in ran = true }
        #expect(ran)
        #expect(error == nil)
    }

    @Test func cancelEndsAWaitForAPresenterThatHasNotAnswered() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let stuck = RecordingPresenter(url: file, relinquish: .never)
        let coordinator = NSFileCoordinator()
        let result = Locked<(ran: Bool, error: NSError?)?>(nil)
        withPresenters([stuck]) {
            let waiter = spawn {
                var error: NSError?
                var ran = false
                coordinator.coordinate(writingItemAt: file, options: [], error: &error) { _ in ran = true }
                result.set((ran, error))
            }
            #expect(stuck.wait(for: "relinquishToWriter"))
            coordinator.cancel()
            #expect(waiter.wait(seconds: patience))
            settle(stuck)
            #expect(stuck.events == ["relinquishToWriter"])
        }
        #expect(result.current?.ran == false)
        #expect(isUserCancelled(result.current?.error))
    }
}

@Suite struct NestingTests {
    @Test func nestedReadBySameCoordinatorRunsInsideReadAndWriteAccessors() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let other = try dir.file("other.txt")
        let coordinator = NSFileCoordinator()
        var log: [String] = []
        var errors: [NSError?] = []
        var error: NSError?
        coordinator.coordinate(readingItemAt: file, options: [], error: &error) { _ in
            var nested: NSError?
            coordinator.coordinate(readingItemAt: file, options: [], error: &nested) { url in
                log.append("read in read: \(url.lastPathComponent)")
            }
            errors.append(nested)
        }
        errors.append(error)
        coordinator.coordinate(writingItemAt: file, options: [], error: &error) { _ in
            var nested: NSError?
            coordinator.coordinate(readingItemAt: file, options: [], error: &nested) { url in
                log.append("read in write: \(url.lastPathComponent)")
            }
            errors.append(nested)
            coordinator.coordinate(readingItemAt: other, options: [], error: &nested) { url in
                log.append("read in write: \(url.lastPathComponent)")
            }
            errors.append(nested)
        }
        errors.append(error)
        #expect(errors == [nil, nil, nil, nil, nil])
        #expect(log == ["read in read: doc.txt", "read in write: doc.txt", "read in write: other.txt"])
    }

    @Test func nestedReadDoesNotWaitForAWriterQueuedBehindTheOuterRead() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let coordinator = NSFileCoordinator()
        let inside = DispatchSemaphore(value: 0)
        let writerQueued = DispatchSemaphore(value: 0)
        let timeline = Locked<[String]>([])
        let outer = spawn {
            var error: NSError?
            coordinator.coordinate(readingItemAt: file, options: [], error: &error) { _ in
                inside.signal()
                _ = writerQueued.wait(seconds: patience)
                var nested: NSError?
                coordinator.coordinate(readingItemAt: file, options: [], error: &nested) { _ in
                    timeline.withLock { $0.append("nested read") }
                }
                timeline.withLock { $0.append("outer read out") }
            }
        }
        #expect(inside.wait(seconds: patience))
        let writerDone = DispatchSemaphore(value: 0)
        let queue = OperationQueue()
        // Submitted before this call returns: the writer is queued behind the outer read.
        NSFileCoordinator().coordinate(with: [.writingIntent(with: file)], queue: queue) { _ in
            timeline.withLock { $0.append("writer") }
            writerDone.signal()
        }
        writerQueued.signal()
        #expect(outer.wait(seconds: patience), "the nested read must not wait for the queued writer")
        #expect(writerDone.wait(seconds: patience))
        queue.waitUntilAllOperationsAreFinished()
        #expect(timeline.current == ["nested read", "outer read out", "writer"])
    }

    @Test func nestedWriteInsideASingleItemAccessorFailsWithNestedWrite() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let coordinator = NSFileCoordinator()
        var nestedErrors: [NSError?] = []
        var ranNested = false
        var outerErrors: [NSError?] = []
        var error: NSError?
        coordinator.coordinate(readingItemAt: file, options: [], error: &error) { _ in
            var nested: NSError?
            coordinator.coordinate(writingItemAt: file, options: [], error: &nested) { _ in ranNested = true }
            nestedErrors.append(nested)
        }
        outerErrors.append(error)
        coordinator.coordinate(writingItemAt: file, options: [], error: &error) { _ in
            var nested: NSError?
            coordinator.coordinate(writingItemAt: file, options: [], error: &nested) { _ in ranNested = true }
            nestedErrors.append(nested)
            coordinator.coordinate(
                readingItemAt: file,
                options: [],
                writingItemAt: file,
                options: [],
                error: &nested
            ) { _, _ in
                ranNested = true
            }
            nestedErrors.append(nested)
        }
        outerErrors.append(error)
        #expect(outerErrors == [nil, nil])
        #expect(!ranNested)
        #expect(nestedErrors.count == 3)
        for nested in nestedErrors {
            #expect(isFileCoordinationError(nested, .nestedWrite))
            #expect(nested?.localizedDescription.isEmpty == false)
        }
        // The coordinator still works after the refusal.
        var ran = false
        coordinator.coordinate(writingItemAt: file, options: [], error: &error) { _ in ran = true }
        #expect(ran)
        #expect(error == nil)
    }

    @Test func nestedWriteInsideATwoItemAccessorIsAllowed() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let source = try dir.file("source.txt")
        let target = try dir.file("target.txt")
        let coordinator = NSFileCoordinator()
        var log: [String] = []
        var errors: [NSError?] = []
        var error: NSError?
        coordinator.coordinate(
            readingItemAt: source,
            options: [],
            writingItemAt: target,
            options: [],
            error: &error
        ) { _, writeURL in
            var nested: NSError?
            coordinator.coordinate(writingItemAt: writeURL, options: [], error: &nested) { _ in
                log.append("write in read+write")
            }
            errors.append(nested)
        }
        errors.append(error)
        coordinator.coordinate(
            writingItemAt: source,
            options: [],
            writingItemAt: target,
            options: [],
            error: &error
        ) { first, _ in
            var nested: NSError?
            coordinator.coordinate(writingItemAt: first, options: [], error: &nested) { _ in
                log.append("write in write+write")
            }
            errors.append(nested)
        }
        errors.append(error)
        #expect(errors == [nil, nil, nil, nil])
        #expect(log == ["write in read+write", "write in write+write"])
    }

    @Test func nestedWriteByAnotherCoordinatorIsNotRefused() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let other = try dir.file("other.txt")
        var error: NSError?
        var nested: NSError?
        var ran = false
        NSFileCoordinator().coordinate(readingItemAt: file, options: [], error: &error) { _ in
            NSFileCoordinator().coordinate(writingItemAt: other, options: [], error: &nested) { _ in ran = true }
        }
        #expect(error == nil)
        #expect(nested == nil)
        #expect(ran)
    }
}

@Suite struct UnsupportedURLTests {
    static let unsupported: [URL] = [
        URL(string: "https://example.com/x")!,
        URL(string: "file:relative/path.txt")!,
    ]

    @Test(arguments: unsupported)
    func unsupportedURLFailsEveryMethodWithoutRunningTheAccessor(_ url: URL) throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let good = try dir.file("good.txt")
        let coordinator = NSFileCoordinator()
        var ran = false
        var errors: [NSError?] = []
        var error: NSError?
        coordinator.coordinate(readingItemAt: url, options: [], error: &error) { _ in ran = true }
        errors.append(error)
        error = nil
        coordinator.coordinate(writingItemAt: url, options: [], error: &error) { _ in ran = true }
        errors.append(error)
        error = nil
        coordinator.coordinate(
            readingItemAt: good,
            options: [],
            writingItemAt: url,
            options: [],
            error: &error
        ) { _, _ in
            ran = true
        }
        errors.append(error)
        error = nil
        coordinator.coordinate(
            writingItemAt: url,
            options: [],
            writingItemAt: good,
            options: [],
            error: &error
        ) { _, _ in
            ran = true
        }
        errors.append(error)
        error = nil
        coordinator.prepare(forReadingItemsAt: [url], options: [], writingItemsAt: [], options: [], error: &error) {
            completionHandler in
            ran = true
            completionHandler()
        }
        errors.append(error)
        let queue = OperationQueue()
        let intentError = Locked<NSError?>(nil)
        let done = DispatchSemaphore(value: 0)
        coordinator.coordinate(with: [.readingIntent(with: good), .writingIntent(with: url)], queue: queue) { error in
            intentError.set(error.map { $0 as NSError })
            done.signal()
        }
        #expect(done.wait(seconds: patience))
        errors.append(intentError.current)
        #expect(!ran)
        #expect(errors.count == 6)
        for error in errors {
            #expect(isFileCoordinationError(error, .unsupportedURL))
            #expect(error?.localizedDescription.isEmpty == false)
        }
        // Nothing was left holding the good item.
        NSFileCoordinator().coordinate(writingItemAt: good, options: [], error: &error) { _ in ran = true }
        #expect(ran)
    }

    @Test func accessorGetsTheCallersOwnSpellingOfTheURL() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        // Another spelling of the same file: a `.` component and a doubled slash.
        let spelled = URL(fileURLWithPath: dir.url.path + "/./" + "/doc.txt")
        let presenter = RecordingPresenter(url: file)
        var urls: [URL] = []
        var error: NSError?
        withPresenters([presenter]) {
            NSFileCoordinator().coordinate(writingItemAt: spelled, options: [], error: &error) { url in
                urls.append(url)
            }
            settle(presenter)
        }
        #expect(error == nil)
        #expect(urls == [spelled])
        // The presenter of the canonical spelling hears of it.
        #expect(presenter.events == ["relinquishToWriter", "didChange", "reacquire"])
    }
}
