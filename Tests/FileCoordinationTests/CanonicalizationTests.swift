import Dispatch
import FileCoordination
import Foundation
import Testing

// Canonical item identity on a case-sensitive file system (issue 14, docs/SEMANTICS.md §4): symbolic links in every
// component, `..` after a link, link cycles and chains, trailing slashes, Unicode normalisation, and
// `.resolvesSymbolicLink`. The case-insensitive half is CaseInsensitiveFileSystemTests.

@Suite struct CanonicalizationTests {
    /// Reads `url` and returns the error (its code) and whether the accessor ran.
    static func read(
        _ url: URL,
        options: NSFileCoordinator.ReadingOptions = []
    ) -> (error: NSError?, ran: Bool, url: URL?) {
        var error: NSError?
        var handed: URL?
        NSFileCoordinator().coordinate(readingItemAt: url, options: options, error: &error) { handed = $0 }
        return (error, handed != nil, handed)
    }

    static func write(_ url: URL, _ body: (URL) -> Void = { _ in }) -> NSError? {
        var error: NSError?
        NSFileCoordinator().coordinate(writingItemAt: url, options: [], error: &error) { body($0) }
        return error
    }

    static func link(_ link: URL, to target: String) throws {
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: target)
    }

    // MARK: Link cycles and chains (ELOOP)

    @Test(arguments: ["cycle", "selfLoop", "chain50"])
    func aLinkCycleOrALongChainFailsWithELOOPAndTheAccessorDoesNotRun(_ shape: String) throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let entry = dir.url.appendingPathComponent("l0")
        switch shape {
        case "cycle":
            try Self.link(entry, to: "l1")
            try Self.link(dir.url.appendingPathComponent("l1"), to: "l0")
        case "selfLoop":
            try Self.link(entry, to: "l0")
        default:
            _ = try dir.directory("real")
            for index in 0..<50 {
                let next = index == 49 ? "real" : "l\(index + 1)"
                try Self.link(dir.url.appendingPathComponent("l\(index)"), to: next)
            }
        }
        // As a directory on the way, for a plain read and a write; as the item itself, for a read that resolves it.
        let inside = entry.appendingPathComponent("doc.txt")
        let results: [(error: NSError?, ran: Bool, url: URL?)] = [
            Self.read(inside), Self.read(entry, options: .resolvesSymbolicLink), (Self.write(inside), false, nil),
        ]
        for result in results {
            let error = try #require(result.error)
            #expect(error.domain == FileCoordinationError.errorDomain)
            #expect(error.code == FileCoordinationError.Code.unresolvablePath.rawValue)
            #expect(error.localizedDescription.contains("ELOOP"))
            #expect(!result.ran)
        }
    }

    @Test func aChainOfFortyLinksIsFollowed() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let real = try dir.directory("real")
        for index in 0..<40 {
            let next = index == 39 ? "real" : "l\(index + 1)"
            try Self.link(dir.url.appendingPathComponent("l\(index)"), to: next)
        }
        let file = real.appendingPathComponent("doc.txt")
        let presenter = RecordingPresenter(url: file)
        withPresenters([presenter]) {
            #expect(Self.write(dir.url.appendingPathComponent("l0/doc.txt")) == nil)
            settle(presenter)
        }
        #expect(presenter.events == ["relinquishToWriter", "didChange", "reacquire"])
    }

    // MARK: Links in both directions, `..`, trailing slashes

    @Test func aPresenterSpelledThroughALinkHearsAWriterOfTheTarget() throws {
        let (dir, real, link) = try SymbolicLinkTests.makeLinkedDirectory()
        defer { dir.remove() }
        try Data("a".utf8).writeClosingOnExec(to: real.appendingPathComponent("doc.txt"))
        let viaLink = link.appendingPathComponent("doc.txt")
        let presenter = RecordingPresenter(url: viaLink)
        let folder = RecordingPresenter(url: link)
        withPresenters([presenter, folder]) {
            #expect(Self.write(real.appendingPathComponent("doc.txt")) == nil)
            settle(presenter, folder)
        }
        #expect(presenter.events == ["relinquishToWriter", "didChange", "reacquire"])
        // The folder hears of its subitem spelled through its own URL, the link, as its client spelled it.
        #expect(folder.events == ["subitemDidChange(\(viaLink.path))"])
    }

    @Test func dotDotAfterALinkedDirectoryLeavesTheLinksTarget() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let target = try dir.directory("a/b")
        _ = try dir.directory("c")
        try Self.link(dir.url.appendingPathComponent("c/link"), to: target.path)
        // c/link/../doc.txt is a/doc.txt for the kernel, not c/doc.txt as lexical standardising would have it.
        let real = dir.url.appendingPathComponent("a/doc.txt")
        try Data("a".utf8).writeClosingOnExec(to: real)
        let presenter = RecordingPresenter(url: real)
        let lexical = RecordingPresenter(url: dir.url.appendingPathComponent("c/doc.txt"))
        let spelled = URL(fileURLWithPath: dir.url.path + "/c/link/../doc.txt")
        var written = ""
        withPresenters([presenter, lexical]) {
            #expect(Self.write(spelled) { written = (try? String(contentsOf: $0, encoding: .utf8)) ?? "" } == nil)
            settle(presenter, lexical)
        }
        #expect(written == "a")
        #expect(presenter.events == ["relinquishToWriter", "didChange", "reacquire"])
        #expect(lexical.events.isEmpty)
    }

    @Test func trailingAndRepeatedSlashesAndDotsNameTheSameItem() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let folder = try dir.directory("folder")
        let presenter = RecordingPresenter(url: folder)
        withPresenters([presenter]) {
            #expect(Self.write(URL(fileURLWithPath: dir.url.path + "//folder/./")) == nil)
            settle(presenter)
        }
        #expect(presenter.events == ["relinquishToWriter", "didChange", "reacquire"])
    }

    // MARK: Unicode normalisation on a case-sensitive file system

    @Test func nfcAndNFDNamesAreTwoItems() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let nfc = dir.url.appendingPathComponent("caf\u{E9}.txt")
        let nfd = dir.url.appendingPathComponent("cafe\u{301}.txt")
        try Data("c".utf8).writeClosingOnExec(to: nfc)
        try Data("d".utf8).writeClosingOnExec(to: nfd)
        #expect(try String(contentsOf: nfc, encoding: .utf8) == "c")  // two files on disk
        let presenter = RecordingPresenter(url: nfc)
        withPresenters([presenter]) {
            #expect(Self.write(nfd) == nil)
            settle(presenter)
            #expect(presenter.events.isEmpty)
            #expect(Self.write(nfc) == nil)
            settle(presenter)
        }
        #expect(presenter.events == ["relinquishToWriter", "didChange", "reacquire"])
    }

    // MARK: .resolvesSymbolicLink

    @Test func resolvesSymbolicLinkHandsTheTargetAndOnlyThenAsksItsPresenters() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let target = try dir.file("target.txt")
        let link = dir.url.appendingPathComponent("link.txt")
        try Self.link(link, to: "target.txt")
        let presenter = RecordingPresenter(url: target)
        withPresenters([presenter]) {
            let plain = Self.read(link)
            #expect(plain.error == nil)
            #expect(plain.url == link)
            settle(presenter)
            #expect(presenter.events.isEmpty)
            let resolved = Self.read(link, options: .resolvesSymbolicLink)
            #expect(resolved.error == nil)
            #expect(resolved.url?.path == target.path)
            settle(presenter)
        }
        #expect(presenter.events == ["relinquishToReader", "save", "reacquire"])
    }
}
