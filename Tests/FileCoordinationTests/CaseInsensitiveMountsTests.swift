import Testing

@testable import FCFileSystemPolicy

// The names the daemon folds for a client that leaves folding to it (the preload library, Hello.daemon_folds_names):
// those in a folder of a mount that is case-insensitive by its type, decided from mountinfo text, without mounting.
struct CaseInsensitiveMountsTests {
    static let table = """
        21 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
        30 21 8:17 / /media/usb rw - vfat /dev/sdb1 rw
        31 30 8:33 / /media/usb/inner rw - ext4 /dev/sdc1 rw
        40 21 0:50 / /mnt/share rw - cifs //server/share rw
        41 21 0:51 / /mnt/stick rw - fuseblk /dev/loop0 rw
        42 21 0:52 / /mnt/remote rw - fuse.sshfs host:/ rw
        50 21 7:1 / /hidden rw - exfat /dev/loop1 rw
        51 50 8:1 /tmp /hidden rw - ext4 /dev/sda1 rw
        60 21 8:49 / /Media2 rw - exfat /dev/sdd1 rw
        61 60 8:65 / /Media2/Inner rw - xfs /dev/sde1 rw
        70 21 8:81 / /cover/inner rw - ext4 /dev/sdf1 rw
        71 21 8:97 / /cover rw - vfat /dev/sdg1 rw
        72 21 0:53 / /mnt/fusefat rw - fuse.exfat /dev/sdh1 rw
        """

    static let mounts = CaseInsensitiveMounts(table: MountTable(parsing: Array(table.utf8))) { entry in
        // Asked for fuseblk mounts only: the others' type says it.
        entry.device == MountTable.device(major: 0, minor: 51) ? "exfat" : nil
    }

    static func fold(_ path: String) -> String {
        let names = path.split(separator: "/").map { Array($0.utf8) }
        let folded = mounts.folded(names)
        #expect(mounts.folds(names) == (folded != nil), "folds(_:) and folded(_:) disagree on \(path)")
        return "/" + (folded ?? names).map { String(decoding: $0, as: UTF8.self) }.joined(separator: "/")
    }

    @Test func theTypeAndTheSourceFollowTheSeparator() throws {
        let table = MountTable(parsing: Array(Self.table.utf8))
        let share = try #require(table.entries.first { $0.id == 40 })
        #expect(share.type == "cifs")
        #expect(share.source == "//server/share")
        #expect(table.entries.first { $0.id == 21 }?.type == "ext4")
    }

    @Test func namesBelowAFATOrSMBMountAreFoldedAndTheMountPointsOwnNameIsNot() {
        #expect(Self.fold("/media/usb/Docs/Ä Report.TXT") == "/media/usb/docs/ä report.txt")
        #expect(Self.fold("/mnt/share/Team/Plan.ODS") == "/mnt/share/team/plan.ods")
        #expect(Self.fold("/Media2/Notes") == "/Media2/notes")
        // Above the mounts, and on a case-sensitive file system: as spelled.
        #expect(Self.fold("/Media/USB") == "/Media/USB")
        #expect(Self.fold("/home/Ann/Doc.TXT") == "/home/Ann/Doc.TXT")
    }

    @Test func aFUSEMountIsFoldedOnlyWhenItsDeviceIsOfACaseInsensitiveType() {
        #expect(Self.fold("/mnt/stick/Photos/IMG.JPG") == "/mnt/stick/photos/img.jpg")
        #expect(Self.fold("/mnt/remote/Photos/IMG.JPG") == "/mnt/remote/Photos/IMG.JPG")
    }

    @Test func aMountInsideACaseInsensitiveFolderDecidesItsOwnNamesWhateverTheCaseOfItsPoint() {
        // The ext4 mount at /media/usb/inner: its name lies in the FAT folder (folded), its names do not.
        #expect(Self.fold("/media/usb/inner/ABC") == "/media/usb/inner/ABC")
        #expect(Self.fold("/media/usb/INNER/ABC") == "/media/usb/inner/ABC")
        // A mount point recorded with upper case inside an exFAT folder is met in any case.
        #expect(Self.fold("/Media2/INNER/Xyz") == "/Media2/inner/Xyz")
    }

    @Test func aHiddenMountDoesNotDecide() {
        // Under a later mount at the same place.
        #expect(Self.fold("/hidden/ABC") == "/hidden/ABC")
        // Under a later mount above it (a FAT volume mounted over the folder that held the ext4 mount): the path
        // reaches the FAT folder, as the Swift client's rule finds it.
        #expect(Self.fold("/cover/inner/ABC") == "/cover/inner/abc")
    }

    @Test func aFUSEMountNamedByItsTypeIsDecidedByIt() {
        #expect(Self.fold("/mnt/fusefat/DCIM") == "/mnt/fusefat/dcim")
    }

    @Test func namesThatAreNotUTF8OrHaveNoUpperCaseAreKept() {
        let names: [[UInt8]] = [Array("media".utf8), Array("usb".utf8), [0x41, 0xFF], Array("lower".utf8)]
        #expect(Self.mounts.folded(names) == nil)
        #expect(CaseInsensitiveMounts().folded([Array("ABC".utf8)]) == nil)
    }

    @Test func theMountPointsWhoseRuleChangedAreTold() {
        let before = CaseInsensitiveMounts(
            table: MountTable(parsing: Array("21 1 8:1 / / rw - ext4 /dev/sda1 rw".utf8))
        ) {
            _ in nil
        }
        let names = { (path: String) in path.split(separator: "/").map { Array($0.utf8) } }
        #expect(Self.mounts.changedPoints(since: Self.mounts).isEmpty)
        let changed = Self.mounts.changedPoints(since: before)
        #expect(changed.contains(names("/media/usb")) && changed.contains(names("/mnt/share")))
        #expect(!changed.contains([]), "the root's rule is the same")
        #expect(before.changedPoints(since: Self.mounts).count == changed.count, "unmounted: the same points")
    }

    @Test func inAChrootWithoutItsRootMountEveryMountCounts() {
        // A plain chroot into a folder that is no mount point: the table leaves the root out, and each mount names
        // a parent it does not hold.
        let table = """
            40 29 0:22 / /proc rw - proc proc rw
            41 29 8:17 / /media/stick rw - vfat /dev/sdb1 rw
            """
        let mounts = CaseInsensitiveMounts(table: MountTable(parsing: Array(table.utf8))) { _ in nil }
        #expect(
            mounts.folded([Array("media".utf8), Array("stick".utf8), Array("DCIM".utf8)])?.last == Array("dcim".utf8)
        )
    }
}
