import FCSystem
import FCTestSupport
import Foundation
import Testing

@testable import FCFileSystemPolicy

// How the canonicaliser tells the file system behind a FUSE mount from the device (issue 14): the parsers of
// /proc/self/mountinfo, boot sectors, udev records and blkid's cache. The whole rule, on a mounted volume, is tested
// by CaseInsensitiveFileSystemTests.
struct DeviceFileSystemTests {
    @Test func deviceNumbersSplitAsGlibcDoes() {
        #expect(DeviceNumber(0x0700).description == "7:0")
        #expect(DeviceNumber(0x0803).description == "8:3")
        // Large minors and majors use the high bits (makedev(259, 300)).
        let device: UInt64 = (259 & 0xfff) << 8 | (300 & 0xff) | (300 & ~0xff) << 12
        #expect(DeviceNumber(device).description == "259:300")
    }

    @Test func aMountInfoLineGivesTypeAndUnescapedSource() {
        let text = """
            22 1 0:21 / /proc rw,nosuid shared:5 - proc proc rw
            42 27 7:0 / /tmp/a\\040b/mnt rw,nosuid,nodev,relatime - fuseblk /dev/loop0 rw,user_id=0,allow_other
            43 27 0:50 / /mnt/remote rw shared:7 master:3 - fuse.sshfs me@host:/my\\040files rw
            """
        let bytes = Array(text.utf8)
        let block = MountInfo.entry(forDevice: DeviceNumber(0x0700), in: bytes)
        #expect(block?.type == "fuseblk")
        #expect(block?.source == "/dev/loop0")
        let remote = MountInfo.entry(forDevice: DeviceNumber(50), in: bytes)
        #expect(remote?.type == "fuse.sshfs")
        #expect(remote?.source == "me@host:/my files")
        #expect(MountInfo.entry(forDevice: DeviceNumber(0x0801), in: bytes) == nil)
    }

    @Test func bootSectorSignatures() {
        func sector(_ text: String, at offset: Int) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: 512)
            bytes.replaceSubrange(offset..<offset + text.utf8.count, with: Array(text.utf8))
            bytes[510] = 0x55
            bytes[511] = 0xAA
            return bytes
        }
        #expect(BootSector.fileSystemType(sector("EXFAT   ", at: 3)) == "exfat")
        #expect(BootSector.fileSystemType(sector("NTFS    ", at: 3)) == "ntfs")
        #expect(BootSector.fileSystemType(sector("FAT32   ", at: 82)) == "vfat")
        #expect(BootSector.fileSystemType(sector("FAT16   ", at: 54)) == "vfat")
        #expect(BootSector.fileSystemType(sector("SOMETHING", at: 3)) == nil)
        var unsigned = sector("EXFAT   ", at: 3)
        unsigned[511] = 0
        #expect(BootSector.fileSystemType(unsigned) == nil)
        #expect(BootSector.fileSystemType([]) == nil)
    }

    @Test(
        .enabled(
            if: ExFATVolume.isRequired || ExFATVolume.path(of: "mkfs.exfat") != nil,
            "DID NOT RUN: mkfs.exfat (Debian exfatprogs) is missing"
        )
    )
    func aRealExFATImageIsRecognisedByItsBootSector() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fc-bootsector-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let image = directory.appendingPathComponent("image")
        #expect(FileManager.default.createFile(atPath: image.path, contents: nil))
        let handle = try FileHandle(forWritingTo: image)
        try handle.truncate(atOffset: 8 << 20)
        try handle.close()
        try ExFATVolume.run("mkfs.exfat", [image.path])
        let sector = Array(try Data(contentsOf: image).prefix(512))
        #expect(BootSector.fileSystemType(sector) == "exfat")
    }

    @Test func udevRecordsAndTheBlkidCache() {
        let record = Array("S:disk/by-uuid/1234\nE:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=exfat\n".utf8)
        #expect(UdevRecord.fileSystemType(record) == "exfat")
        #expect(UdevRecord.fileSystemType(Array("E:ID_FS_TYPE=\n".utf8)) == nil)
        let cache = Array(
            """
            <device DEVNO="0x0801" TIME="1.2" UUID="a" TYPE="ext4">/dev/sda1</device>
            <device DEVNO="0x0700" TIME="1.3" LABEL="STICK" TYPE="vfat">/dev/loop0</device>
            """.utf8
        )
        #expect(BlkidCache.fileSystemType(ofDevice: 0x0700, in: cache) == "vfat")
        #expect(BlkidCache.fileSystemType(ofDevice: 0x0801, in: cache) == "ext4")
        #expect(BlkidCache.fileSystemType(ofDevice: 0x0802, in: cache) == nil)
    }
}
