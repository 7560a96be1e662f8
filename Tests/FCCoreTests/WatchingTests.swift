import FCCore
import FCTestSupport
import Testing

extension ArbiterHarness {
    /// Feeds one batch of file-system events.
    fileprivate func fs(_ events: FileSystemEvent...) { send(.fileSystemChanged(events)) }

    /// The watch and unwatch effects recorded, as "+/d" and "-/d".
    fileprivate var watchEffects: [String] {
        effects.compactMap {
            switch $0 {
            case .watch(let directory): "+\(directory)"
            case .unwatch(let directory): "-\(directory)"
            default: nil
            }
        }
    }

    /// Fires the coalescing window's timer.
    fileprivate func windowElapses() { send(.timerFired(.fileSystemWindow)) }

    /// Fires the window's timer until the arbiter stops it (every window closed, every echo expired).
    fileprivate func settle() {
        for _ in 0..<100 {
            windowElapses()
            let restarted = lastEffects.contains {
                if case .startTimer(.fileSystemWindow, _) = $0 { true } else { false }
            }
            if !restarted { return }
        }
    }
}

/// Issue 13, docs/SEMANTICS.md §3 "Changes made without coordination": the rules of watch interest and of the
/// translation of file-system events into presenter messages, one test per rule.
@Suite("Issue 13: watching the file system (docs/SEMANTICS.md §3, uncoordinated changes)")
struct WatchingTests {
    // MARK: Watch interest

    @Test func aThousandPresentersInOneFolderCostOneWatchAndTheLastOneRemovesIt() {
        let h = watchingHarness()
        let app = h.connect("app")
        let folder = h.present("/d", client: app)
        #expect(h.watchEffects == ["+/", "+/d"])
        h.clearEffects()
        var files: [PresenterID] = []
        for index in 0..<1000 { files.append(h.present("/d/f\(index)", client: app)) }
        // Each file's parent is /d (watched already); the files themselves are asked for (no watch for a file).
        #expect(h.watchEffects.count == 1000)
        #expect(h.watchEffects.allSatisfy { $0.hasPrefix("+/d/f") })
        #expect(h.arbiter.watchingSnapshot().directories.first { $0.path == path("/d") }?.presenters == 1001)
        h.clearEffects()
        for presenter in files { h.send(.presenterRemoved(presenter)) }
        #expect(h.watchEffects.count == 1000)
        #expect(!h.watchEffects.contains("-/d"))
        h.clearEffects()
        h.send(.presenterRemoved(folder))
        #expect(h.watchEffects == ["-/", "-/d"])
        #expect(h.arbiter.watchingSnapshot().directories.isEmpty)
    }

    @Test func noWatchesWithoutTheSetting() {
        let h = ArbiterHarness()
        let app = h.connect("app")
        h.present("/d/f", client: app)
        #expect(!h.effects.contains { if case .watch = $0 { true } else { false } })
    }

    @Test func aClientThatGoesAwayReleasesItsWatches() {
        let h = watchingHarness()
        let app = h.connect("app")
        h.present("/d/f", client: app)
        h.clearEffects()
        h.send(.clientDisconnected(app))
        #expect(Set(h.watchEffects) == ["-/d", "-/d/f"])
    }

    @Test func aMovedPresenterUnwatchesItsOldParentBeforeWatchingTheNewOne() {
        let h = watchingHarness()
        let app = h.connect("app")
        let file = h.present("/a/f", client: app)
        h.clearEffects()
        h.send(.presenterURLChanged(file, to: path("/b/f")))
        #expect(h.watchEffects == ["-/a", "-/a/f", "+/b", "+/b/f"])
    }

    // MARK: Translation

    @Test func aWriteIsOneDidChangeAndOneSubitemDidChange() {
        let h = watchingHarness()
        let app = h.connect("app")
        let folder = h.present("/d", client: app)
        let file = h.present("/d/f", client: app)
        let other = h.present("/d/g", client: app)
        h.fs(.changed(path("/d/f")))
        #expect(h.messages(to: file) == [.presentedItemDidChange])
        #expect(h.messages(to: folder) == [.presentedSubitemDidChange(at: path("/d/f"))])
        #expect(h.messages(to: other).isEmpty)
        h.settle()
        #expect(h.messages(to: file) == [.presentedItemDidChange])
    }

    @Test func anAtomicSaveThroughATemporaryIsOneChangeAndNoMove() {
        let h = watchingHarness()
        let app = h.connect("app")
        let folder = h.present("/d", client: app)
        let file = h.present("/d/f", client: app)
        h.fs(
            .created(path("/d/.f.tmp"), isDirectory: false),
            .changed(path("/d/.f.tmp")),
            .movedFrom(path("/d/.f.tmp"), cookie: 7),
            .movedTo(path("/d/f"), cookie: 7, isDirectory: false)
        )
        h.settle()
        #expect(h.messages(to: file) == [.presentedItemDidChange])
        #expect(h.arbiter.snapshot().presenters[file]?.path == path("/d/f"))
        // The folder hears of the new temporary, then of a change of the saved item (not of a move).
        #expect(
            h.messages(to: folder) == [
                .presentedSubitemDidChange(at: path("/d/.f.tmp")), .presentedSubitemDidAppear(at: path("/d/.f.tmp")),
                .presentedSubitemDidChange(at: path("/d/f")),
            ]
        )
    }

    @Test func aDeletionIsADidChangeForTheItemAndASubitemChangeForItsFolder() {
        let h = watchingHarness()
        let app = h.connect("app")
        let folder = h.present("/d", client: app)
        let file = h.present("/d/f", client: app)
        h.fs(.deleted(path("/d/f")))
        #expect(h.messages(to: file) == [.presentedItemDidChange])
        #expect(h.messages(to: folder) == [.presentedSubitemDidChange(at: path("/d/f"))])
    }

    @Test func aNewFileAppearsOnceEvenWhenItIsWrittenRightAway() {
        let h = watchingHarness()
        let app = h.connect("app")
        let folder = h.present("/d", client: app)
        h.fs(.created(path("/d/n"), isDirectory: false))
        h.fs(.changed(path("/d/n")))
        h.settle()
        #expect(
            h.messages(to: folder) == [
                .presentedSubitemDidChange(at: path("/d/n")), .presentedSubitemDidAppear(at: path("/d/n")),
            ]
        )
    }

    @Test func aNewFileWrittenAfterItsCreationWasReadIsAChangeToo() {
        // Its creation was read empty; its first close found contents: its presenters were told of an empty file,
        // and hear of the contents (until stop 69 the close was dropped as the creation's own).
        let h = watchingHarness()
        let app = h.connect("app")
        let folder = h.present("/d", client: app)
        let file = h.present("/d/n", client: app)
        let empty = ItemStamp.present(inode: 7, size: 0, changeTime: 1_000)
        let written = ItemStamp.present(inode: 7, size: 8, changeTime: 1_050)
        h.send(.fileSystemChanged([.created(path("/d/n"), isDirectory: false)], observed: [path("/d/n"): empty]))
        h.send(.fileSystemChanged([.changed(path("/d/n"))], observed: [path("/d/n"): written]))
        h.settle()
        #expect(h.messages(to: file) == [.presentedItemDidChange, .presentedItemDidChange])
        #expect(
            h.messages(to: folder) == [
                .presentedSubitemDidChange(at: path("/d/n")), .presentedSubitemDidAppear(at: path("/d/n")),
                .presentedSubitemDidChange(at: path("/d/n")),
            ]
        )
    }

    /// What a presenter of `/d/n` hears when the file appears in one batch, read as `created`, and is closed in the
    /// next, read as `closed`.
    private func newFileClosed(created: ItemStamp, closed: ItemStamp) -> [PresenterMessageKind] {
        let h = watchingHarness()
        let app = h.connect("app")
        let file = h.present("/d/n", client: app)
        h.send(.fileSystemChanged([.created(path("/d/n"), isDirectory: false)], observed: [path("/d/n"): created]))
        h.send(.fileSystemChanged([.changed(path("/d/n"))], observed: [path("/d/n"): closed]))
        h.settle()
        return h.messages(to: file)
    }

    @Test func aNewFileSizedFirstAndFilledAfterIsAChangeToo() {
        // A downloader's way: the file made at its final size (ftruncate), then filled in place before its close.
        let sized = ItemStamp.present(inode: 7, size: 8, changeTime: 1_000)
        let filled = ItemStamp.present(inode: 7, size: 8, changeTime: 1_050)
        #expect(newFileClosed(created: sized, closed: filled) == [.presentedItemDidChange, .presentedItemDidChange])
    }

    @Test func aNewFileClosedAsItsCreationWasReadAppearsOnce() {
        // The same contents at both reads: what its presenters were told of is what the close left.
        let created = ItemStamp.present(inode: 7, size: 8, changeTime: 1_000)
        #expect(newFileClosed(created: created, closed: created) == [.presentedItemDidChange])
    }

    @Test func aNewEmptyFileTouchedAppearsOnce() {
        // `touch`: made empty, its times set after the creation was read, then closed: one appearance.
        let created = ItemStamp.present(inode: 7, size: 0, changeTime: 1_000)
        let closed = ItemStamp.present(inode: 7, size: 0, changeTime: 1_020)
        #expect(newFileClosed(created: created, closed: closed) == [.presentedItemDidChange])
    }

    @Test func aRenameMovesThePresenterAndTellsTheFolder() {
        let h = watchingHarness()
        let app = h.connect("app")
        let folder = h.present("/d", client: app)
        let file = h.present("/d/a", client: app)
        h.fs(.movedFrom(path("/d/a"), cookie: 1), .movedTo(path("/d/b"), cookie: 1, isDirectory: false))
        #expect(h.messages(to: file) == [.presentedItemDidMove(to: path("/d/b"))])
        #expect(h.messages(to: folder) == [.presentedSubitemDidMove(from: path("/d/a"), to: path("/d/b"))])
        #expect(h.arbiter.snapshot().presenters[file]?.path == path("/d/b"))
        #expect(h.arbiter.watchingSnapshot().statistics.pairedMoves == 1)
    }

    @Test func aRenamedDirectoryTakesItsPresentersAndTheirWatchesAlong() {
        let h = watchingHarness()
        let app = h.connect("app")
        let root = h.present("/r", client: app)
        let a = h.present("/r/D/a", client: app)
        let b = h.present("/r/D/sub/b", client: app)
        h.clearEffects()
        h.fs(.movedFrom(path("/r/D"), cookie: 3), .movedTo(path("/r/E"), cookie: 3, isDirectory: true))
        #expect(h.messages(to: a) == [.presentedItemDidMove(to: path("/r/E/a"))])
        #expect(h.messages(to: b) == [.presentedItemDidMove(to: path("/r/E/sub/b"))])
        #expect(h.messages(to: root) == [.presentedSubitemDidMove(from: path("/r/D"), to: path("/r/E"))])
        let watches = h.watchEffects
        // Every unwatch before any watch: the moved directory is one inode, its watch must survive.
        let firstWatch = watches.firstIndex { $0.hasPrefix("+") } ?? watches.endIndex
        #expect(watches[..<firstWatch].allSatisfy { $0.hasPrefix("-") })
        #expect(watches.contains("-/r/D") && watches.contains("+/r/E") && watches.contains("+/r/E/sub"))
    }

    @Test func aMoveToSomewhereUnwatchedIsADeletion() {
        let h = watchingHarness()
        let app = h.connect("app")
        let file = h.present("/d/f", client: app)
        h.fs(.movedFrom(path("/d/f"), cookie: 9))
        #expect(h.messages(to: file) == [.presentedItemDidChange])
        #expect(h.arbiter.snapshot().presenters[file]?.path == path("/d/f"))
    }

    @Test func onlyThePresenterOfTheChangedFileHearsAmongTwoHundred() {
        let h = watchingHarness()
        let app = h.connect("app")
        let presenters = (0..<200).map { h.present("/d/f\($0)", client: app) }
        h.fs(.changed(path("/d/f17")))
        h.settle()
        for (index, presenter) in presenters.enumerated() {
            #expect(h.messages(to: presenter) == (index == 17 ? [.presentedItemDidChange] : []))
        }
    }

    @Test func unimplementedCallbacksAreNotSent() {
        let h = watchingHarness()
        let app = h.connect("app")
        let folder = h.present("/d", client: app, callbacks: [.presentedSubitemDidMove])
        h.fs(.created(path("/d/n"), isDirectory: false))
        h.settle()
        #expect(h.messages(to: folder).isEmpty)
    }

    /// A change found between a presenter's registration and its watch (issue 37) is told to that presenter alone:
    /// did change for its item, subitem did change for an entry of its folder; nothing for a coordinated write's own.
    @Test func aChangeBeforeTheWatchIsToldToTheNewPresenterAlone() {
        let h = watchingHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let earlier = h.present("/d/f", client: app)
        let file = h.present("/d/f", client: app)
        let folder = h.present("/d", client: app)
        h.fs(.changedBeforeWatch(path("/d/f"), presenter: file))
        h.fs(.changedBeforeWatch(path("/d/g"), presenter: folder))
        h.fs(.changedBeforeWatch(path("/elsewhere"), presenter: folder))
        h.settle()
        #expect(h.messages(to: file) == [.presentedItemDidChange])
        #expect(h.messages(to: folder) == [.presentedSubitemDidChange(at: path("/d/g"))])
        #expect(h.messages(to: earlier).isEmpty)
        h.clearEffects()
        let write = h.write("/d/f", client: tool)
        h.answerAll()
        h.fs(.changedBeforeWatch(path("/d/f"), presenter: file))
        h.finish(write)
        h.clearEffects()
        h.fs(.changedBeforeWatch(path("/d/f"), presenter: file))
        h.settle()
        #expect(h.messages(to: file).isEmpty, "a coordinated write's own change was told by its claim")
    }

    /// A folder presenter that implements only did change hears its folder's changes as did change, once per burst
    /// (issue 37: macOS code written that way heard nothing).
    @Test func aFolderPresenterWithOnlyDidChangeHearsItsFolderChange() {
        let h = watchingHarness()
        let app = h.connect("app")
        let folder = h.present("/d", client: app, callbacks: [.presentedItemDidChange])
        h.fs(.created(path("/d/n"), isDirectory: false))
        h.settle()
        #expect(h.messages(to: folder) == [.presentedItemDidChange], "a creation: one did change")
        h.clearEffects()
        h.fs(.changed(path("/d/a")), .changed(path("/d/b")), .deleted(path("/d/c")))
        h.settle()
        #expect(
            h.messages(to: folder) == [.presentedItemDidChange, .presentedItemDidChange],
            "the first, then the burst"
        )
        h.clearEffects()
        h.fs(.movedFrom(path("/d/x"), cookie: 7), .movedTo(path("/d/y"), cookie: 7, isDirectory: false))
        h.settle()
        #expect(h.messages(to: folder) == [.presentedItemDidChange], "a rename inside it")
    }

    // MARK: Coalescing

    @Test func aBurstIsCoalescedAndTheLastNotificationComesAfterIt() {
        let h = watchingHarness()
        let app = h.connect("app")
        let file = h.present("/d/f", client: app)
        for index in 0..<100 {
            h.fs(.changed(path("/d/f")))
            if index % 25 == 24 && index < 99 { h.windowElapses() }
        }
        #expect(h.messages(to: file).count == 4)  // The first at once, then one per window that saw more.
        h.windowElapses()
        #expect(h.messages(to: file).count == 5)  // The one after the burst.
        h.settle()
        #expect(h.messages(to: file).count == 5)
        #expect(h.arbiter.watchingSnapshot().statistics.coalesced == 99)
        #expect(h.arbiter.watchingSnapshot().openWindows == 0)
    }

    @Test func theWindowTimerRunsOnlyWhileSomethingIsOpen() {
        let h = watchingHarness()
        let app = h.connect("app")
        h.present("/d/f", client: app)
        h.fs(.changed(path("/d/f")))
        #expect(h.lastEffects.contains(.startTimer(.fileSystemWindow, after: .milliseconds(50))))
        h.windowElapses()
        #expect(!h.lastEffects.contains { if case .startTimer = $0 { true } else { false } })
    }

    // MARK: Echoes of coordinated writes

    @Test func eventsUnderAGrantedWriteAreItsEchoes() {
        let h = watchingHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let file = h.present("/d/f", client: app)
        let write = h.write("/d/f", client: tool)
        h.answerAll()
        #expect(h.isGranted(write))
        h.clearEffects()
        h.fs(.changed(path("/d/f")))
        #expect(h.messages(to: file).isEmpty)
        h.finish(write)
        #expect(h.messages(to: file).filter { $0 == .presentedItemDidChange }.count == 1)
        // The event of the same write may come after the claim ended: still its echo.
        h.fs(.changed(path("/d/f")))
        #expect(h.messages(to: file).filter { $0 == .presentedItemDidChange }.count == 1)
        #expect(h.arbiter.watchingSnapshot().statistics.echoesSuppressed == 2)
        h.settle()
        // Once the echo retention is over, a write without coordination is reported again.
        h.fs(.changed(path("/d/f")))
        #expect(h.messages(to: file).filter { $0 == .presentedItemDidChange }.count == 2)
    }

    // Issue 37: a coordinated write's echo suppression never swallows a change another process makes after it.

    @Test func aChangeMadeRightAfterACoordinatedWriteIsReportedAndItsEchoIsNot() {
        let h = watchingHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let file = h.present("/d/f", client: app)
        let write = h.write("/d/f", client: tool)
        h.answerAll()
        let written = stamp(size: 10, at: 1_000)
        h.send(
            .claimFinished(write, created: [], outcome: WriteOutcome(endedAt: 1_001, items: [path("/d/f"): written]))
        )
        #expect(h.messages(to: file).filter { $0 == .presentedItemDidChange }.count == 1)
        // The write's own event, read after its end: the file is as the writer left it.
        h.send(.fileSystemChanged([.changed(path("/d/f"))], observed: [path("/d/f"): written]))
        #expect(h.messages(to: file).filter { $0 == .presentedItemDidChange }.count == 1)
        // Another process appends within the echo retention: reported.
        h.send(
            .fileSystemChanged(
                [.changed(path("/d/f"))],
                observed: [path("/d/f"): stamp(size: 12, at: 1_002)]
            )
        )
        #expect(h.messages(to: file).filter { $0 == .presentedItemDidChange }.count == 2)
        let statistics = h.arbiter.watchingSnapshot().statistics
        #expect(statistics.echoesSuppressed == 1 && statistics.changesAfterWrites == 1)
    }

    @Test func aChangeInTheSameClockTickThatLeavesAnotherStateIsReported() {
        let h = watchingHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let file = h.present("/d/f", client: app)
        let write = h.write("/d/f", client: tool)
        h.answerAll()
        h.send(
            .claimFinished(
                write,
                created: [],
                outcome: WriteOutcome(endedAt: 1_001, items: [path("/d/f"): stamp(size: 10, at: 1_000)])
            )
        )
        // The kernel's coarse clock gave the append the write's change time; its size tells it apart.
        h.send(
            .fileSystemChanged(
                [.changed(path("/d/f"))],
                observed: [path("/d/f"): stamp(size: 11, at: 1_000)]
            )
        )
        #expect(h.messages(to: file).filter { $0 == .presentedItemDidChange }.count == 2)
    }

    @Test func aChangeWhoseEventBeatTheWritesFinishIsReportedWhenTheWriteEnds() {
        let h = watchingHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let file = h.present("/d/f", client: app)
        let write = h.write("/d/f", client: tool)
        h.answerAll()
        h.clearEffects()
        // Read while the claim is still granted: an intermediate state of the write, then another process's append
        // made after the accessor returned (the finish is still on its way).
        h.send(
            .fileSystemChanged([.changed(path("/d/f"))], observed: [path("/d/f"): stamp(size: 5, at: 990)])
        )
        h.send(
            .fileSystemChanged(
                [.changed(path("/d/f"))],
                observed: [path("/d/f"): stamp(size: 12, at: 1_002)]
            )
        )
        #expect(h.messages(to: file).isEmpty)
        h.send(
            .claimFinished(
                write,
                created: [],
                outcome: WriteOutcome(endedAt: 1_001, items: [path("/d/f"): stamp(size: 10, at: 1_000)])
            )
        )
        // The write's own notification, and one for the append.
        #expect(h.messages(to: file).filter { $0 == .presentedItemDidChange }.count == 2)
        let statistics = h.arbiter.watchingSnapshot().statistics
        #expect(statistics.echoesSuppressed == 1, "\(statistics)")
        #expect(statistics.changesAfterWrites == 1)
    }

    @Test func eventsReadWhileAWriteRanAreItsEchoes() {
        let h = watchingHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let file = h.present("/d/f", client: app)
        let write = h.write("/d/f", client: tool)
        h.answerAll()
        for size in 1...3 {
            h.send(
                .fileSystemChanged(
                    [.changed(path("/d/f"))],
                    observed: [path("/d/f"): stamp(size: Int64(size), at: 990 + Int64(size))]
                )
            )
        }
        h.send(
            .claimFinished(
                write,
                created: [],
                outcome: WriteOutcome(endedAt: 1_001, items: [path("/d/f"): stamp(size: 10, at: 1_000)])
            )
        )
        #expect(h.messages(to: file).filter { $0 == .presentedItemDidChange }.count == 1)
        #expect(h.arbiter.watchingSnapshot().statistics.echoesSuppressed == 3)
    }

    @Test func insideAWrittenFolderAnEntryChangedAfterTheWriteIsReported() {
        let h = watchingHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let folder = h.present("/d", client: app)
        let write = h.write("/d", client: tool)
        h.answerAll()
        let written = ItemStamp.present(inode: 2, size: 3, changeTime: 1_000)
        h.send(.claimFinished(write, created: [], outcome: WriteOutcome(endedAt: 1_000, items: [path("/d"): written])))
        h.clearEffects()
        func created(_ name: String, at time: Int64, folder: ItemStamp) {
            h.send(
                .fileSystemChanged(
                    [.created(path("/d/\(name)"), isDirectory: false)],
                    observed: [path("/d/\(name)"): stamp(size: 0, at: time), path("/d"): folder]
                )
            )
        }
        // An entry the write made: changed before its end, its folder as the write left it.
        created("a", at: 999, folder: written)
        #expect(h.messages(to: folder).isEmpty)
        // Another process made one in the tick the write ended in: its folder is no longer as the write left it.
        created("b", at: 1_000, folder: .present(inode: 2, size: 4, changeTime: 1_000))
        #expect(h.messages(to: folder).contains(.presentedSubitemDidChange(at: path("/d/b"))))
        // One made later; and one removed later (its folder's change time says when).
        created("c", at: 1_001, folder: written)
        #expect(h.messages(to: folder).contains(.presentedSubitemDidChange(at: path("/d/c"))))
        h.send(
            .fileSystemChanged(
                [.deleted(path("/d/e"))],
                observed: [path("/d/e"): .absent, path("/d"): .present(inode: 2, size: 2, changeTime: 1_002)]
            )
        )
        #expect(h.messages(to: folder).contains(.presentedSubitemDidChange(at: path("/d/e"))))
        #expect(h.arbiter.watchingSnapshot().statistics.changesAfterWrites == 3)
    }

    @Test func aWriteHoldsABoundedNumberOfEvents() {
        let h = watchingHarness()
        let app = h.connect("app")
        let tool = h.connect("tool")
        let file = h.present("/d/f", client: app)
        let write = h.write("/d/f", client: tool)
        h.answerAll()
        for size in 1...1_000 {
            h.send(
                .fileSystemChanged(
                    [.changed(path("/d/f"))],
                    observed: [path("/d/f"): stamp(size: Int64(size), at: Int64(size))]
                )
            )
        }
        h.send(
            .claimFinished(
                write,
                created: [],
                outcome: WriteOutcome(endedAt: 2_000, items: [path("/d/f"): stamp(size: 2_000, at: 2_000)])
            )
        )
        #expect(h.messages(to: file).filter { $0 == .presentedItemDidChange }.count == 1)
        // Every event counted once: held and judged, or let go past the bound (as echoes).
        #expect(h.arbiter.watchingSnapshot().statistics.echoesSuppressed == 1_000)
    }

    // MARK: Overflow and exhaustion

    @Test func anOverflowTellsEveryWatchedPresenter() {
        let h = watchingHarness()
        let app = h.connect("app")
        let folder = h.present("/d", client: app)
        let file = h.present("/d/f", client: app)
        let elsewhere = h.present("/e/g", client: app)
        h.fs(.overflow)
        #expect(h.messages(to: folder) == [.presentedItemDidChange])
        #expect(h.messages(to: file) == [.presentedItemDidChange])
        #expect(h.messages(to: elsewhere) == [.presentedItemDidChange])
        #expect(h.arbiter.watchingSnapshot().statistics.overflows == 1)
    }

    @Test func aFailedWatchIsReportedToThePresentersThatNeedItOnce() {
        let h = watchingHarness()
        let app = h.connect("app")
        let file = h.present("/d/f", client: app)
        h.present("/e/g", client: app)
        h.fs(.watchFailed(path("/d"), reason: "cap reached"))
        h.fs(.watchFailed(path("/d"), reason: "cap reached"))
        let reports = h.effects.filter {
            if case .watchUnavailable(file, app, path("/d"), "cap reached") = $0 { true } else { false }
        }
        #expect(reports.count == 1)
        #expect(h.arbiter.watchingSnapshot().directories.first { $0.path == path("/d") }?.failure == "cap reached")
    }

    @Test func aDirectoryCreatedAfterItsWatchWasAskedForIsAskedForAgain() {
        let h = watchingHarness()
        let app = h.connect("app")
        let folder = h.present("/d/new", client: app)
        h.clearEffects()
        h.fs(.created(path("/d/new"), isDirectory: true))
        #expect(h.watchEffects == ["+/d/new"])
        #expect(h.messages(to: folder) == [.presentedItemDidChange])
    }
}
