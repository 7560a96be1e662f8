// Behaviour of the three presenter styles and the intents and prepare callers in Shared/PresenterStyles.swift: each
// style's own methods are the ones called (not the library's defaults), in this target's language mode.

import Foundation
import Testing

#if canImport(FileCoordination)
import FileCoordination
#endif

@Suite(.serialized)
struct PresenterStyleTests {
    /// A fresh file in a folder of its own.
    private func makeFile(_ contents: String = "hello") throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ported-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent("document.txt")
        try contents.write(to: url, atomically: false, encoding: .utf8)
        return url
    }

    /// Registers `presenter`, writes and reads its file through other coordinators, and checks what it heard.
    private func checkStyle(_ presenter: any NSFilePresenter, prefix: String, log: CallLog) throws {
        NSFileCoordinator.addFilePresenter(presenter)
        defer { NSFileCoordinator.removeFilePresenter(presenter) }
        let url = try #require(presenter.presentedItemURL)

        var error: NSError?
        NSFileCoordinator(filePresenter: nil).coordinate(writingItemAt: url, options: [], error: &error) { writeURL in
            try? "changed".write(to: writeURL, atomically: false, encoding: .utf8)
        }
        #expect(error == nil)
        #expect(log.wait(for: "\(prefix).relinquishToWriter"))
        #expect(log.wait(for: "\(prefix).reacquireAfterWrite"))
        #expect(log.wait(for: "\(prefix).didChange"))

        var text: String?
        NSFileCoordinator(filePresenter: nil).coordinate(readingItemAt: url, options: [], error: &error) { readURL in
            text = try? String(contentsOf: readURL, encoding: .utf8)
        }
        #expect(error == nil)
        #expect(text == "changed")
        #expect(log.wait(for: "\(prefix).relinquishToReader"))
        #expect(log.wait(for: "\(prefix).save"))
        #expect(log.wait(for: "\(prefix).reacquireAfterRead"))
        // Relinquish comes before save, as docs/SEMANTICS.md §3 orders them for a read.
        let heard = log.all
        let relinquish = try #require(heard.firstIndex(of: "\(prefix).relinquishToReader"))
        let save = try #require(heard.firstIndex(of: "\(prefix).save"))
        #expect(relinquish < save)
    }

    @Test func plainClosureWitnessesAreCalled() throws {
        let log = CallLog()
        try checkStyle(PlainClosurePresenter(url: makeFile(), log: log), prefix: "plain", log: log)
    }

    @Test func sendableOuterClosureWitnessesAreCalled() throws {
        let log = CallLog()
        try checkStyle(SendableOuterPresenter(url: makeFile(), log: log), prefix: "outer", log: log)
    }

    @Test func fullySendableWitnessesAreCalled() throws {
        let log = CallLog()
        try checkStyle(FullySendablePresenter(url: makeFile(), log: log), prefix: "full", log: log)
    }

    @Test func deletionIsAccommodatedByEachStyle() throws {
        let log = CallLog()
        let presenters: [(any NSFilePresenter, String)] = [
            (PlainClosurePresenter(url: try makeFile(), log: log), "plain"),
            (SendableOuterPresenter(url: try makeFile(), log: log), "outer"),
            (FullySendablePresenter(url: try makeFile(), log: log), "full"),
        ]
        for (presenter, prefix) in presenters {
            NSFileCoordinator.addFilePresenter(presenter)
            defer { NSFileCoordinator.removeFilePresenter(presenter) }
            let url = try #require(presenter.presentedItemURL)
            var error: NSError?
            NSFileCoordinator(filePresenter: nil).coordinate(writingItemAt: url, options: .forDeleting, error: &error) {
                try? FileManager.default.removeItem(at: $0)
            }
            #expect(error == nil)
            #expect(log.wait(for: "\(prefix).accommodateDeletion"))
        }
    }

    @Test func intentsCallerReadsTheFile() throws {
        let url = try makeFile("through intents")
        let model = DocumentModel()
        let done = DispatchSemaphore(value: 0)
        let outcome = CallLog()
        loadWithIntents(url, into: model) { error in
            outcome.append(error == nil ? "ok" : "failed: \(String(describing: error))")
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(outcome.all == ["ok"])
        #expect(model.text == "through intents")
    }

    @Test func prepareCallerReadsEveryFile() throws {
        let urls = [try makeFile("a"), try makeFile("b")]
        let model = DocumentModel()
        // prepare returns when its block returns, as on macOS (issue 30): the handler runs later, on the queue.
        let finished = DispatchSemaphore(value: 0)
        #expect(loadAll(urls, into: model, finished: { finished.signal() }) == nil)
        #expect(finished.wait(timeout: .now() + 10) == .success)
        #expect(model.loadedURLs.count == 2)
        #expect(model.text == "loaded 2")
    }
}
