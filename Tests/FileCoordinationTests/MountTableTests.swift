import FCSystem
import Foundation
import Testing

@testable import FCFileSystemPolicy

// The mount table and the second paths bind mounts make (issue 26): parsed from mountinfo text, without mounting.
struct MountTableTests {
    static let table = """
        21 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
        22 21 0:5 / /proc rw - proc proc rw
        30 21 8:1 /home/ann/Documents /srv/view rw,relatime shared:1 - ext4 /dev/sda1 rw
        31 21 8:1 /home/ann/My\\040Files /srv/with\\040space rw - ext4 /dev/sda1 rw
        40 21 8:17 / /data rw - xfs /dev/sdb1 rw
        41 21 8:17 /projects /work/projects rw - xfs /dev/sdb1 rw
        50 21 0:40 /sub /only rw - tmpfs tmpfs rw
        60 21 8:33 / /hidden rw - ext4 /dev/sdc1 rw
        61 21 8:1 /tmp /hidden rw - ext4 /dev/sda1 rw
        62 21 8:33 /x /y rw - ext4 /dev/sdc1 rw
        """

    @Test func linesAreParsedWithTheirEscapesUndone() throws {
        let table = MountTable(parsing: Array(Self.table.utf8))
        #expect(table.entries.count == 10)
        let spaced = try #require(table.entries.first { $0.id == 31 })
        #expect(spaced.root == "/home/ann/My Files")
        #expect(spaced.mountPoint == "/srv/with space")
        #expect(spaced.device == MountTable.device(major: 8, minor: 1))
        #expect(table.entries.first { $0.id == 21 }?.device == 0x801)
    }

    @Test func aBindMountIsKeyedByItsPathUnderTheWholeFileSystem() {
        let aliases = MountTable(parsing: Array(Self.table.utf8)).aliases()
        #expect(aliases[30] == "/home/ann/Documents")
        #expect(aliases[31] == "/home/ann/My Files")
        #expect(aliases[41] == "/data/projects")
        // A device's first mount, and a mount whose root no other mount shows from higher up, have none.
        #expect(aliases[21] == nil)
        #expect(aliases[40] == nil)
        #expect(aliases[50] == nil)
        // /hidden's first mount is covered by a later one: nothing is reached through it.
        #expect(aliases[62] == nil)
        #expect(aliases[61] == "/tmp")
    }

    @Test func thisProcessesTableReads() throws {
        let table = try #require(MountTable.read())
        #expect(table.entries.contains { $0.mountPoint == "/" })
        let root = try FileSystemCalls.status("/", followingLinks: true)
        if let id = root.mountID { #expect(table.entries.contains { $0.id == id }) }
    }
}
