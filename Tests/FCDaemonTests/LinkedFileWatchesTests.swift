import FCCore
import FCSystem
import Testing

@testable import FCDaemon

/// The watcher's bookkeeping of files with other names (issue 26): one watch per inode, names leave with their
/// directory, and both tables are bounded per directory.
@Suite struct LinkedFileWatchesTests {
    private static let file = FileIdentity(device: 8, inode: 42)
    private static let other = FileIdentity(device: 8, inode: 43)

    private static func path(_ string: String) -> ItemPath { try! ItemPath(absolute: string) }

    @Test func twoNamesOfOneFileShareItsWatchWhichGoesWithTheLastName() {
        var linked = LinkedFileWatches()
        let firstEmptied = linked.add(Self.path("/d/a.txt"), identity: Self.file, descriptor: 5)
        #expect(firstEmptied == nil)
        let secondEmptied = linked.add(Self.path("/f/c.txt"), identity: Self.file, descriptor: 5)
        #expect(secondEmptied == nil)
        #expect(linked.count == 1)
        #expect(linked.watch(5)?.names == [Self.path("/d/a.txt"), Self.path("/f/c.txt")])
        let emptiedByFirst = linked.remove(Self.path("/d/a.txt"))
        #expect(emptiedByFirst == nil)
        #expect(linked.descriptor(of: Self.file) == 5)
        let emptiedByLast = linked.remove(Self.path("/f/c.txt"))
        #expect(emptiedByLast == 5)
        #expect(linked.count == 0 && linked.descriptor(of: Self.file) == nil)
    }

    @Test func aNameThatReachesAnotherFileMovesAndItsOldWatchIsHandedBack() {
        var linked = LinkedFileWatches()
        _ = linked.add(Self.path("/d/a.txt"), identity: Self.file, descriptor: 5)
        let moved = linked.add(Self.path("/d/a.txt"), identity: Self.other, descriptor: 6)
        #expect(moved == 5)
        #expect(linked.watch(5) == nil)
        #expect(linked.watch(6)?.names == [Self.path("/d/a.txt")])
    }

    @Test func aDirectorysNamesLeaveWithItAndADroppedWatchLeavesNothing() {
        var linked = LinkedFileWatches()
        _ = linked.add(Self.path("/d/a.txt"), identity: Self.file, descriptor: 5)
        _ = linked.add(Self.path("/e/b.txt"), identity: Self.file, descriptor: 5)
        _ = linked.add(Self.path("/d/x.txt"), identity: Self.other, descriptor: 6)
        let emptied = linked.removeDirectory(Self.path("/d"))
        #expect(emptied == [6])
        #expect(linked.watch(5)?.names == [Self.path("/e/b.txt")])
        let dropped = linked.drop(5)
        #expect(dropped)
        let droppedAgain = linked.drop(5)
        #expect(!droppedAgain)
        #expect(linked.count == 0 && !linked.contains(Self.path("/e/b.txt")))
    }

    @Test func aDirectoryHasRoomForABoundedNumberOfNames() {
        var linked = LinkedFileWatches()
        for index in 0..<LinkedFileWatches.maximumPerDirectory {
            #expect(linked.hasRoom(in: Self.path("/d")))
            let identity = FileIdentity(device: 1, inode: UInt64(index))
            _ = linked.add(Self.path("/d/\(index)"), identity: identity, descriptor: Int32(index + 10))
        }
        #expect(!linked.hasRoom(in: Self.path("/d")))
        #expect(linked.hasRoom(in: Self.path("/e")))
    }

    @Test func identitiesFindEveryNameAndAreBoundedPerDirectory() {
        var files = WatchedFileIdentities()
        let firstName = files.set(Self.path("/d/a.txt"), to: Self.file)
        #expect(firstName)
        let secondName = files.set(Self.path("/e/b.txt"), to: Self.file)
        #expect(secondName)
        #expect(files.names(of: Self.file) == [Self.path("/d/a.txt"), Self.path("/e/b.txt")])
        let replaced = files.set(Self.path("/d/a.txt"), to: Self.other)
        #expect(replaced)  // Replaced by another file.
        #expect(files.names(of: Self.file) == [Self.path("/e/b.txt")])
        files.removeDirectory(Self.path("/e"))
        #expect(files.names(of: Self.file).isEmpty && files.count == 1)
        files.remove(Self.path("/d/a.txt"))
        #expect(files.count == 0)

        for index in 0..<WatchedFileIdentities.maximumPerDirectory {
            _ = files.set(Self.path("/f/\(index)"), to: FileIdentity(device: 1, inode: UInt64(index)))
        }
        let pastTheBound = files.set(Self.path("/f/more"), to: Self.file)
        #expect(!pastTheBound)
        #expect(files.count == WatchedFileIdentities.maximumPerDirectory)
    }
}
