import FCSystem
import Foundation
import Synchronization
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A private folder for one test, removed at the end.
private func withFolder(_ body: (String) throws -> Void) throws {
    let folder = NSTemporaryDirectory() + "fc-system-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    try body(folder)
}

/// The `Errno` `body` throws, or `nil`.
private func failure(of body: () throws -> Void) -> Errno? {
    do {
        try body()
        return nil
    } catch {
        return error as? Errno
    }
}

/// A system call stand-in that fails with `code` its first `failures` calls (-1 and `errno`), then returns 7.
private final class FlakyCall {
    let failures: Int
    let code: Int32
    private(set) var calls = 0

    init(failing failures: Int, with code: Int32) {
        self.failures = failures
        self.code = code
    }

    func callAsFunction() -> Int32 {
        calls += 1
        guard calls > failures else {
            errno = code
            return -1
        }
        return 7
    }
}

/// FCSystem's error handling: the one place `errno` is read.
@Suite struct RetryTests {
    @Test func retryOnInterruptRepeatsOnlyWhileTheCallFailsWithEINTR() throws {
        let interrupted = FlakyCall(failing: 2, with: EINTR)
        #expect(try retryOnInterrupt { interrupted() } == 7)
        #expect(interrupted.calls == 3)
        // Another error is thrown at once, as the Errno it is.
        let denied = FlakyCall(failing: 1, with: EACCES)
        #expect(failure { _ = try retryOnInterrupt { denied() } } == .permissionDenied)
        #expect(denied.calls == 1)
    }

    @Test func valueOrErrnoNeverRetries() {
        let interrupted = FlakyCall(failing: 1, with: EINTR)
        #expect(failure { _ = try valueOrErrno { interrupted() } } == .interrupted)
        #expect(interrupted.calls == 1)
    }
}

/// Unix sockets against the kernel.
@Suite struct UnixSocketTests {
    @Test func aPairCarriesBytesBothWaysAndTheEndIsSeen() throws {
        let (a, b) = try UnixSocket.pair()
        try a.send(Array("ping".utf8))
        var buffer = [UInt8](repeating: 0, count: 16)
        let count = try b.receive(into: &buffer)
        #expect(Array(buffer[..<count]) == Array("ping".utf8))
        a.shutdown()
        #expect(try b.waitUntilReadable(timeout: .seconds(5)))
        #expect(try b.receive(into: &buffer) == 0)
    }

    @Test func aListenerAcceptsAConnectionWhosePeerIsThisProcess() throws {
        try withFolder { (folder: String) throws(any Error) in
            let path = folder + "/socket"
            let listener = try UnixSocket.listen(at: path)
            let client = try UnixSocket.connect(to: path)
            let server = try listener.accept()
            let credentials = try server.peerCredentials()
            #expect(credentials.pid == ProcessIdentity.processID)
            #expect(credentials.uid == ProcessIdentity.userID)
            try client.send([1, 2, 3])
            var buffer = [UInt8](repeating: 0, count: 3)
            #expect(try buffer.withUnsafeMutableBytes { try server.receiveExactly(into: $0) })
            #expect(buffer == [1, 2, 3])
        }
    }

    @Test func connectingToNothingFailsWithTheKernelsError() throws {
        try withFolder { (folder: String) throws(any Error) in
            #expect(failure { _ = try UnixSocket.connect(to: folder + "/absent") } == .noSuchFileOrDirectory)
        }
    }

    @Test func anEmptySocketIsNotReadableWithinItsTimeout() throws {
        let (a, b) = try UnixSocket.pair()
        #expect(try !a.waitUntilReadable(timeout: .milliseconds(20)))
        #expect(try a.waitUntilWritable(timeout: .milliseconds(20)))
        withExtendedLifetime(b) {}  // Its end closed would make `a` readable (end of stream).
    }
}

/// `flock` locks: the daemon's pid lock and the library's start lock.
@Suite struct FileLockTests {
    @Test func aHeldLockIsNotTakenAgainUntilReleasedAndKeepsItsContents() throws {
        try withFolder { (folder: String) throws(any Error) in
            let path = folder + "/lock"
            var holder = try FileLock.tryAcquire(path)
            #expect(holder != nil)
            try holder?.replaceContents(with: Array("123456\n".utf8))
            try holder?.replaceContents(with: Array("42\n".utf8))  // Shorter: the rest is cut.
            #expect(try FileSystemCalls.contents(of: path, limit: 64) == Array("42\n".utf8))
            // flock belongs to the open file: another open in this very process is refused while it is held.
            #expect(try FileLock.tryAcquire(path) == nil)
            holder = nil
            #expect(try FileLock.tryAcquire(path) != nil)
            _ = try FileLock.acquire(path)
        }
    }

    @Test func aLockInAMissingFolderFailsWithTheKernelsError() {
        #expect(
            failure { _ = try FileLock.tryAcquire("/nonexistent-\(UUID().uuidString)/lock") } == .noSuchFileOrDirectory
        )
    }
}

/// Calls that change the file system, and `stat`.
@Suite struct FileSystemChangesTests {
    @Test func directoriesPermissionsRenamesAndRemovals() throws {
        try withFolder { (folder: String) throws(any Error) in
            let directory = folder + "/d"
            try FileSystemCalls.makeDirectory(directory, permissions: 0o755)
            #expect(failure { try FileSystemCalls.makeDirectory(directory, permissions: 0o700) } == .fileExists)
            try FileSystemCalls.setPermissions(directory, to: 0o700)
            let status = try FileSystemCalls.status(directory, followingLinks: false)
            #expect(status.kind == .directory)
            #expect(status.permissions == 0o700)
            #expect(status.owner == ProcessIdentity.userID)

            let file = directory + "/f"
            #expect(FileManager.default.createFile(atPath: file, contents: Data("abc".utf8)))
            try FileSystemCalls.setLength(file, to: 10)
            #expect(
                try FileSystemCalls.contents(of: file, limit: 64) == Array("abc".utf8) + [UInt8](repeating: 0, count: 7)
            )
            try FileSystemCalls.sync(FilePath(file))
            try FileSystemCalls.sync(FilePath(directory))
            try FileSystemCalls.rename(FilePath(file), to: FilePath(directory + "/g"))
            #expect(failure { _ = try FileSystemCalls.status(file, followingLinks: false) } == .noSuchFileOrDirectory)
            try FileSystemCalls.removeFile(directory + "/g")
            #expect(failure { try FileSystemCalls.removeFile(directory + "/g") } == .noSuchFileOrDirectory)
            #expect(failure { try FileSystemCalls.removeFile(directory) } == .isDirectory)
            #expect(FileSystemCalls.isExecutable("/bin/sh"))
            #expect(!FileSystemCalls.isExecutable(directory + "/absent"))
        }
    }
}

/// `ChangeTimes`: what `lstat` shows of an item, from each spelling of its path (issue 37's write outcome).
@Suite struct ChangeTimesTests {
    @Test func eachSpellingOfAPathReadsTheSameStateAndNothingIsNil() throws {
        try withFolder { (folder: String) throws(any Error) in
            let file = folder + "/f"
            #expect(FileManager.default.createFile(atPath: file, contents: Data("abcd".utf8)))
            let state = try #require(try ChangeTimes.state(of: file))
            #expect(state.size == 4)
            #expect(state.changeTime == (try ChangeTimes.changeTime(of: file)))
            #expect(try ChangeTimes.state(ofPathBytes: Array(file.utf8)) == state)
            let bytes = Array(file.utf8)
            let written = try ChangeTimes.state(ofPathByteCount: bytes.count) { buffer in
                _ = buffer.initialize(fromContentsOf: bytes)
            }
            #expect(written == state)
            #expect(try ChangeTimes.state(of: folder + "/absent") == nil)
            #expect(try ChangeTimes.state(of: file + "/below-a-file") == nil)  // ENOTDIR
            // A name that is not UTF-8 is read from its bytes.
            let odd = Array((folder + "/").utf8) + [0xFF, 0x61]
            #expect(try ChangeTimes.state(ofPathBytes: odd) == nil)
        }
    }
}

/// Signals and child processes.
@Suite struct ProcessTests {
    @Test func signallingAProcessThatIsGoneFailsWithNoSuchProcess() throws {
        try Signals.send(0, to: ProcessIdentity.processID)
        #expect(ProcessLiveness.isAlive(ProcessIdentity.processID))
        // A child that ended and was reaped is gone.
        try withFolder { (folder: String) throws(any Error) in
            let output = folder + "/out"
            #expect(FileManager.default.createFile(atPath: output, contents: nil))
            #expect(try ChildProcess.run(["/bin/sh", "-c", "echo $$"], outputPath: output) == .exited(0))
            let text = String(decoding: try FileSystemCalls.contents(of: output, limit: 64), as: UTF8.self)
            let pid = try #require(Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(failure { try Signals.send(0, to: pid) } == .noSuchProcess)
            #expect(!ProcessLiveness.isAlive(pid))
        }
    }

    @Test func aChildsExitStatusSignalAndOutputAreReported() throws {
        try withFolder { (folder: String) throws(any Error) in
            let output = folder + "/out"
            #expect(FileManager.default.createFile(atPath: output, contents: nil))
            #expect(
                try ChildProcess.run(
                    ["/bin/sh", "-c", "echo out; echo err >&2; exit 3"],
                    outputPath: output
                ) == .exited(3)
            )
            #expect(try FileSystemCalls.contents(of: output, limit: 64) == Array("out\nerr\n".utf8))
            #expect(
                try ChildProcess.run(["/bin/sh", "-c", "kill -KILL $$"], outputPath: output)
                    == .signalled(SIGKILL)
            )
            #expect(
                failure { _ = try ChildProcess.run([folder + "/absent"], outputPath: output) }
                    == .noSuchFileOrDirectory
            )
        }
    }

    /// A child given an output file inherits no other descriptor: `mount.exfat-fuse` (the exFAT test volume) left a
    /// daemon holding a pipe another thread of the tests had open to its own child, whose end never came, and a
    /// clean-clone test run hung on it. Here a descriptor open without close-on-exec is not among the child's.
    @Test func aChildWithAnOutputFileInheritsNoOtherDescriptor() throws {
        try withFolder { (folder: String) throws(any Error) in
            let output = folder + "/out"
            #expect(FileManager.default.createFile(atPath: output, contents: nil))
            var ends: [Int32] = [-1, -1]
            #expect(pipe(&ends) == 0)
            defer { for end in ends { close(end) } }
            #expect(try ChildProcess.run(["/bin/sh", "-c", "ls /proc/$$/fd"], outputPath: output) == .exited(0))
            let listed = String(decoding: try FileSystemCalls.contents(of: output, limit: 4_096), as: UTF8.self)
            let descriptors = Set(listed.split(whereSeparator: \.isWhitespace).compactMap { Int32($0) })
            #expect(descriptors.isSuperset(of: [0, 1, 2]), "\(listed)")
            #expect(descriptors.isDisjoint(with: ends), "the child had the pipe \(ends): \(listed)")
        }
    }

    @Test func aChildIsReapedWithoutWaitingOnlyOnceItHasEnded() throws {
        try withFolder { (folder: String) throws(any Error) in
            let output = folder + "/out"
            #expect(FileManager.default.createFile(atPath: output, contents: nil))
            let child = try ChildProcess.start(["/bin/sleep", "60"], outputPath: output)
            #expect(try child.ended() == nil)
            child.send(SIGKILL)
            // Bounded by the kernel delivering SIGKILL; the loop ends as soon as the child is reaped.
            var termination: ChildProcess.Termination?
            while termination == nil { termination = try child.ended() }
            #expect(termination == .signalled(SIGKILL))
            #expect(failure { _ = try child.ended() } == .noChildProcess)
        }
    }

    @Test func anIgnoredSignalDoesNotEndTheProcessAndAnUnblockedOneIsNotPending() throws {
        try Signals.ignore(SIGUSR2)
        #expect(raise(SIGUSR2) == 0)  // Still here.
        try Signals.unblockInThisThread([SIGUSR2])
        var mask = sigset_t()
        #expect(pthread_sigmask(SIG_BLOCK, nil, &mask) == 0)
        #expect(sigismember(&mask, SIGUSR2) == 0)
    }

    @Test func sleepThreadSleepsAtLeastItsDuration() {
        let start = ContinuousClock.now
        sleepThread(for: .milliseconds(30))
        #expect(ContinuousClock.now - start >= .milliseconds(30))
    }

    @Test func aFileIsNoTerminal() throws {
        try withFolder { (folder: String) throws(any Error) in
            let path = folder + "/f"
            #expect(FileManager.default.createFile(atPath: path, contents: nil))
            let handle = try #require(FileHandle(forReadingAtPath: path))
            #expect(!Terminal.isTerminal(handle.fileDescriptor))
        }
    }
}

@Suite struct ThreadLocalTests {
    /// Signals `gone` when released.
    final class Box: Sendable {
        let gone: DispatchSemaphore
        init(gone: DispatchSemaphore) { self.gone = gone }
        deinit { gone.signal() }
    }

    /// What the other thread saw.
    final class Seen: Sendable {
        let id = Mutex<ObjectIdentifier?>(nil)
    }

    @Test func eachThreadHasItsOwnObjectReleasedWhenTheThreadExits() {
        let gone = DispatchSemaphore(value: 0)
        let slot = ThreadLocal { Box(gone: gone) }
        let here = slot.value
        #expect(slot.value === here, "a second read on one thread made a new object")
        let seen = Seen()
        Thread { seen.id.withLock { $0 = ObjectIdentifier(slot.value) } }.start()
        // The other thread's object is released by the key's destructor as that thread exits; this one's is not.
        #expect(gone.wait(timeout: .now() + 10) == .success, "the exited thread's object was not released")
        #expect(seen.id.withLock { $0 } != nil && seen.id.withLock { $0 } != ObjectIdentifier(here))
        #expect(gone.wait(timeout: .now() + 0.05) == .timedOut, "this thread's object was released")
        #expect(slot.value === here)
    }

    /// A live query's listing (issue 44): every entry once, `.` and `..` left out, each with its own metadata (a link's
    /// own, not its target's), and the same as `ItemMetadata.of` of its whole path.
    @Test func listingAFolderGivesEachEntryItsMetadata() throws {
        try withFolder { folder in
            try FileSystemCalls.writeFile(folder + "/a.txt", Array("four".utf8))
            try FileManager.default.createDirectory(atPath: folder + "/sub", withIntermediateDirectories: false)
            try FileManager.default.createSymbolicLink(atPath: folder + "/link", withDestinationPath: "sub")
            var seen: [String: ItemMetadata] = [:]
            try ItemMetadata.forEachEntry(ofDirectory: folder) { name, metadata in
                seen[String(decoding: name, as: UTF8.self)] = metadata
            }
            #expect(seen.keys.sorted() == ["a.txt", "link", "sub"])
            #expect(seen["a.txt"]?.size == 4 && seen["a.txt"]?.isDirectory == false)
            #expect(seen["sub"]?.isDirectory == true && seen["link"]?.isDirectory == false)
            for (name, metadata) in seen { #expect(try ItemMetadata.of(folder + "/" + name) == metadata) }
            #expect(
                failure { try ItemMetadata.forEachEntry(ofDirectory: folder + "/none") { _, _ in } }
                    == .noSuchFileOrDirectory
            )
        }
    }
}
