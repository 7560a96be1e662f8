import Foundation
import Testing

// File progress across processes (issue 44; docs/SEMANTICS.md §16): a Progress published in one fc-testhost and
// followed, cancelled, paused and resumed from another, through a real filecoordd.

@Suite struct ProgressEndToEndTests {
    @Test("A subscriber of a folder follows a progress published about a file in it, and controls it")
    func subscriberFollowsAndControls() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let folder = env.path("downloads")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let file = folder + "/movie.mp4"
            let publisher = try await env.host("A")
            let subscriber = try await env.host("B")
            try subscriber.send("subscribe S \(folder)")
            _ = try await subscriber.waitFor("subscribed S")
            try publisher.send("publish P \(file) 100 cancellable pausable downloading")
            _ = try await publisher.waitFor("published P")
            let appeared = try await subscriber.waitFor("subscriber S appeared \(file) ")
            #expect(
                appeared.text
                    == "subscriber S appeared \(file) 0/100 cancellable,pausable,-,- NSProgressKindFile "
                    + "NSProgressFileOperationKindDownloading"
            )
            try publisher.send("progress-set P 40")
            _ = try await subscriber.waitFor("subscriber S state \(file) 40/100 cancellable,pausable,-,-")
            // fcdump shows, per item, the publisher with its state and the subscriber.
            let dump = try await env.runTool("fcdump", ["progress"])
            #expect(dump.status == 0, "fcdump progress failed: \(dump.error)")
            let expected = [
                "\(file)\n    published progress#1 by fc-testhost (pid \(publisher.pid), client#",
                "): 40 of 100 (40%), downloading\n",
                "\(folder)\n    subscribed by fc-testhost (pid \(subscriber.pid), client#",
            ]
            for text in expected { #expect(dump.output.contains(text), "no \"\(text)\" in:\n\(dump.output)") }
            let json = try await env.runTool("fcdump", ["--json"])
            #expect(json.output.contains("\"completedUnitCount\" : 40"), "no progress in:\n\(json.output)")
            try subscriber.send("proxy-pause S")
            _ = try await publisher.waitFor("progress P paused")
            _ = try await subscriber.waitFor("subscriber S state \(file) 40/100 cancellable,pausable,-,paused")
            try subscriber.send("proxy-resume S")
            _ = try await publisher.waitFor("progress P resumed")
            try subscriber.send("proxy-cancel S")
            _ = try await publisher.waitFor("progress P cancelled")
            try publisher.send("unpublish P")
            _ = try await subscriber.waitFor("subscriber S unpublished \(file)")
        }
    }

    @Test("A subscription matches its item and the items directly inside it, nothing deeper, from before or after")
    func matchingRule() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let top = env.path("top")
            let inner = top + "/inner"
            try FileManager.default.createDirectory(atPath: inner, withIntermediateDirectories: true)
            let file = inner + "/a.bin"
            let publisher = try await env.host("A")
            try publisher.send("publish P \(file) 10 copying")
            _ = try await publisher.waitFor("published P")
            let subscriber = try await env.host("B")
            // Subscribed after the publication: each matching subscription is handed it at once.
            try subscriber.send("subscribe Deep \(top)")
            try subscriber.send("subscribe Folder \(inner)")
            try subscriber.send("subscribe File \(file)")
            _ = try await subscriber.waitFor("subscriber Folder appeared \(file) 0/10")
            _ = try await subscriber.waitFor("subscriber File appeared \(file) 0/10")
            // A later publication reaches the subscriptions that are there (the daemon handles frames in order, so
            // once the file's subscription heard of the second one, the grandparent would have too).
            try publisher.send("publish Q \(inner)/b.bin 5")
            _ = try await subscriber.waitFor("subscriber Folder appeared \(inner)/b.bin 0/5")
            try subscriber.send("subscribe Late \(inner)/b.bin")
            _ = try await subscriber.waitFor("subscriber Late appeared \(inner)/b.bin 0/5")
            #expect(!subscriber.lines.contains { $0.text.hasPrefix("subscriber Deep appeared") })
            #expect(!subscriber.lines.contains { $0.text.hasPrefix("subscriber File appeared \(inner)/b.bin") })
            // Removed: no more proxies, and no unpublishing handler for what it was handed.
            try subscriber.send("unsubscribe Folder")
            _ = try await subscriber.waitFor("unsubscribed Folder")
            try publisher.send("unpublish Q")
            _ = try await subscriber.waitFor("subscriber Late unpublished \(inner)/b.bin")
            #expect(!subscriber.lines.contains { $0.text.hasPrefix("subscriber Folder unpublished") })
        }
    }

    @Test("A publisher that dies unpublishes: the subscriber's unpublishing handler runs")
    func publisherDeathUnpublishes() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let file = try env.file("upload.txt", "x")
            let publisher = try await env.host("A")
            try publisher.send("publish P \(file) 3 uploading")
            _ = try await publisher.waitFor("published P")
            let subscriber = try await env.host("B")
            try subscriber.send("subscribe S \(file)")
            _ = try await subscriber.waitFor("subscriber S appeared \(file) 0/3")
            try await publisher.kill9()
            _ = try await subscriber.waitFor("subscriber S unpublished \(file)")
        }
    }

    /// A copy so quick that it unpublishes before the library's queue has sent its publish: the subscriber still sees
    /// it appear, then go (it was lost when the publish found the publication gone: the notes editor's count of the
    /// mirror's copies stayed behind on a loaded machine).
    @Test("A progress unpublished right after its publish still appears to its subscriber, then goes")
    func publishedAndUnpublishedAtOnce() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let file = try env.file("copy.txt", "x")
            let subscriber = try await env.host("B")
            try subscriber.send("subscribe S \(file)")
            _ = try await subscriber.waitFor("subscribed S")
            let publisher = try await env.host("A")
            // The daemon has the subscription before any publication: a quick copy is not missed for coming first.
            let listing = try await env.progressListing { $0.contains("subscribed by") }
            #expect(listing.contains("subscribed by"), "\(listing)")
            for round in 1...20 {
                try publisher.send("publish Q\(round) \(file) 3 copying unpublish-at-once")
                _ = try await publisher.waitFor("published and unpublished Q\(round)")
            }
            try await eventually("every quick copy to appear and go") {
                subscriber.lines.filter { $0.text.hasPrefix("subscriber S unpublished ") }.count == 20
            }
            #expect(subscriber.lines.filter { $0.text.hasPrefix("subscriber S appeared ") }.count == 20)
        }
    }

    @Test("A million increments cost the publisher nothing extra and its subscriber a few updates")
    func updatesAreCoalesced() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let file = try env.file("big.iso", "x")
            let publisher = try await env.host("A")
            try publisher.send("publish P \(file) 1000000")
            _ = try await publisher.waitFor("published P")
            let subscriber = try await env.host("B")
            try subscriber.send("subscribe S \(file)")
            _ = try await subscriber.waitFor("subscriber S appeared \(file) 0/1000000")
            let start = ContinuousClock.now
            try publisher.send("progress-count P 1000000")
            let counted = try await publisher.waitFor("counted P ")
            _ = try await subscriber.waitFor("subscriber S state \(file) 1000000/1000000")
            let elapsed = ContinuousClock.now - start
            try subscriber.send("proxy-updates S")
            let updates = try await subscriber.waitFor("proxy-updates S ")
            let received = Int(updates.text.split(separator: " ").last ?? "") ?? -1
            // The publisher samples every 100 ms: at most one update per tick (and a first one), however many
            // increments happened in between.
            let ticks = Int(elapsed / .milliseconds(100)) + 2
            #expect(received >= 1 && received <= ticks, "\(received) updates in \(elapsed)")
            // Nothing is sent from the publisher's thread: an increment costs what Progress itself costs.
            let nanoseconds = Double(counted.text.split(separator: " ").last ?? "") ?? .infinity
            #expect(nanoseconds < 5_000, "\(nanoseconds) ns per increment")
        }
    }
}

extension TestEnvironment {
    /// `fcdump progress` read again every 20 ms until `condition` holds of it (10 s at most); the last listing, to
    /// check and to print. A subscription is sent from the library's queue after `addSubscriber` returns.
    func progressListing(until condition: (String) -> Bool) async throws -> String {
        var listing = ""
        for _ in 0..<500 where !condition(listing) {
            listing = try await runTool("fcdump", ["progress"]).output
            try await Task.sleep(for: .milliseconds(20))
        }
        return listing
    }
}
