import FCCore
import FCSystem
import FCToolkit
import Synchronization

/// Turns canonical paths (whose names in case-insensitive directories are case-folded) back into spellings a
/// client used (docs/SEMANTICS.md §4: "spelled as the receiving client spelled them").
///
/// Where a path comes from, in order: the receiving presenter's own URL for the part of the path it covers; the
/// spelling this process last gave for exactly that path (``SpellingBook``); the directory's listing on disk, for
/// names in case-insensitive directories. On a machine where no case-insensitive directory was ever seen, canonical
/// paths are spellings already, and nothing is looked up.
///
/// - Important: Thread-safe. May read directories: call it on the thread that delivers the URL (a presenter's
///   queue, the caller's), never on a transport's.
enum Respelling {
    /// How a path is used, which decides which spellings may stand for it.
    enum Role {
        /// An item that is where it was: the presenter's own spelling covers it.
        case item
        /// Where an item was before a move: the spelling that named it then.
        case moveSource
        /// Where an item is after a move: as the directory lists it now.
        case moveDestination
    }

    /// `path` respelled for a presenter whose URL is `presenterURL` (canonical `presenterPath`).
    static func spelling(
        of path: ItemPath,
        role: Role,
        presenterURL: String? = nil,
        presenterPath: ItemPath? = nil,
        canonicalizer: PathCanonicalizer = .shared
    ) -> String {
        var base: (spelling: String, depth: Int) = ("", 0)
        if let presenterURL, let presenterPath, path.isEqualOrDescendant(of: presenterPath),
            role == .item || path != presenterPath
        {
            base = (presenterURL == "/" ? "" : presenterURL, presenterPath.depth)
        }
        guard canonicalizer.caseSensitivity.anyInsensitive else {
            // Canonical names are spellings already: only the presenter's own part (a link, say) is respelled.
            guard base.depth > 0 else { return path.description }
            let rest = path.components[base.depth...].map { "/" + String(decoding: $0, as: UTF8.self) }
            return base.spelling + rest.joined()
        }
        if role == .moveSource, let old = SpellingBook.renames.spelling(of: path) { return old }
        if role != .moveDestination, base.depth == 0 || role == .moveSource,
            let own = SpellingBook.shared.spelling(of: path)
        {
            return own
        }
        var spelled = base.spelling
        var insensitive = false
        for index in base.depth..<path.depth {
            let key = String(decoding: path.components[index], as: UTF8.self)
            let directory = spelled.isEmpty ? "/" : spelled
            if let status = try? FileSystemCalls.status(directory, followingLinks: true),
                status.kind == .directory
            {
                insensitive = canonicalizer.caseSensitivity.isInsensitive(
                    directory: directory,
                    identity: status.identity,
                    fallback: insensitive
                )
            }
            var name = key
            if insensitive, CaseFolding.fold(key) == key {
                try? FileSystemCalls.forEachEntry(ofDirectory: directory) { entry in
                    guard CaseFolding.fold(entry) == key else { return true }
                    name = entry
                    return false
                }
            }
            spelled += "/" + name
        }
        return spelled.isEmpty ? "/" : spelled
    }
}

/// The spelling this process last gave for each canonical path (bounded: dropped whole when full).
///
/// - Important: Thread-safe.
final class SpellingBook: Sendable {
    /// At most this many paths are remembered.
    static let capacity = 1024
    /// The spellings this process gave for exactly these paths.
    static let shared = SpellingBook()
    /// The old spellings of the items this process renamed in place (case-only renames), for the presenters that
    /// hear where the item was.
    static let renames = SpellingBook()

    private let spellings = Locked<[ItemPath: String]>([:])

    /// Remembers that `spelling` names `path`. Callers record only once a case-insensitive directory was seen, so
    /// that the book stays empty (and costs nothing) on case-sensitive file systems.
    func record(_ spelling: String, for path: ItemPath) {
        spellings.withLock { spellings in
            if spellings.count >= Self.capacity { spellings.removeAll(keepingCapacity: true) }
            spellings[path] = spelling
        }
    }

    /// The last spelling recorded for `path`.
    func spelling(of path: ItemPath) -> String? {
        spellings.withLock { $0[path] }
    }
}
