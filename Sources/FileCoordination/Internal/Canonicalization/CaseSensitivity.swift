import FCSystem
import Synchronization

/// Decides, per directory, whether names in it compare case-insensitively (SEMANTICS.md §4), and remembers the
/// answer by the directory's `(st_dev, st_ino)`.
///
/// Fast paths first: the file system type from `statfs` (vfat, exFAT, CIFS/SMB are case-insensitive; btrfs and XFS
/// are not), the casefold inode flag on ext4, f2fs and tmpfs (`FS_IOC_GETFLAGS`), and for FUSE the file system on
/// the device (``DeviceFileSystem``: exFAT and FAT through exfat-fuse or fusefat are case-insensitive). Anything
/// else (another FUSE file system, NFS, overlayfs…) gets the probe: an entry whose name has a case-swapped
/// spelling is looked up by that spelling; not found means case-sensitive, found as the same inode or as a name the
/// directory does not list means case-insensitive. (exfat-fuse gives each spelling its own inode number, hence the
/// listing check.)
///
/// An answer is a function of the device, or of the directory's entries where the device does not tell: two
/// processes asking at different moments agree, except for a directory without an entry to probe. That one is
/// *undecided* (`nil`, never cached) unless the directory above it on the same device answered; the canonicaliser
/// then gives claims a second, case-folded key (``CanonicalPath/foldedKey``, docs/ARCHITECTURE.md §8.3).
///
/// - Important: Thread-safe. The syscalls run on the calling thread, outside the lock.
final class CaseSensitivity: Sendable {
    /// At most this many directories are remembered; the memory is dropped whole when full.
    static let capacity = 4096

    private let known = Locked<[FileIdentity: Bool]>([:])
    /// Whether any directory was ever found case-insensitive: until then, URLs need no respelling at all.
    private let sawInsensitive = Atomic<Bool>(false)

    /// Whether some directory was ever found case-insensitive by this process.
    var anyInsensitive: Bool { sawInsensitive.load(ordering: .relaxed) }

    /// Whether names in the directory `path` (identity `identity`) compare case-insensitively, or `nil` when that
    /// cannot be decided (an empty directory on a FUSE file system that the device does not name). `inherited`
    /// answers in that case: the answer of the directory above it, when that one is on the same device.
    func answer(directory path: String, identity: FileIdentity, inherited: Bool?) -> Bool? {
        if let answer = known.withLock({ $0[identity] }) { return answer }
        guard let answer = Self.decide(path, device: identity.device) else { return inherited }
        known.withLock { known in
            if known.count >= Self.capacity { known.removeAll(keepingCapacity: true) }
            known[identity] = answer
        }
        if answer { sawInsensitive.store(true, ordering: .relaxed) }
        return answer
    }

    /// ``answer(directory:identity:inherited:)``, with `fallback` for an undecided directory: for spelling URLs
    /// back (``Respelling``), never for keys.
    func isInsensitive(directory path: String, identity: FileIdentity, fallback: Bool) -> Bool {
        answer(directory: path, identity: identity, inherited: nil) ?? fallback
    }

    /// Forgets every answer (tests).
    func removeAll() {
        known.withLock { $0.removeAll() }
    }

    /// The answer for `path` (on device `device`), or `nil` when it cannot be decided now.
    static func decide(_ path: String, device: UInt64) -> Bool? {
        let type = try? FileSystemCalls.fileSystemType(path)
        switch type {
        case .msdos?, .exfat?, .cifs?, .smb2?, .smb?:
            return true
        case .btrfs?, .xfs?:
            return false
        case .ext4?, .f2fs?, .tmpfs?:
            return (try? FileSystemCalls.hasCasefoldFlag(directory: path)) ?? false
        case .fuse?:
            if let name = DeviceFileSystem.type(ofFUSEDevice: device),
                DeviceFileSystem.caseInsensitiveTypes.contains(name)
            {
                return true
            }
            return probe(path)
        default:
            return probe(path)
        }
    }

    /// The probe that works on any file system, or `nil` when the directory has no entry with a cased name.
    static func probe(_ path: String) -> Bool? {
        var candidate: (name: String, swapped: String)?
        try? FileSystemCalls.forEachEntry(ofDirectory: path) { name in
            guard let swapped = CaseFolding.swapped(name) else { return true }
            candidate = (name, swapped)
            return false
        }
        guard let candidate else { return nil }
        let swappedStatus: FileStatus
        switch FileSystemCalls.lookUp(candidate.swapped, inDirectory: path) {
        case .found(let status): swappedStatus = status
        case .missing: return false
        case .failed: return nil
        }
        if let original = try? FileSystemCalls.status(of: candidate.name, inDirectory: path),
            original.identity == swappedStatus.identity
        {
            return true
        }
        // Found under another inode number: two entries, or a file system that numbers each spelling apart.
        var listed = false
        do {
            try FileSystemCalls.forEachEntry(ofDirectory: path) { name in
                listed = name == candidate.swapped
                return !listed
            }
        } catch {
            return nil
        }
        return !listed
    }
}
