import FCCore
import FCSystem
import FCToolkit

/// The canonical paths of files already made canonical, kept under the path as given (issue 39): a call that names
/// the same path again costs a dictionary lookup and the same two syscalls as ``PathCanonicalizer``'s cached way
/// (`stat` of the parent as spelled, `lstat` of the path), without walking the last name again, copying the parent's
/// walk or building the key.
///
/// An entry holds what the parent's cached walk held, plus the key it gave the name. It is used only while what it
/// was made from still holds, checked on each use:
///
/// - the parent as spelled is the same directory (`(st_dev, st_ino)` and mount id), and so is its canonical spelling
///   when links were followed to it: the parent cache's own check, so the key is the one a walk would make now;
/// - the path itself is not a symbolic link (a link is resolved, or not, by the walk) and is reached through the same
///   mount the key's bind-mount mapping was decided for.
///
/// The identity and link count of the file come from the fresh `lstat`, never from the entry. Only plain paths
/// (absolute, no `.`, `..`, repeated or trailing slash) whose parent has a decided case rule are kept.
///
/// Paths are compared by their bytes (``PathBytes``): two names that are one `String` (NFC and NFD) are two files.
///
/// At most ``capacity`` entries are kept, and at most ``byteBudget`` bytes of them, counted from their paths and
/// components (paths of 60 bytes take about 400 bytes an entry; long paths fill the budget sooner): the cache is
/// dropped whole when either is reached, as the parent cache is. A file that is a mount point of its own (a file
/// bind-mounted over another) is not kept: its mount's mapping is decided again at each call.
///
/// - Important: Thread-safe; the lock guards the dictionary only, never a syscall.
final class CanonicalFileCache: Sendable {
    /// At most this many files are kept: a sync agent's scan of 10,000 files stays cached from one pass to the next.
    static let capacity = 16_384
    /// At most about this many bytes are kept (8 MiB).
    static let byteBudget = 8 << 20

    /// A class, so that a lookup hands it out with one reference count, not one per field (issue 39).
    final class Entry: Sendable {
        /// The parent as the path spells it, and what it was when the entry was made.
        let parentSpelling: String
        let parentIdentity: FileIdentity
        let parentMountID: UInt64?
        /// The parent's canonical spelling, when links were followed to it (else `nil`): it must still name the
        /// same directory.
        let parentResolvedSpelling: String?
        /// The path's canonical key and its spelling on disk (links resolved, names not folded).
        let key: ItemPath
        let spelling: String
        /// The mount the key's mapping was decided for: the file's when it existed, else the parent's.
        let mountID: UInt64?

        init(
            parentSpelling: String,
            parentIdentity: FileIdentity,
            parentMountID: UInt64?,
            parentResolvedSpelling: String?,
            key: ItemPath,
            spelling: String,
            mountID: UInt64?
        ) {
            self.parentSpelling = parentSpelling
            self.parentIdentity = parentIdentity
            self.parentMountID = parentMountID
            self.parentResolvedSpelling = parentResolvedSpelling
            self.key = key
            self.spelling = spelling
            self.mountID = mountID
        }
    }

    private struct Entries {
        var byPath: [PathBytes: Entry] = [:]
        var bytes = 0
    }
    private let entries = Locked(Entries())
    private let readsMounts: Bool

    init(readsMounts: Bool) {
        self.readsMounts = readsMounts
    }

    /// The canonical form of `path`, a plain absolute path, from its entry, or `nil` when there is none or it no
    /// longer holds (the caller walks the path).
    func canonical(_ path: PathBytes) -> CanonicalPath? {
        guard let entry = entries.withLock({ $0.byPath[path] }) else { return nil }
        // A parent reached through no link is looked up without following a final one (as the parent cache does):
        // a directory replaced since by a link to it (renamed) is a link now, and the path is walked again.
        guard
            let parent = try? FileSystemCalls.status(
                entry.parentSpelling,
                followingLinks: entry.parentResolvedSpelling != nil,
                readingMount: readsMounts
            ),
            parent.identity == entry.parentIdentity, parent.mountID == entry.parentMountID
        else { return nil }
        if let resolved = entry.parentResolvedSpelling {
            guard
                (try? FileSystemCalls.status(resolved, followingLinks: false, readingMount: readsMounts))?.identity
                    == entry.parentIdentity
            else { return nil }
        }
        let status: FileStatus?
        do {
            status = try path.withCString { path in
                try FileSystemCalls.status(cString: path, followingLinks: false, readingMount: readsMounts)
            }
        } catch {
            // As the walk does, any failure to look the name up leaves it as given, not existing.
            status = nil
        }
        if let status, status.kind == .symbolicLink { return nil }
        guard (status?.mountID ?? entry.parentMountID) == entry.mountID else { return nil }
        let isFile = status.map { $0.kind != .directory } ?? false
        return CanonicalPath(
            key: entry.key,
            spelling: entry.spelling,
            followedFinalLink: false,
            foldedKey: nil,
            identity: isFile ? status?.identity : nil,
            hasOtherNames: isFile && (status?.linkCount ?? 1) > 1,
            exists: status != nil
        )
    }

    /// Keeps `entry` for `path`.
    func record(_ path: String, _ entry: Entry) {
        // The path, the parent's spelling, the spelling and the key's bytes, an array per component, the rest.
        let cost = 4 * path.utf8.count + 32 * entry.key.components.count + 256
        let key = PathBytes(path)
        entries.withLock { entries in
            guard entries.byPath[key] == nil else { return }
            if entries.byPath.count >= Self.capacity || entries.bytes + cost > Self.byteBudget {
                entries.byPath.removeAll()
                entries.bytes = 0
            }
            entries.byPath[key] = entry
            entries.bytes += cost
        }
    }

    func removeAll() {
        entries.withLock { $0 = Entries() }
    }
}
