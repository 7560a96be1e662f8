import FCSystem
import FCToolkit
import Synchronization

/// Decides, per directory, whether names in it compare case-insensitively (docs/SEMANTICS.md §4), and remembers the
/// answer by the directory's `(st_dev, st_ino)`. The rule itself is FCSystem's `FileSystemCaseRule` (the file
/// system type, the casefold flag, the file system on a FUSE device, else the probe), which the daemon's watcher
/// shares.
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
        guard let answer = FileSystemCaseRule.decide(path, device: identity.device) else { return inherited }
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
}
