import Dispatch
import FileCoordination
import Foundation
import Testing

// Who waits for whom (docs/SEMANTICS.md §2). Blocking is shown with semaphores: an access that must wait
// is checked not to have run while the one it waits for is still inside its accessor (a short bounded wait that only
// a bug could end early), then to run once that one returns (a long bounded wait that is only a timeout).

@Suite struct WaitingTests {
    @Test func readersShare() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let presenter = RecordingPresenter(url: file)
        let firstIn = DispatchSemaphore(value: 0)
        let secondIn = DispatchSemaphore(value: 0)
        let sawEachOther = Locked<[Bool]>([])
        let errors = Locked<[NSError?]>([])
        withPresenters([presenter]) {
            func reader(signal mine: DispatchSemaphore, await theirs: DispatchSemaphore) -> DispatchSemaphore {
                spawn {
                    var error: NSError?
                    NSFileCoordinator().coordinate(readingItemAt: file, options: [], error: &error) { _ in
                        mine.signal()
                        // Both accessors are running at once only if readers share.
                        let saw = theirs.wait(seconds: patience)
                        sawEachOther.withLock { $0.append(saw) }
                    }
                    errors.withLock { $0.append(error) }
                }
            }
            let first = reader(signal: firstIn, await: secondIn)
            let second = reader(signal: secondIn, await: firstIn)
            #expect(first.wait(seconds: 2 * patience))
            #expect(second.wait(seconds: 2 * patience))
            settle(presenter)
        }
        #expect(sawEachOther.current == [true, true])
        #expect(errors.current.count == 2)
        #expect(errors.current.allSatisfy { $0 == nil })
        #expect(presenter.events.filter { $0 == "relinquishToReader" }.count == 2)
        #expect(presenter.events.filter { $0 == "reacquire" }.count == 2)
    }

    /// Holds `first` inside its accessor on another thread, starts `second` on a third thread, and checks that
    /// `second` runs only after `first` returned. Returns the timeline.
    static func checkWaits(
        first: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
        second: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void
    ) -> [String] {
        let timeline = Locked<[String]>([])
        let firstIn = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let firstDone = spawn {
            first {
                timeline.withLock { $0.append("first in") }
                firstIn.signal()
                _ = release.wait(seconds: patience)
                timeline.withLock { $0.append("first out") }
            }
        }
        #expect(firstIn.wait(seconds: patience))
        let secondDone = spawn {
            second { timeline.withLock { $0.append("second") } }
        }
        #expect(secondDone.staysUnsignalled(), "the second access must wait for the first one")
        release.signal()
        #expect(firstDone.wait(seconds: patience))
        #expect(secondDone.wait(seconds: patience))
        return timeline.current
    }

    @Test func writerWaitsForAReaderAndPresenterHearsInOrder() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let presenter = RecordingPresenter(url: file)
        let errors = Locked<[NSError?]>([])
        let timeline = withPresenters([presenter]) {
            let timeline = Self.checkWaits(
                first: { accessor in
                    var error: NSError?
                    NSFileCoordinator().coordinate(readingItemAt: file, options: [], error: &error) { _ in accessor() }
                    errors.withLock { $0.append(error) }
                },
                second: { accessor in
                    var error: NSError?
                    NSFileCoordinator().coordinate(writingItemAt: file, options: [], error: &error) { _ in accessor() }
                    errors.withLock { $0.append(error) }
                }
            )
            settle(presenter)
            return timeline
        }
        #expect(timeline == ["first in", "first out", "second"])
        #expect(errors.current == [nil, nil])
        #expect(
            presenter.events == [
                "relinquishToReader", "save", "reacquire", "relinquishToWriter", "didChange", "reacquire",
            ]
        )
    }

    @Test func readerWaitsForAWriter() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let timeline = Self.checkWaits(
            first: { accessor in
                var error: NSError?
                NSFileCoordinator().coordinate(writingItemAt: file, options: [], error: &error) { _ in accessor() }
            },
            second: { accessor in
                var error: NSError?
                NSFileCoordinator().coordinate(readingItemAt: file, options: [], error: &error) { _ in accessor() }
            }
        )
        #expect(timeline == ["first in", "first out", "second"])
    }

    @Test func writerWaitsForAWriter() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let timeline = Self.checkWaits(
            first: { accessor in
                var error: NSError?
                NSFileCoordinator().coordinate(writingItemAt: file, options: [], error: &error) { _ in accessor() }
            },
            second: { accessor in
                var error: NSError?
                NSFileCoordinator().coordinate(writingItemAt: file, options: .forDeleting, error: &error) { _ in
                    accessor()
                }
            }
        )
        #expect(timeline == ["first in", "first out", "second"])
    }

    @Test func readInsideAPackageWaitsForAWriteOfAnotherItemOfThePackage() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let package = try dir.directory("Album.package")
        let a = package.appendingPathComponent("a.txt")
        let b = package.appendingPathComponent("b.txt")
        try Data("a".utf8).writeClosingOnExec(to: a)
        try Data("b".utf8).writeClosingOnExec(to: b)
        let timeline = Self.checkWaits(
            first: { accessor in
                var error: NSError?
                NSFileCoordinator().coordinate(writingItemAt: b, options: [], error: &error) { _ in accessor() }
            },
            second: { accessor in
                var error: NSError?
                NSFileCoordinator().coordinate(readingItemAt: a, options: [], error: &error) { _ in accessor() }
            }
        )
        #expect(timeline == ["first in", "first out", "second"])
    }

    @Test func deletingADirectoryWaitsForAReadInsideIt() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let folder = try dir.directory("folder")
        let file = folder.appendingPathComponent("doc.txt")
        try Data("a".utf8).writeClosingOnExec(to: file)
        let timeline = Self.checkWaits(
            first: { accessor in
                var error: NSError?
                NSFileCoordinator().coordinate(readingItemAt: file, options: [], error: &error) { _ in accessor() }
            },
            second: { accessor in
                var error: NSError?
                NSFileCoordinator().coordinate(writingItemAt: folder, options: .forDeleting, error: &error) { _ in
                    accessor()
                }
            }
        )
        #expect(timeline == ["first in", "first out", "second"])
    }

    @Test func writeOfAPlainDirectoryAndWritesInsideItDoNotWaitForEachOther() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let folder = try dir.directory("folder")
        let file = folder.appendingPathComponent("doc.txt")
        try Data("a".utf8).writeClosingOnExec(to: file)
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = spawn {
            var error: NSError?
            NSFileCoordinator().coordinate(writingItemAt: folder, options: [], error: &error) { _ in
                inside.signal()
                _ = release.wait(seconds: patience)
            }
        }
        #expect(inside.wait(seconds: patience))
        var error: NSError?
        var ran = false
        NSFileCoordinator().coordinate(writingItemAt: file, options: [], error: &error) { _ in ran = true }
        release.signal()
        #expect(holder.wait(seconds: patience))
        #expect(error == nil)
        #expect(ran)
    }

    @Test func waitingWriterIsNotStarvedByLaterReaders() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let timeline = Locked<[String]>([])
        let firstIn = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let writerDone = DispatchSemaphore(value: 0)
        let laterReaderDone = DispatchSemaphore(value: 0)
        let firstQueue = OperationQueue()
        let writerQueue = OperationQueue()
        let readerQueue = OperationQueue()
        // Intents submit their claims before `coordinate(with:queue:byAccessor:)` returns: the arrival order is the
        // order of the calls.
        NSFileCoordinator().coordinate(with: [.readingIntent(with: file)], queue: firstQueue) { _ in
            timeline.withLock { $0.append("first reader in") }
            firstIn.signal()
            _ = release.wait(seconds: patience)
            timeline.withLock { $0.append("first reader out") }
        }
        #expect(firstIn.wait(seconds: patience))
        NSFileCoordinator().coordinate(with: [.writingIntent(with: file)], queue: writerQueue) { _ in
            timeline.withLock { $0.append("writer") }
            writerDone.signal()
        }
        NSFileCoordinator().coordinate(with: [.readingIntent(with: file)], queue: readerQueue) { _ in
            timeline.withLock { $0.append("later reader") }
            laterReaderDone.signal()
        }
        #expect(laterReaderDone.staysUnsignalled(), "a reader arriving after a waiting writer waits too")
        release.signal()
        #expect(writerDone.wait(seconds: patience))
        #expect(laterReaderDone.wait(seconds: patience))
        for queue in [firstQueue, writerQueue, readerQueue] { queue.waitUntilAllOperationsAreFinished() }
        #expect(timeline.current == ["first reader in", "first reader out", "writer", "later reader"])
    }

    @Test func presenterThatNeverRelinquishesKeepsAWriterWaitingUntilItIsRemoved() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let stuck = RecordingPresenter(url: file, relinquish: .never)
        let result = Locked<(ran: Bool, error: NSError?)?>(nil)
        NSFileCoordinator.addFilePresenter(stuck)
        let writer = spawn {
            var error: NSError?
            var ran = false
            NSFileCoordinator().coordinate(writingItemAt: file, options: [], error: &error) { _ in ran = true }
            result.set((ran, error))
        }
        #expect(stuck.wait(for: "relinquishToWriter"))
        #expect(writer.staysUnsignalled(), "the writer waits for the presenter's answer")
        #expect(result.current == nil)
        NSFileCoordinator.removeFilePresenter(stuck)
        #expect(writer.wait(seconds: patience), "removing the presenter answers for it")
        #expect(result.current?.ran == true)
        #expect(result.current?.error == nil)
        // A late answer from the removed presenter is harmless.
        stuck.releaseRelinquishBlocks()
        settle(stuck)
        #expect(stuck.events == ["relinquishToWriter"])
    }

    @Test func accessesOfOneCoordinatorNeverBlockEachOther() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let coordinator = NSFileCoordinator()
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = spawn {
            var error: NSError?
            coordinator.coordinate(writingItemAt: file, options: [], error: &error) { _ in
                inside.signal()
                _ = release.wait(seconds: patience)
            }
        }
        #expect(inside.wait(seconds: patience))
        // Another thread, the same coordinator: no wait.
        let other = spawn {
            var error: NSError?
            coordinator.coordinate(readingItemAt: file, options: [], error: &error) { _ in }
        }
        #expect(other.wait(seconds: patience))
        release.signal()
        #expect(holder.wait(seconds: patience))
    }

    /// Each coordinator made without a presenter gets a purpose no other has, shaped as a UUID like Apple's (made
    /// from one random UUID per process and a counter since issue 23's profile).
    @Test func everyCoordinatorGetsAUniqueUUIDShapedPurpose() {
        let purposes = (0..<1000).map { _ in NSFileCoordinator().purposeIdentifier }
        #expect(Set(purposes).count == purposes.count)
        // Spelled as Foundation spells a UUID (upper case), though formatted without it.
        #expect(purposes.allSatisfy { UUID(uuidString: $0)?.uuidString == $0 }, "\(purposes.prefix(3))")
    }

    @Test func coordinatorsWithTheSamePresenterOrPurposeDoNotBlockEachOther() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt")
        let presenter = RecordingPresenter(url: try dir.file("elsewhere.txt"))
        func check(_ makeCoordinator: @escaping @Sendable () -> NSFileCoordinator) {
            let inside = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let holder = spawn {
                var error: NSError?
                makeCoordinator().coordinate(writingItemAt: file, options: [], error: &error) { _ in
                    inside.signal()
                    _ = release.wait(seconds: patience)
                }
            }
            #expect(inside.wait(seconds: patience))
            var error: NSError?
            var ran = false
            makeCoordinator().coordinate(writingItemAt: file, options: [], error: &error) { _ in ran = true }
            #expect(ran)
            #expect(error == nil)
            release.signal()
            #expect(holder.wait(seconds: patience))
        }
        withPresenters([presenter]) {
            check { NSFileCoordinator(filePresenter: presenter) }
        }
        let purpose = "com.example.tests.\(UUID().uuidString)"
        check {
            let coordinator = NSFileCoordinator()
            coordinator.purposeIdentifier = purpose
            return coordinator
        }
    }

    @Test func presentersOwnWriteWhileAnsweringGoesAheadOfTheReadItAnswers() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let file = try dir.file("doc.txt", "unsaved")
        let box = Locked<RecordingPresenter?>(nil)
        let saveError = Locked<NSError?>(nil)
        // Saving writes the file with a coordinator made with the presenter, from the presenter's queue, while the
        // read that asked waits for the answer: the write must not wait for that read (docs/SEMANTICS.md §2 rule 5).
        let presenter = RecordingPresenter(
            url: file,
            beforeSave: {
                guard let presenter = box.current, let url = presenter.presentedItemURL else { return }
                var error: NSError?
                NSFileCoordinator(filePresenter: presenter).coordinate(
                    writingItemAt: url,
                    options: [],
                    error: &error
                ) { url in
                    presenter.record("saving")
                    try? Data("saved".utf8).writeClosingOnExec(to: url)
                }
                saveError.set(error)
            }
        )
        box.set(presenter)
        let contents = Locked<String?>(nil)
        withPresenters([presenter]) {
            let reader = spawn {
                var error: NSError?
                NSFileCoordinator().coordinate(readingItemAt: file, options: [], error: &error) { url in
                    contents.set(try? String(contentsOf: url, encoding: .utf8))
                }
            }
            #expect(reader.wait(seconds: patience))
            settle(presenter)
        }
        box.set(nil)
        #expect(saveError.current == nil)
        #expect(contents.current == "saved")
        #expect(presenter.events == ["relinquishToReader", "save", "saving", "reacquire"])
    }
}
