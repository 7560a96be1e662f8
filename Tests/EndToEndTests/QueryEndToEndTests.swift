import Foundation
import Testing

// Live queries of folder trees (issue 44; docs/SEMANTICS.md §18): NSMetadataQuery in fc-testhost processes, the tree
// gathered and watched by a real filecoordd, changed by `sh`.

@Suite struct QueryEndToEndTests {
    /// A tree of `count` files in two folders, `a/` and `b/`.
    private static func tree(_ env: TestEnvironment, files count: Int) throws -> String {
        let root = env.path("tree")
        for folder in ["a", "b"] {
            try FileManager.default.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
        }
        for index in 0..<count {
            let folder = index % 2 == 0 ? "a" : "b"
            _ = FileManager.default.createFile(atPath: "\(root)/\(folder)/f\(index)", contents: Data("x".utf8))
        }
        return root
    }

    /// A daemon, a tree of 10 files with `notes.txt` beside them, and a query `T` of it in a host that keeps the names
    /// ending in `.txt` in any case, gathered (one result).
    private static func textQuery(_ env: TestEnvironment) async throws -> (root: String, host: HostProcess) {
        _ = try await env.startDaemon()
        let root = try tree(env, files: 10)
        try writeText("text", toFile: root + "/notes.txt")
        let host = try await env.host("Q")
        try host.send("query T \(root) 100 kMDItemFSName LIKE[c] '*.TXT'")
        _ = try await host.waitFor("query T gathered 1")
        return (root, host)
    }

    /// `fcdump queries` once it shows `text`, or its last output after about 10 s.
    private static func fcdumpQueries(_ env: TestEnvironment, showing text: String) async throws -> String {
        var output = ""
        for _ in 0..<500 {
            output = try await env.runTool("fcdump", ["queries"]).output
            if output.contains(text) { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        return output
    }

    @Test("A query gathers 10,000 files, then reports a shell's create, change, rename and delete once, in one batch")
    func gathersThenReportsChanges() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let root = try Self.tree(env, files: 10_000)
            let host = try await env.host("Q")
            try host.send("query Q \(root) 500")
            _ = try await host.waitFor("query Q started")
            // The files and the two folders.
            _ = try await host.waitFor("query Q gathered 10002")
            try runToCompletion(
                "/bin/sh",
                ["-c", "cd '\(root)' && echo new > new.txt && echo more >> a/f0 && mv a/f2 a/renamed && rm b/f1"]
            )
            let update = try await host.waitFor("query Q update ")
            #expect(update.text == "query Q update added=a/renamed,new.txt changed=a/f0 removed=a/f2,b/f1")
            #expect(try await host.staysWithout("query Q update ", count: 2), "a change was reported twice")
            try host.send("query-count Q")
            _ = try await host.waitFor("query Q count 10002")
        }
    }

    @Test("A file truncated and one whose times are set, neither closed after a write, are each one change")
    func changesWithoutAFinishedWriteAreReported() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let root = try Self.tree(env, files: 10)
            let host = try await env.host("Q")
            try host.send("query Q \(root) 500")
            _ = try await host.waitFor("query Q gathered 12")
            // truncate(2) and utime(2) by path: no file is opened for writing, so no IN_CLOSE_WRITE (told only since
            // the watcher holds IN_MODIFY and IN_ATTRIB until they settle).
            try runToCompletion(
                "/usr/bin/python3",
                [
                    "-c", "import os, sys; os.truncate(sys.argv[1], 0); os.utime(sys.argv[2], (0, 978307200))",
                    root + "/a/f0", root + "/b/f1",
                ]
            )
            let update = try await host.waitFor("query Q update ")
            #expect(update.text == "query Q update added=- changed=a/f0,b/f1 removed=-")
            #expect(try await host.staysWithout("query Q update ", count: 2), "a change was reported twice")
        }
    }

    @Test("A gathering far bigger than a connection's queue limit arrives whole: its pieces go one at a time")
    func aBigGatheringRespectsTheQueueLimit() async throws {
        try await TestEnvironment.run { env in
            // 10,000 items are five pieces of about 150 KB; at most 64 KiB may wait for a client. Written at once,
            // they made the daemon close the connection as a client that does not read.
            _ = try await env.startDaemon(arguments: ["--max-queued-bytes", "65536"])
            let root = try Self.tree(env, files: 10_000)
            let host = try await env.host("Q")
            try host.send("query Q \(root) 100")
            _ = try await host.waitFor("query Q gathered 10002")
            try runToCompletion("/bin/sh", ["-c", "echo x > '\(root)/late.txt'"])
            _ = try await host.waitFor("query Q update added=late.txt")
        }
    }

    @Test("Two names that differ only in Unicode normalisation are two results, each removed on its own")
    func namesAreBytes() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let root = env.path("names")
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            // "café" composed (é one code point) and decomposed (e and a combining accent): two files on Linux.
            try runToCompletion(
                "/bin/sh",
                ["-c", "cd '\(root)' && touch \"$(printf 'caf\\303\\251')\" \"$(printf 'cafe\\314\\201')\""]
            )
            let host = try await env.host("Q")
            try host.send("query N \(root) 100")
            // A result set keyed by `String` took the two for one item (`String` equality is canonical equivalence).
            _ = try await host.waitFor("query N gathered 2")
            try runToCompletion("/bin/sh", ["-c", "cd '\(root)' && rm \"$(printf 'cafe\\314\\201')\""])
            let update = try await host.waitFor("query N update ")
            #expect(update.text.hasPrefix("query N update added=- changed=- removed=cafe\u{301}"), "\(update.text)")
            try host.send("query-count N")
            _ = try await host.waitFor("query N count 1")
        }
    }

    @Test("Names that are not UTF-8 are gathered, changed and watched; index(ofResult:) finds an item by its bytes")
    func indexOfResultComparesBytes() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let root = env.path("invalid")
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            // Two names that are not UTF-8 (bytes 0xFE and 0xFF): both decode to the same replacement character. And
            // a folder so named, with a file: listed by a `String` path, it could not be opened.
            try runToCompletion(
                "/bin/sh",
                [
                    "-c",
                    "cd '\(root)' && touch \"$(printf '\\376')\" \"$(printf '\\377')\" && mkdir \"$(printf 'd\\376')\" "
                        + "&& touch \"$(printf 'd\\376/f')\"",
                ]
            )
            let host = try await env.host("Q")
            try host.send("query I \(root) 0")
            _ = try await host.waitFor("query I gathered 4")
            try host.send("query-keep I")
            _ = try await host.waitFor("query I kept 4")
            // In byte order the results are `d\xFE`, `d\xFE/f`, `\xFE` and `\xFF`. A change replaces the last with a new
            // object: the kept one is found by its path alone. Its `lstat` by a `String` path found nothing, and the
            // change was told as a removal.
            try runToCompletion("/bin/sh", ["-c", "cd '\(root)' && echo x >> \"$(printf '\\377')\""])
            let update = try await host.waitFor("query I update ")
            #expect(update.text == "query I update added=- changed=\u{FFFD} removed=-")
            try host.send("query-index I")
            // Compared by their decodings, the kept last item was found at 2, the place of `\xFE`.
            let line = try await host.waitFor("query I index ")
            #expect(line.text == "query I index 0,1,2,3")
            // The folder is watched: spelled as a `String`, inotify_add_watch found no such directory.
            try runToCompletion("/bin/sh", ["-c", "cd '\(root)' && touch \"$(printf 'd\\376/g')\""])
            let created = try await host.waitFor("query I update ", count: 2)
            #expect(created.text == "query I update added=d\u{FFFD}/g changed=- removed=-")
        }
    }

    @Test("A predicate filters the items; an item that stops matching is removed")
    func predicateFilters() async throws {
        try await TestEnvironment.run { env in
            let (root, host) = try await Self.textQuery(env)
            try runToCompletion("/bin/sh", ["-c", "cd '\(root)' && echo x > b/more.txt && mv notes.txt notes.md"])
            let update = try await host.waitFor("query T update ")
            #expect(update.text == "query T update added=b/more.txt changed=- removed=notes.txt")
        }
    }

    /// A small frame of changes may be read on the connection's reading thread, but only for a predicate of the
    /// library's own (none, or one made from a format): a block is the app's code, and one that made a coordinated
    /// call there would wait for the very thread that reads its reply. Checked on the listener (the thread that reads
    /// when no call waits, as here); a caller blocked in a call reads too, through the same rule.
    @Test("A query's block predicate never runs on the library's reading thread")
    func aBlockPredicateNeverRunsOnTheReader() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let root = try Self.tree(env, files: 10)
            let host = try await env.host("Q")
            try host.send("query-block B \(root)")
            _ = try await host.waitFor("query B gathered 12")
            // One create at a time, each told before the next: the query's queue is idle when each frame comes.
            for index in 0..<6 {
                try runToCompletion("/bin/sh", ["-c", "echo x > '\(root)/new\(index)'"])
                _ = try await host.waitFor("query B update added=new\(index) changed=")
            }
            try host.send("query-threads B")
            let calls = try await host.waitFor("query B block calls ")
            #expect(calls.text.hasSuffix(" on the reader 0"), "\(calls.text)")
            #expect(!calls.text.hasPrefix("query B block calls 0 "), "\(calls.text)")
        }
    }

    /// The daemon sends every item and the client filters: the client tells the daemon its count (`QueryResults`,
    /// revision 8) when it changes, at most once a second, for fcdump.
    @Test("fcdump shows each live query's result count, after its predicate, as it changes")
    func fcdumpShowsResultCounts() async throws {
        try await TestEnvironment.run { env in
            let (root, host) = try await Self.textQuery(env)
            let gathered = try await Self.fcdumpQueries(env, showing: "): 1 result\n")
            #expect(gathered.contains("\(root)\n    13 items, 3 folders watched\n"), "\(gathered)")
            #expect(gathered.contains(" of fc-testhost (pid ") && gathered.contains("): 1 result\n"), "\(gathered)")
            try runToCompletion("/bin/sh", ["-c", "cd '\(root)' && echo x > b/more.txt && echo y > a/other.TXT"])
            _ = try await host.waitFor("query T update ")
            let changed = try await Self.fcdumpQueries(env, showing: "): 3 results\n")
            #expect(changed.contains("): 3 results\n"), "\(changed)")
        }
    }

    /// Before, a query whose tree's folder could not be watched was not told: it went on as if live, deaf to changes
    /// in that folder.
    @Test("A folder of a query's tree past the daemon's watch cap is told to the query's client and counted by fcdump")
    func aFolderThatCannotBeWatchedIsTold() async throws {
        try await TestEnvironment.run { env in
            // The tree's root and one of `a` and `b` are watched; the other is one too many.
            _ = try await env.startDaemon(arguments: ["--max-watches", "2"])
            let root = try Self.tree(env, files: 10)
            let host = try await env.host("Q")
            try host.send("query Q \(root) 100")
            _ = try await host.waitFor("query Q gathered 12")
            try await eventually("the client to report the folder not watched:\n\(host.standardError())") {
                host.standardError().contains("will not reach a live query")
                    && ["a", "b"].contains { host.standardError().contains("item.path=\(root)/\($0) ") }
            }
            let dump = try await Self.fcdumpQueries(env, showing: "could not be")
            #expect(
                dump.contains(
                    "\(root)\n    12 items, 3 folders watched (1 could not be: changes in them are not told)\n"
                ),
                "\(dump)"
            )
            // The folders watched still report.
            try runToCompletion("/bin/sh", ["-c", "echo x > '\(root)/new'"])
            let update = try await host.waitFor("query Q update ")
            #expect(update.text == "query Q update added=new changed=- removed=-", "\(update.text)")
        }
    }

    @Test("A query of a daemon that does not watch the file system is told its folders are not watched")
    func aQueryOfADaemonThatDoesNotWatchIsTold() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon(arguments: ["--no-watching"])
            let root = try Self.tree(env, files: 4)
            let host = try await env.host("Q")
            try host.send("query Q \(root) 100")
            _ = try await host.waitFor("query Q gathered 6")
            try await eventually("the client to report the query's folders not watched:\n\(host.standardError())") {
                host.standardError().contains("will not reach a live query")
                    && host.standardError().contains("does not watch the file system")
            }
        }
    }

    @Test("A folder deleted and made again at once is watched anew: what is made in it later is reported")
    func aFolderMadeAgainIsWatched() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let root = try Self.tree(env, files: 10)
            let host = try await env.host("Q")
            try host.send("query R \(root) 100")
            _ = try await host.waitFor("query R gathered 12")
            // The daemon reads the deletion's event once `a` is there again: before, it took it for a change of `a`,
            // so the new `a` (whose watch the kernel had not) was neither watched nor listed.
            try runToCompletion("/bin/sh", ["-c", "cd '\(root)' && rm -r a && mkdir a && echo x > a/one"])
            _ = try await host.waitFor(lineMatching: { $0.hasPrefix("query R update") && $0.contains("a/one") })
            try runToCompletion("/bin/sh", ["-c", "echo y > '\(root)/a/two'"])
            let later = try await host.waitFor(lineMatching: { $0.hasPrefix("query R update") && $0.contains("a/two") })
            #expect(later.text.contains("added=a/two"), "\(later.text)")
            try host.send("query-count R")
            _ = try await host.waitFor("query R count 9")
        }
    }

    @Test("Two processes querying one tree share its gathering and its watches; a folder made later is watched")
    func queriesShareOneTree() async throws {
        try await TestEnvironment.run { env in
            _ = try await env.startDaemon()
            let root = try Self.tree(env, files: 100)
            let first = try await env.host("A")
            let second = try await env.host("B")
            try first.send("query A \(root) 100")
            _ = try await first.waitFor("query A gathered 102")
            try second.send("query B \(root) 100")
            _ = try await second.waitFor("query B gathered 102")
            let dump = try await env.runTool("fcdump", ["queries"])
            #expect(dump.output.contains("\(root)\n    102 items, 3 folders watched\n"), "\(dump.output)")
            #expect(dump.output.components(separatedBy: "\n    query ").count == 3, "\(dump.output)")
            // A folder made with a file in it at once: both are added, and what is made in it later is seen.
            try runToCompletion("/bin/sh", ["-c", "mkdir -p '\(root)/c/d' && echo x > '\(root)/c/d/one'"])
            _ = try await first.waitFor(lineMatching: { $0.hasPrefix("query A update") && $0.contains("c/d/one") })
            try runToCompletion("/bin/sh", ["-c", "echo y > '\(root)/c/d/two'"])
            let later = try await second.waitFor(
                lineMatching: { $0.hasPrefix("query B update") && $0.contains("c/d/two") }
            )
            // Added (in the same batch as c, c/d and one when B's interval had not ended before two was made).
            let added = later.text.components(separatedBy: " ").first { $0.hasPrefix("added=") }
            #expect(added?.dropFirst("added=".count).split(separator: ",").contains("c/d/two") == true, "\(later.text)")
            // Stopped: the other query goes on; both stopped: the tree's watches go.
            try first.send("query-stop A")
            _ = try await first.waitFor("query A stopped")
            try second.send("query-stop B")
            _ = try await second.waitFor("query B stopped")
            let after = try await Self.fcdumpQueries(env, showing: "no live queries")
            #expect(after.contains("no live queries"), "\(after)")
        }
    }
}
