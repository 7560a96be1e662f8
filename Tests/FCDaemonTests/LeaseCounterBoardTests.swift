import FCCore
import Foundation
import Testing

@testable import FCDaemon

#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Musl)
@preconcurrency import Musl
#endif

/// ``LeaseCounterBoard``'s rules (issue 42; docs/PROTOCOL.md section 10.1), with the client's side played by this
/// test on its own mapping of the counter file: a recall with nothing counted returns the lease at once, one with a
/// claim counted waits for the client's `LeaseCounterIdle` or the longest hold, and a counter is handed to a new lease
/// only when its word says nothing of the old one runs.
@Suite final class LeaseCounterBoardTests {
    static let recalled: UInt64 = 1 << 63

    /// The client's view: the counter file mapped shared, as the preload library maps it.
    final class ClientMapping {
        let words: UnsafeMutablePointer<UInt64>

        init(_ path: String) throws {
            let descriptor = open(path, O_RDWR | O_CLOEXEC)
            guard descriptor >= 0 else { throw CocoaError(.fileNoSuchFile) }
            defer { close(descriptor) }
            let length = LeaseCounterBoard.wordsPerFile * 8
            let mapped = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0)
            guard let mapped, mapped != MAP_FAILED else { throw CocoaError(.fileReadUnknown) }
            words = mapped.assumingMemoryBound(to: UInt64.self)
        }

        deinit { munmap(words, LeaseCounterBoard.wordsPerFile * 8) }
    }

    /// A folder of this test's own, with the daemon's socket path in it, and the board of that daemon.
    let folder: String
    let board: LeaseCounterBoard

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("lease-counters-\(UUID())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        board = LeaseCounterBoard(socketPath: folder + "/socket")
    }

    deinit { try? FileManager.default.removeItem(atPath: folder) }

    /// Client `id`, registered as keeping counters (its process: this one, unless said).
    func registered(_ id: UInt64, pid: Int32 = getpid(), hold: Duration = .seconds(30)) -> ClientID {
        board.register(ClientID(id), pid: pid, maximumHold: hold)
        return ClientID(id)
    }

    @Test func aRecallWaitsForTheCountedClaimAndTheClientsIdle() throws {
        let client = registered(7)
        let placement = try #require(board.place(LeaseID(1), of: client))
        #expect(placement.file.hasPrefix(folder + "/lease-counters/"))
        let mapping = try ClientMapping(placement.file)
        let word = mapping.words + placement.slot
        #expect(word.pointee == UInt64(placement.generation) << 32)

        word.pointee += 1  // a claim starts in the lease
        #expect(!board.recall(LeaseID(1), of: client), "a claim runs: the lease is not returned yet")
        #expect(word.pointee == Self.recalled | UInt64(placement.generation) << 32 | 1)
        #expect(board.idle(UInt32(placement.slot), of: client) == nil, "the count is still 1")
        word.pointee -= 1  // it ends
        #expect(board.idle(UInt32(placement.slot), of: client) == LeaseID(1))
        #expect(board.idle(UInt32(placement.slot), of: client) == nil, "a repeated idle changes nothing")
        #expect(board.nextHoldEnd == nil)
    }

    @Test func aRecallWithNothingCountedReturnsAtOnceAndTheCounterIsReusedWithANewGeneration() throws {
        let client = registered(3)
        let first = try #require(board.place(LeaseID(1), of: client))
        #expect(board.recall(LeaseID(1), of: client))
        let second = try #require(board.place(LeaseID(2), of: client))
        #expect(second.slot == first.slot)
        #expect(second.generation != first.generation)
        let mapping = try ClientMapping(second.file)
        #expect(mapping.words[second.slot] == UInt64(second.generation) << 32)
    }

    @Test func aCounterWithAStrayClaimIsNotHandedOn() throws {
        let client = registered(4)
        let first = try #require(board.place(LeaseID(1), of: client))
        let mapping = try ClientMapping(first.file)
        #expect(board.recall(LeaseID(1), of: client))
        // A thread of the client that had not seen the recall adds its 1 (and will take it back): the counter is not
        // free while it is there.
        mapping.words[first.slot] += 1
        let second = try #require(board.place(LeaseID(2), of: client))
        #expect(second.slot != first.slot)
        mapping.words[first.slot] -= 1
        let third = try #require(board.place(LeaseID(3), of: client))
        #expect(third.slot == first.slot, "free again once the stray 1 went back")
    }

    @Test func aWordWithoutItsGenerationHoldsUntilTheLongestHold() throws {
        let client = registered(5, hold: .milliseconds(50))
        let placement = try #require(board.place(LeaseID(9), of: client))
        let mapping = try ClientMapping(placement.file)
        mapping.words[placement.slot] = 0x1234  // scribbled on by the client
        #expect(!board.recall(LeaseID(9), of: client), "nothing it says can be trusted: the lease holds")
        #expect(board.idle(UInt32(placement.slot), of: client) == nil)
        let end = try #require(board.nextHoldEnd)
        #expect(board.holdsEnded(at: end - .milliseconds(1)).isEmpty)
        let ended = board.holdsEnded(at: end)
        #expect(ended.map(\.0) == [LeaseID(9)] && ended.map(\.1) == [client])
        #expect(board.nextHoldEnd == nil)
    }

    @Test func aClosedConnectionKeepsItsLeasesOnlyWhileAClaimIsCountedAndItsProcessRuns() throws {
        let running = registered(1, hold: .seconds(7))
        let idle = registered(2, hold: .seconds(7))
        let gone = registered(3, pid: Int32.max, hold: .seconds(7))  // no such process
        var files: [String] = []
        for (index, client) in [running, idle, gone].enumerated() {
            let placement = try #require(board.place(LeaseID(UInt64(index + 1)), of: client))
            let mapping = try ClientMapping(placement.file)
            if client != idle { mapping.words[placement.slot] += 1 }
            files.append(placement.file)
        }
        #expect(board.closed(running) == .keep(.seconds(7)))
        #expect(board.closed(idle) == .release)
        #expect(board.closed(gone) == .release)
        #expect(board.closed(ClientID(99)) == .notCounting)
        for file in files { #expect(!FileManager.default.fileExists(atPath: file), "\(file) left behind") }
    }

    @Test func aDaemonThatStopsMarksEveryCounterRecalledAndReturnsTheIdleLeases() throws {
        let client = registered(6)
        let busy = try #require(board.place(LeaseID(1), of: client))
        let quiet = try #require(board.place(LeaseID(2), of: client))
        let mapping = try ClientMapping(busy.file)
        mapping.words[busy.slot] += 1
        let returned = board.shutDown()
        #expect(returned.map(\.0) == [LeaseID(2)])
        #expect(mapping.words[busy.slot] & Self.recalled != 0)
        #expect(mapping.words[quiet.slot] & Self.recalled != 0)
        #expect(!FileManager.default.fileExists(atPath: busy.file))
    }
}
