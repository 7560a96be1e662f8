import FCCore
import FCSystem

/// The files of watched directories that have other names (hard links: `st_nlink` above 1), each watched by its own
/// inode (issue 26, docs/ARCHITECTURE.md §10). inotify tells a directory's watch only of what is done through the
/// names in that directory, so a write through a link in another directory reaches the directory's presenters only
/// through a watch on the file itself. The kernel gives one watch descriptor per inode whatever name it was added
/// through, so there is one watch per file, keyed by its identity, listing the file's names in watched directories.
///
/// Bookkeeping only, no syscalls: ``InotifyWatcher`` adds and removes the kernel's watches and records here what it
/// did. Bounded: at most ``maximumPerDirectory`` names per watched directory, and every name leaves with its
/// directory's watch, with its deletion or rename, or when its file is found to have one name left.
///
/// - Important: Not thread-safe: owned by the watcher's thread, like the rest of ``InotifyWatcher``'s state.
struct LinkedFileWatches {
    /// The most names of linked files watched in one directory. Past it the directory's further linked files are
    /// not watched (the watcher logs it): a write through one of their other names is not seen there.
    static let maximumPerDirectory = 256

    /// One watched file: what it is and the names through which watched directories hold it.
    struct Watch: Equatable {
        /// The file's identity when its first name was noted.
        var identity: FileIdentity
        /// Its names in watched directories (as the arbiter keys them: folded in a case-insensitive directory).
        var names: Set<ItemPath>
    }

    private(set) var byDescriptor: [Int32: Watch] = [:]
    private var byIdentity: [FileIdentity: Int32] = [:]
    private var byName: [ItemPath: Int32] = [:]
    /// The names noted per directory, so that they leave with the directory's watch (O(its names)).
    private var byDirectory: [ItemPath: Set<ItemPath>] = [:]

    /// Watches in use.
    var count: Int { byDescriptor.count }

    /// The watch of the file `identity`, if it has one.
    func descriptor(of identity: FileIdentity) -> Int32? { byIdentity[identity] }

    /// The watch `descriptor`, if it is a linked file's.
    func watch(_ descriptor: Int32) -> Watch? { byDescriptor[descriptor] }

    /// The watch of the file that `name` reaches, if it is noted.
    func descriptor(named name: ItemPath) -> Int32? { byName[name] }

    /// Whether `name` is noted.
    func contains(_ name: ItemPath) -> Bool { byName[name] != nil }

    /// Whether `directory` may have one more name noted.
    func hasRoom(in directory: ItemPath) -> Bool {
        (byDirectory[directory]?.count ?? 0) < Self.maximumPerDirectory
    }

    /// Notes `name` as a name of the file `identity`, watched by `descriptor`. A name noted for another file before
    /// (the name now reaches another file) is moved; the caller removes the kernel's watch ``remove(_:)`` returned.
    /// - Returns: the descriptor whose last name this was, if the name moved off it.
    mutating func add(_ name: ItemPath, identity: FileIdentity, descriptor: Int32) -> Int32? {
        var emptied: Int32?
        if let old = byName[name], old != descriptor { emptied = remove(name) }
        guard let directory = name.parent else { return emptied }
        byName[name] = descriptor
        byIdentity[identity] = descriptor
        byDirectory[directory, default: []].insert(name)
        byDescriptor[descriptor, default: Watch(identity: identity, names: [])].names.insert(name)
        return emptied
    }

    /// Forgets `name` (deleted, renamed away, or no longer a name of a linked file).
    /// - Returns: the descriptor of its watch when this was its last name: the caller removes the kernel's watch.
    mutating func remove(_ name: ItemPath) -> Int32? {
        guard let descriptor = byName.removeValue(forKey: name) else { return nil }
        if let directory = name.parent {
            byDirectory[directory]?.remove(name)
            if byDirectory[directory]?.isEmpty == true { byDirectory[directory] = nil }
        }
        byDescriptor[descriptor]?.names.remove(name)
        guard let watch = byDescriptor[descriptor], watch.names.isEmpty else { return nil }
        byDescriptor[descriptor] = nil
        if byIdentity[watch.identity] == descriptor { byIdentity[watch.identity] = nil }
        return descriptor
    }

    /// Forgets the names in `directory` (its watch went away).
    /// - Returns: the descriptors that lost their last name: the caller removes the kernel's watches.
    mutating func removeDirectory(_ directory: ItemPath) -> [Int32] {
        guard let names = byDirectory[directory] else { return [] }
        return names.sorted().compactMap { remove($0) }
    }

    /// Forgets the watch `descriptor` (the kernel dropped it: `IN_IGNORED`, the file is gone).
    /// - Returns: whether it was a linked file's watch.
    mutating func drop(_ descriptor: Int32) -> Bool {
        guard let watch = byDescriptor[descriptor] else { return false }
        for name in watch.names { _ = remove(name) }
        byDescriptor[descriptor] = nil
        if byIdentity[watch.identity] == descriptor { byIdentity[watch.identity] = nil }
        return true
    }
}
