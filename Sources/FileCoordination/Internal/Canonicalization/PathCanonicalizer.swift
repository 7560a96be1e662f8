import FCCore
import FCFileSystemPolicy
import FCSystem
import FCToolkit
import Synchronization

/// A path made canonical (docs/SEMANTICS.md §4).
struct CanonicalPath: Hashable, Sendable {
    /// What the arbiter compares: symbolic links resolved, `.`, `..` and repeated slashes gone, names in
    /// case-insensitive directories case-folded. Built from the walk's own byte components, with no string in
    /// between: the one representation a claim's path keeps from here to the wire (issue 22).
    var key: ItemPath
    /// The same path spelled with the names as given or as the links spelled them (not folded): a path that names
    /// the item on disk, for handing back (`.resolvesSymbolicLink`).
    var spelling: String
    /// Whether the last component as given was a symbolic link that was followed.
    var followedFinalLink: Bool
    /// When a directory on the way could not be decided (``CaseSensitivity``: an empty directory on a FUSE file
    /// system that the device does not name), ``key`` holds its names as given and this key holds them case-folded;
    /// a claim takes both, so that it meets a process that decided the directory either way. `nil` otherwise.
    var foldedKey: ItemPath? = nil
    /// The file the path names, `(st_dev, st_ino)` from the walk's own `lstat` (or `stat` of a followed link), when
    /// it exists and is not a directory; `nil` otherwise (issue 26: the file's other names meet it by this). No
    /// syscall is added for it.
    var identity: FileIdentity? = nil
    /// The file had more than one name (`st_nlink` above 1) in the same `lstat`: a lease never decides its claims in
    /// process (issue 23 with 26). `false` for a directory or an item that does not exist.
    var hasOtherNames = false
    /// Whether the item existed when its last component was looked up (a file or a directory).
    var exists = false
}

/// Why a path could not be made canonical.
enum CanonicalizationError: Error, Equatable {
    /// More than ``PathCanonicalizer/maximumLinks`` symbolic links, or a cycle of them (`ELOOP`).
    case tooManyLinks(links: Int)
    /// The path is not absolute.
    case relative
    /// The path holds a NUL byte, which no Linux file name can hold.
    case containsNUL
}

/// Makes absolute paths canonical in the caller's thread, with the syscalls of FCSystem and no Foundation.
///
/// The walk (cold): components one by one from the root; each one of an existing prefix is `lstat`ed; a symbolic
/// link is read and its target's components are walked in its place (so a `..` after a linked component leaves
/// the link's target, as the kernel does); more than 40 links fail with `ELOOP`; once a component does not exist,
/// the rest is kept as given (lexically, `..` included). Each name is case-folded when the directory holding it is
/// case-insensitive (``CaseSensitivity``); below the last existing directory, its answer holds.
///
/// The cache: the canonical form of a path's parent directory, kept under the parent as spelled, validated on
/// each use by `(st_dev, st_ino)`: `stat` of the parent as spelled (plus `stat` of its canonical spelling when a
/// link was followed), then `lstat` of the path itself. A cached call costs 2 or 3 syscalls. At most
/// ``capacity`` directories are kept; the cache is dropped whole when full.
///
/// - Important: Thread-safe; every syscall runs on the calling thread, outside the lock (a hung mount blocks only
///   its caller).
final class PathCanonicalizer: Sendable {
    /// The largest number of symbolic links followed in one path (Linux's `MAXSYMLINKS`).
    static let maximumLinks = 40
    /// At most this many parent directories are cached.
    static let capacity = 1024

    /// The process's canonicaliser.
    static let shared = PathCanonicalizer()

    let caseSensitivity = CaseSensitivity()
    /// The bind mounts of the namespace, or `nil` for paths alone (no mount ids read, no mapping: canonicalisation
    /// as before issue 26, which the benchmark compares against in the same run).
    let mountAliases: MountAliases?
    private var readsMounts: Bool { mountAliases != nil }

    init(mountAliases: MountAliases? = .shared) {
        self.mountAliases = mountAliases
        self.files = CanonicalFileCache(readsMounts: mountAliases != nil)
    }
    /// Keyed by the bytes of the parent as spelled (``PathBytes``): NFC and NFD spellings are two directories.
    private let directories = Locked<[PathBytes: Walk]>([:])
    /// The files already made canonical, under their path as given (the last step of the cached way, kept).
    private let files: CanonicalFileCache

    /// The state of a walk: the resolved prefix so far.
    struct Walk: Sendable {
        private(set) var spelled: [Substring] = []
        /// `spelled` joined, kept as components are appended and removed: it was joined again at each use, three
        /// times per call, a tenth of a leased read's instructions (issue 23).
        private(set) var spelling = "/"
        /// The canonical components (``CanonicalPath/key``), as bytes.
        var keys: [[UInt8]] = []
        /// The number of leading components known to exist.
        var existing = 0
        /// The identity of the resolved prefix when it exists (the root's at the start).
        var identity: FileIdentity?
        /// The resolved prefix's `st_nlink` when it is the last component walked (1 otherwise).
        var linkCount: UInt64 = 1
        /// Whether the resolved prefix, or the last existing directory above it, is case-insensitive; `nil` when
        /// that could not be decided.
        var rule: Bool? = false
        /// The device of the directory that gave ``rule``: a directory on the same device inherits an answer.
        var ruleDevice: UInt64?
        /// The keys with the names in undecided directories case-folded, once there is one (else `nil`).
        var foldedKeys: [[UInt8]]?
        /// Whether `rule` was decided for the resolved prefix itself.
        var decided = false
        var links = 0
        var followedFinalLink = false
        /// Whether the resolved prefix, when it exists, is a directory (the root is).
        var isDirectory = true
        /// The mount the resolved prefix (or the last existing component) is on (`stx_mnt_id`), when known.
        var mountID: UInt64?
        /// The mount whose alias ``mountAlias`` holds (decided once per mount, ``decideMount``).
        var decidedMount: UInt64?
        /// When the resolved prefix is under a bind mount (issue 26): how many leading components name the mount
        /// point, and the components of the mount's root under the mount that shows it from higher up.
        var mountAlias: (depth: Int, target: [[UInt8]])?

        var exists: Bool { existing == spelled.count }
        var key: ItemPath { ItemPath(components: mapped(keys)) }
        var foldedKey: ItemPath? {
            guard let foldedKeys, foldedKeys != keys else { return nil }
            return ItemPath(components: mapped(foldedKeys))
        }

        /// `keys` with the mount point's components replaced by the mount's first path (``mountAlias``).
        func mapped(_ keys: [[UInt8]]) -> [[UInt8]] {
            guard let mountAlias, keys.count >= mountAlias.depth else { return keys }
            return mountAlias.target + keys[mountAlias.depth...]
        }

        /// Appends a component and its key, `folded` being its key in an undecided directory.
        mutating func append(_ component: Substring, key: [UInt8], undecided: Bool) {
            if undecided, foldedKeys == nil { foldedKeys = keys }
            foldedKeys?.append(undecided ? Array(CaseFolding.fold(component).utf8) : key)
            if !spelled.isEmpty { spelling += "/" }
            spelling += component
            spelled.append(component)
            keys.append(key)
        }

        mutating func removeLast() {
            let last = spelled.removeLast()
            spelling =
                spelled.isEmpty ? "/" : String(Substring(spelling.utf8.dropLast(last.utf8.count + 1)))
            keys.removeLast()
            foldedKeys?.removeLast()
        }

        var canonical: CanonicalPath {
            CanonicalPath(
                key: key,
                spelling: spelling,
                followedFinalLink: followedFinalLink,
                foldedKey: foldedKey,
                identity: exists && !isDirectory ? identity : nil,
                hasOtherNames: exists && !isDirectory && linkCount > 1,
                exists: exists
            )
        }
    }

    /// The canonical form of `path`, an absolute path. `followingFinalLink`: whether a symbolic link as last
    /// component is resolved (a link named with a trailing slash always is).
    func canonicalize(_ path: String, followingFinalLink: Bool) throws(CanonicalizationError) -> CanonicalPath {
        try canonicalize(PathBytes(path), followingFinalLink: followingFinalLink)
    }

    /// ``canonicalize(_:followingFinalLink:)`` of a path given as bytes (the tail of a URL's string): the file cache
    /// is asked without copying them; only a path it does not know is copied into a `String` of its own.
    func canonicalize(_ bytes: PathBytes, followingFinalLink: Bool) throws(CanonicalizationError) -> CanonicalPath {
        guard bytes.count > 0, bytes.withBytes({ $0[0] }) == UInt8(ascii: "/") else { throw .relative }
        // A path with a NUL byte is never kept: the cache is asked first.
        if let known = files.canonical(bytes) { return known }
        let path = bytes.path
        guard !Self.containsNUL(path) else { throw .containsNUL }
        if let cached = try cachedCanonicalize(path, followingFinalLink: followingFinalLink) { return cached }
        var walk = try rootWalk()
        try self.walk(&walk, Self.components(path), followingFinalLink)
        decideMount(&walk)
        return walk.canonical
    }

    /// Decides whether the mount of the resolved prefix is a bind mount with a first path elsewhere (issue 26,
    /// ``MountAliases``), once per mount a walk reaches: a cached parent carries the decision, so a cached call on a
    /// plain mount costs nothing more.
    private func decideMount(_ walk: inout Walk) {
        guard let id = walk.mountID, walk.decidedMount != id else { return }
        walk.decidedMount = id
        walk.mountAlias = nil
        guard let alias = mountAliases?.alias(ofMount: id) else { return }
        let point = Self.components(alias.mountPoint).filter { !$0.isEmpty }
        guard point.count <= walk.existing, walk.spelled.starts(with: point) else { return }
        walk.mountAlias = (point.count, alias.target.utf8.split(separator: Self.slash).map(Array.init))
    }

    /// Forgets every cached directory (tests, and the benchmark's cold case).
    func removeAllCached() {
        directories.withLock { $0.removeAll() }
        files.removeAll()
    }

    /// Forgets the cached directories and every case-sensitivity answer (tests).
    func removeAllCachedAndAnswers() {
        removeAllCached()
        caseSensitivity.removeAll()
    }

    // MARK: The cached path

    /// The answer from the cache, or `nil` when the path is not plain (`.`, `..`, `//`) or its parent is not cached
    /// or no longer valid.
    private func cachedCanonicalize(
        _ path: String,
        followingFinalLink: Bool
    ) throws(CanonicalizationError) -> CanonicalPath? {
        // On the UTF-8 bytes: this runs for every coordinated call, and searching the `String` for "//", "/./" and
        // "/../" took a tenth of a leased read's time (issue 23's profile).
        var trimmed = path.utf8[...]
        var trailingSlash = false
        while trimmed.count > 1, trimmed.last == Self.slash {
            trimmed = trimmed.dropLast()
            trailingSlash = true
        }
        guard trimmed.count > 1, let slash = trimmed.lastIndex(of: Self.slash), Self.isPlain(trimmed) else {
            return nil
        }
        let parentPath = slash == trimmed.startIndex ? "/" : String(Substring(trimmed[..<slash]))
        let name = Substring(trimmed[trimmed.index(after: slash)...])
        let parent: Walk
        // A parent reached through no link is looked up without following a final one: a directory replaced since
        // by a link to it (renamed) is then a link, not the cached directory, and is walked again.
        if let known = directories.withLock({ $0[PathBytes(parentPath)] }), let identity = known.identity,
            case let direct = known.spelling.utf8.elementsEqual(parentPath.utf8),
            let status = try? FileSystemCalls.status(parentPath, followingLinks: !direct, readingMount: readsMounts),
            status.identity == identity, status.mountID == known.mountID,
            direct
                || (try? FileSystemCalls.status(known.spelling, followingLinks: false, readingMount: readsMounts)
                    .identity) == identity
        {
            parent = known
        } else {
            var walk = try rootWalk()
            try self.walk(&walk, Self.components(parentPath), true)
            guard walk.exists, walk.identity != nil else { return nil }
            decideInsensitivity(&walk)
            decideMount(&walk)
            walk.followedFinalLink = false
            // An undecided directory is not remembered: it may be decided at the next call.
            if walk.rule != nil, walk.foldedKeys == nil {
                directories.withLock { directories in
                    if directories.count >= Self.capacity { directories.removeAll(keepingCapacity: true) }
                    directories[PathBytes(parentPath)] = walk
                }
            }
            parent = walk
        }
        var walk = parent
        var components: [Substring] = [name]
        if trailingSlash { components.append("") }
        try self.walk(&walk, components, followingFinalLink)
        decideMount(&walk)
        let canonical = walk.canonical
        // Kept for the next call on the same path when the parent is one the cache keeps and the name was no link.
        // A name on a mount of its own (a file bind-mounted over another) is left out: its mount's mapping is
        // decided again at each call, as mount ids are reused by later mounts.
        if !trailingSlash, parent.rule != nil, parent.foldedKeys == nil, walk.foldedKeys == nil,
            !walk.followedFinalLink, walk.links == parent.links, walk.mountID == parent.mountID,
            let parentIdentity = parent.identity
        {
            files.record(
                path,
                CanonicalFileCache.Entry(
                    parentSpelling: parentPath,
                    parentIdentity: parentIdentity,
                    parentMountID: parent.mountID,
                    parentResolvedSpelling: parent.spelling.utf8.elementsEqual(parentPath.utf8) ? nil : parent.spelling,
                    key: canonical.key,
                    spelling: canonical.spelling,
                    mountID: walk.mountID
                )
            )
        }
        return canonical
    }

    private static let slash = UInt8(ascii: "/")

    /// Whether `path` holds a NUL byte, searched in a native string's buffer (the string's own `contains` decoded
    /// each byte in turn: a twentieth of a leased read's instructions, issue 39).
    static func containsNUL(_ path: String) -> Bool {
        path.utf8.withContiguousStorageIfAvailable { $0.contains(0) } ?? path.utf8.contains(0)
    }

    /// Whether `path` (absolute, without trailing slashes) can take the cached way: no empty, `.` or `..`
    /// component. One pass over the bytes.
    static func isPlain(_ path: Substring.UTF8View) -> Bool {
        var length = 0
        var dots = 0
        var first = true
        for byte in path {
            if byte == slash {
                if !first && (length == 0 || (length == dots && dots <= 2)) { return false }
                first = false
                length = 0
                dots = 0
                continue
            }
            length += 1
            if byte == UInt8(ascii: ".") { dots += 1 }
        }
        return !(length == dots && dots <= 2)
    }

    /// `path` split at its `/` bytes, empty components kept. Not at `Character`s: a name that starts with a
    /// combining mark would join the slash before it into one `Character` and stay unsplit.
    static func components(_ path: String) -> [Substring] {
        path.utf8.split(separator: slash, omittingEmptySubsequences: false).map { Substring($0) }
    }

    // MARK: The walk

    private func rootWalk() throws(CanonicalizationError) -> Walk {
        var walk = Walk()
        let status = try? FileSystemCalls.status("/", followingLinks: true, readingMount: readsMounts)
        walk.identity = status?.identity
        walk.mountID = status?.mountID
        return walk
    }

    /// Decides whether the resolved prefix (an existing directory) is case-insensitive, once.
    private func decideInsensitivity(_ walk: inout Walk) {
        guard !walk.decided else { return }
        walk.decided = true
        guard walk.exists, let identity = walk.identity else { return }
        walk.rule = caseSensitivity.answer(
            directory: walk.spelling,
            identity: identity,
            inherited: walk.ruleDevice == identity.device ? walk.rule : nil
        )
        walk.ruleDevice = identity.device
    }

    /// Walks `components` (a path split at `/`, empty and `.` components meaning nothing) from `walk`'s prefix.
    private func walk(
        _ walk: inout Walk,
        _ components: [Substring],
        _ followingFinalLink: Bool
    ) throws(CanonicalizationError) {
        // A stack, next component last.
        var pending = Array(components.reversed())
        while let component = pending.popLast() {
            if component.isEmpty || component == "." { continue }
            if component == ".." {
                guard !walk.spelled.isEmpty else { continue }
                walk.removeLast()
                if walk.existing > walk.spelled.count {
                    walk.existing = walk.spelled.count
                    // Its identity and case rule are the parent's: looked up again below when needed.
                    let status = try? FileSystemCalls.status(
                        walk.spelling,
                        followingLinks: true,
                        readingMount: readsMounts
                    )
                    walk.identity = status?.identity
                    walk.mountID = status?.mountID
                    walk.isDirectory = true
                    walk.decided = false
                    walk.rule = false
                    walk.ruleDevice = nil
                }
                continue
            }
            let isLast = pending.allSatisfy { $0 == "." || $0.isEmpty }
            let follows = !isLast || followingFinalLink || pending.contains { $0.isEmpty }
            if walk.exists { decideInsensitivity(&walk) }
            let key = walk.rule == true ? Array(CaseFolding.fold(component).utf8) : Array(component.utf8)
            let undecided = walk.rule == nil
            guard walk.exists else {
                walk.append(component, key: key, undecided: undecided)
                continue
            }
            let candidate = walk.spelled.isEmpty ? "/" + component : walk.spelling + "/" + component
            guard let status = try? FileSystemCalls.status(candidate, followingLinks: false, readingMount: readsMounts)
            else {
                walk.append(component, key: key, undecided: undecided)
                continue
            }
            if status.kind == .symbolicLink, follows {
                walk.links += 1
                guard walk.links <= Self.maximumLinks,
                    let target = try? FileSystemCalls.symbolicLinkTarget(candidate)
                else { throw .tooManyLinks(links: walk.links) }
                if isLast { walk.followedFinalLink = true }
                if target.hasPrefix("/") {
                    let (links, followedFinalLink) = (walk.links, walk.followedFinalLink)
                    walk = try rootWalk()
                    walk.links = links
                    walk.followedFinalLink = followedFinalLink
                }
                pending.append(contentsOf: Self.components(target).reversed())
                continue
            }
            walk.append(component, key: key, undecided: undecided)
            walk.existing = walk.spelled.count
            walk.identity = status.identity
            walk.linkCount = status.linkCount
            walk.mountID = status.mountID
            walk.isDirectory = status.kind == .directory
            walk.decided = false
            if status.kind != .directory {
                // A file: whatever follows does not exist; it keeps the enclosing directory's case rule.
                walk.decided = true
            }
        }
    }
}

extension ItemIdentity {
    /// The core's opaque identity of the file `stat` described (issue 26).
    init(_ identity: FileIdentity) {
        self.init(device: identity.device, inode: identity.inode)
    }
}
