import FCSystem
import Synchronization

/// The file system behind a FUSE mount, told from the device rather than from a directory's contents, so that two
/// processes asking at different moments get the same answer (issue 14: an empty directory cannot be probed).
///
/// `statfs` says only `fuse` for every FUSE file system. For a `fuseblk` mount (exfat-fuse, ntfs-3g, fusefat) the
/// directory's `st_dev` is the block device's number, and `/proc/self/mountinfo` names the device: its boot sector
/// (read with `pread` when the device is readable) tells exFAT, FAT and NTFS apart; else udev's record
/// (`/run/udev/data/b<major>:<minor>`, `ID_FS_TYPE`) or blkid's cache (`/run/blkid/blkid.tab`) may know. A mount
/// whose type names a subtype (`fuse.exfat`) is taken at its word.
///
/// Nothing is cached here: device numbers are reused by the next mount on the same loop or anonymous device, and a
/// stale answer would make two processes disagree. The callers cache per directory.
///
/// - Important: Thread-safe; the reads run on the calling thread.
public enum DeviceFileSystem {
    /// File system types (as udev and blkid name them) whose names compare case-insensitively.
    public static let caseInsensitiveTypes: Set<String> = ["exfat", "vfat", "msdos", "fat", "fat12", "fat16", "fat32"]

    /// Whether the device rule is used (tests turn it off to reach the undecided case on a real exFAT volume).
    public static var isEnabled: Bool {
        get { enabled.load(ordering: .relaxed) }
        set { enabled.store(newValue, ordering: .relaxed) }
    }
    private static let enabled = Atomic<Bool>(true)

    /// The type of the file system on the FUSE mount whose `st_dev` is `device`, or `nil` when it cannot be told.
    public static func type(ofFUSEDevice device: UInt64) -> String? {
        guard isEnabled else { return nil }
        let number = DeviceNumber(device)
        guard let info = try? FileSystemCalls.contents(of: "/proc/self/mountinfo", limit: 4 << 20),
            let mount = MountInfo.entry(forDevice: number, in: info)
        else { return nil }
        if mount.type.hasPrefix("fuse."), mount.type != "fuse.fuseblk" {
            return String(mount.type.dropFirst("fuse.".count))
        }
        guard mount.type == "fuseblk" else { return nil }
        // The mount source is any text for FUSE: trusted only as the block device that this very device number is.
        if let status = try? FileSystemCalls.status(mount.source, followingLinks: true),
            status.blockDevice == device,
            let sector = try? FileSystemCalls.bytes(of: mount.source, offset: 0, count: 512),
            let type = BootSector.fileSystemType(sector)
        {
            return type
        }
        if let record = try? FileSystemCalls.contents(of: "/run/udev/data/b\(number)", limit: 1 << 16),
            let type = UdevRecord.fileSystemType(record)
        {
            return type
        }
        if let cache = try? FileSystemCalls.contents(of: "/run/blkid/blkid.tab", limit: 1 << 20) {
            return BlkidCache.fileSystemType(ofDevice: device, in: cache)
        }
        return nil
    }
}

/// A Linux device number split as `major:minor` (glibc's `gnu_dev_major`/`gnu_dev_minor` encoding).
struct DeviceNumber: Hashable, Sendable, CustomStringConvertible {
    var major: UInt64
    var minor: UInt64

    init(_ device: UInt64) {
        major = ((device >> 8) & 0xfff) | ((device >> 32) & 0xffff_f000)
        minor = (device & 0xff) | ((device >> 12) & 0xffff_ff00)
    }

    var description: String { "\(major):\(minor)" }
}

/// `/proc/self/mountinfo` lines: `id parent major:minor root mountpoint options [optional…] - type source super`.
///
/// - Important: Pure functions; thread-safe.
enum MountInfo {
    /// The first mount of device `device`: its file system type and source (octal escapes such as `\040` undone).
    static func entry(forDevice device: DeviceNumber, in text: [UInt8]) -> (type: String, source: String)? {
        let wanted = Array(device.description.utf8)
        for line in text.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " "))
            guard fields.count >= 10, Array(fields[2]) == wanted,
                let dash = fields[6...].firstIndex(where: { $0.elementsEqual([UInt8(ascii: "-")]) }),
                dash + 2 < fields.count
            else { continue }
            return (unescape(fields[dash + 1]), unescape(fields[dash + 2]))
        }
        return nil
    }

    /// A field with its `\ooo` escapes replaced by the bytes they stand for.
    static func unescape(_ field: ArraySlice<UInt8>) -> String {
        var bytes: [UInt8] = []
        var index = field.startIndex
        while index < field.endIndex {
            let digits = field[index...].dropFirst().prefix(3)
            if field[index] == UInt8(ascii: "\\"), digits.count == 3,
                digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "7") })
            {
                bytes.append(digits.reduce(0) { $0 &* 8 &+ ($1 - UInt8(ascii: "0")) })
                index += 4
            } else {
                bytes.append(field[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// The first sector of a volume.
///
/// - Important: Pure functions; thread-safe.
enum BootSector {
    /// `exfat`, `vfat` or `ntfs` from the signatures of a volume's first 512 bytes, or `nil`.
    static func fileSystemType(_ sector: [UInt8]) -> String? {
        guard sector.count >= 512, sector[510] == 0x55, sector[511] == 0xAA else { return nil }
        func text(_ offset: Int, _ count: Int) -> String {
            String(decoding: sector[offset..<offset + count], as: UTF8.self)
        }
        if text(3, 8) == "EXFAT   " { return "exfat" }
        if text(3, 8) == "NTFS    " { return "ntfs" }
        // FAT12/16 name their type at 54, FAT32 at 82 (informational fields, which every formatter fills in).
        if text(54, 5) == "FAT12" || text(54, 5) == "FAT16" || text(54, 8) == "FAT     " || text(82, 5) == "FAT32" {
            return "vfat"
        }
        return nil
    }
}

/// A udev database record (`/run/udev/data/b<major>:<minor>`): lines such as `E:ID_FS_TYPE=exfat`.
///
/// - Important: Pure functions; thread-safe.
enum UdevRecord {
    static func fileSystemType(_ record: [UInt8]) -> String? {
        let key = Array("E:ID_FS_TYPE=".utf8)
        for line in record.split(separator: UInt8(ascii: "\n")) where line.starts(with: key) {
            let type = String(decoding: line.dropFirst(key.count), as: UTF8.self)
            return type.isEmpty ? nil : type
        }
        return nil
    }
}

/// blkid's cache (`/run/blkid/blkid.tab`): lines such as `<device DEVNO="0x0700" … TYPE="exfat">/dev/loop0</device>`.
///
/// - Important: Pure functions; thread-safe.
enum BlkidCache {
    static func fileSystemType(ofDevice device: UInt64, in cache: [UInt8]) -> String? {
        for line in cache.split(separator: UInt8(ascii: "\n")) {
            let text = String(decoding: line, as: UTF8.self)
            guard let number = attribute("DEVNO", in: text), number.hasPrefix("0x"),
                UInt64(number.dropFirst(2), radix: 16) == device
            else { continue }
            return attribute("TYPE", in: text)
        }
        return nil
    }

    private static func attribute(_ name: String, in text: String) -> String? {
        guard let start = text.firstRange(of: " \(name)=\"") else { return nil }
        let rest = text[start.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return String(rest[..<end])
    }
}

/// Whether names in a directory compare case-insensitively, decided from the file system (docs/SEMANTICS.md §4): the
/// rule that the client's canonicaliser (`CaseSensitivity`, which caches it) and the daemon's watcher (which folds
/// event names in such directories) share.
///
/// Fast paths first: the file system type from `statfs` (vfat, exFAT, CIFS/SMB are case-insensitive; btrfs and XFS
/// are not), the casefold inode flag on ext4, f2fs and tmpfs (`FS_IOC_GETFLAGS`), and for FUSE the file system on
/// the device (``DeviceFileSystem``). Anything else gets the probe: an entry whose name has a case-swapped spelling
/// is looked up by that spelling; not found means case-sensitive, found as the same inode or as a name the directory
/// does not list means case-insensitive (exfat-fuse gives each spelling its own inode number, hence the listing
/// check).
///
/// - Important: Thread-safe; the syscalls run on the calling thread and may block as long as the file system takes.
public enum FileSystemCaseRule {
    /// The answer for the directory `path` (on device `device`), or `nil` when it cannot be decided now (an empty
    /// directory of a file system that neither its type nor its device names).
    public static func decide(_ path: String, device: UInt64) -> Bool? {
        decide(pathBytes: Array(path.utf8), device: device)
    }

    /// ``decide(_:device:)`` for a directory given as its bytes (a name need not be UTF-8: the daemon's watcher,
    /// whose paths are bytes).
    public static func decide(pathBytes path: [UInt8], device: UInt64) -> Bool? {
        let type = try? FileSystemCalls.fileSystemType(pathBytes: path)
        switch type {
        case .msdos?, .exfat?, .cifs?, .smb2?, .smb?:
            return true
        case .btrfs?, .xfs?:
            return false
        case .ext4?, .f2fs?, .tmpfs?:
            return (try? FileSystemCalls.hasCasefoldFlag(directoryBytes: path)) ?? false
        case .fuse?:
            if let name = DeviceFileSystem.type(ofFUSEDevice: device),
                DeviceFileSystem.caseInsensitiveTypes.contains(name)
            {
                return true
            }
            return probe(pathBytes: path)
        default:
            return probe(pathBytes: path)
        }
    }

    /// The probe that works on any file system, or `nil` when the directory has no entry with a cased name.
    public static func probe(_ path: String) -> Bool? {
        probe(pathBytes: Array(path.utf8))
    }

    /// ``probe(_:)`` of a directory given as its bytes. Names are looked up and compared by their bytes, as the file
    /// system names them: a name that is not UTF-8 has no case and is not a candidate, and two names that differ only
    /// in Unicode normalisation are two names (compared as `String`s, by canonical equivalence, `É` and `e` with
    /// U+0301 on exFAT were one, and the folder was decided case-sensitive), unless the file system takes them for one
    /// (a name that is equivalent to the swapped spelling and is the item found under it).
    public static func probe(pathBytes path: [UInt8]) -> Bool? {
        var candidate: (name: [UInt8], swapped: [UInt8])?
        try? FileSystemCalls.forEachEntry(ofDirectoryBytes: path) { name in
            guard let text = String(validating: name, as: UTF8.self), let swapped = CaseFolding.swapped(text) else {
                return true
            }
            candidate = (Array(name), Array(swapped.utf8))
            return false
        }
        guard let candidate else { return nil }
        let swappedStatus: FileStatus
        switch FileSystemCalls.lookUp(nameBytes: candidate.swapped, inDirectoryBytes: path) {
        case .found(let status): swappedStatus = status
        case .missing: return false
        case .failed: return nil
        }
        if case .found(let original) = FileSystemCalls.lookUp(nameBytes: candidate.name, inDirectoryBytes: path),
            original.identity == swappedStatus.identity
        {
            return true
        }
        // Found under another inode number: two entries, or a file system that numbers each spelling apart. The
        // swapped spelling is listed as it is, or (a file system that ignores Unicode normalisation but not case, as
        // ZFS with normalization=formD) as a canonically equivalent name that is the very item the lookup found.
        let swappedText = String(decoding: candidate.swapped, as: UTF8.self)
        var listed = false
        do {
            try FileSystemCalls.forEachEntry(ofDirectoryBytes: path) { name in
                if name.elementsEqual(candidate.swapped) {
                    listed = true
                } else if let text = String(validating: name, as: UTF8.self), text == swappedText,
                    case .found(let status) = FileSystemCalls.lookUp(nameBytes: Array(name), inDirectoryBytes: path),
                    status.identity == swappedStatus.identity
                {
                    listed = true
                }
                return !listed
            }
        } catch {
            return nil
        }
        return !listed
    }
}
