import FCCore
import Testing

@testable import FCDaemon

/// A write through a watched directory's name of a linked file is reported once, though the directory's event and
/// the file's own may be read in two batches (the duplicate was looked for within one batch only before).
@Suite struct LinkedWriteEchoesTests {
    private static let a = try! ItemPath(absolute: "/f/d/a.txt")
    private static let c = try! ItemPath(absolute: "/f/g/c.txt")

    @Test func anEchoReadInTheNextBatchIsDropped() {
        var echoes = LinkedWriteEchoes()
        echoes.directWrite(of: Self.a, watchedBy: 7)
        echoes.endBatch()
        let echo1 = echoes.isEcho(of: Self.a, watchedBy: 7)
        #expect(echo1)
        let echo2 = echoes.isEcho(of: Self.a, watchedBy: 7)
        #expect(!echo2, "one echo per write")
        let echo3 = echoes.isEcho(of: Self.c, watchedBy: 7)
        #expect(!echo3, "another name of the file is reported")
    }

    @Test func twoWritesAwaitTwoEchoesAndAWriteThroughAnotherNameIsNotAnEcho() {
        var echoes = LinkedWriteEchoes()
        let echo4 = echoes.isEcho(of: Self.a, watchedBy: 7)
        #expect(!echo4, "a write through a name elsewhere, before any")
        echoes.directWrite(of: Self.a, watchedBy: 7)
        echoes.directWrite(of: Self.a, watchedBy: 7)
        let echo5 = echoes.isEcho(of: Self.a, watchedBy: 7)
        #expect(echo5)
        let echo6 = echoes.isEcho(of: Self.a, watchedBy: 7)
        #expect(echo6)
        #expect(echoes.count == 0)
    }

    @Test func anEchoThatNeverComesIsGivenUpAfterTheNextBatchAndOneOfAGoneWatchAtOnce() {
        var echoes = LinkedWriteEchoes()
        echoes.directWrite(of: Self.a, watchedBy: 7)
        echoes.directWrite(of: Self.c, watchedBy: 9)
        echoes.forget(9)
        #expect(echoes.count == 1)
        echoes.endBatch()
        #expect(echoes.count == 1)
        echoes.endBatch()
        #expect(echoes.count == 0)
        let echo7 = echoes.isEcho(of: Self.a, watchedBy: 7)
        #expect(!echo7, "a later write through another name is reported")
    }
}
