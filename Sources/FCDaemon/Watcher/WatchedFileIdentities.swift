import FCCore
import FCSystem

/// The identity of each file in the watched directories, as the watcher last looked (issue 26): so that a
/// coordinated write of a file with other names (``FileSystemWatcher/fileWritten(_:)``) finds the file's names in
/// watched directories at the cost of a dictionary lookup, without looking at any directory again. The watcher
/// `lstat`s each entry of a directory when it adds the directory's watch (it does anyway, for
/// ``LinkedFileWatches``) and each name created or moved into it later; deletions and renames away forget names.
///
/// Bounded: at most ``maximumPerDirectory`` names per directory (past it, the rest of that directory is not
/// indexed and the watcher logs it once), and every name leaves with its directory's watch.
///
/// - Important: Not thread-safe: owned by the watcher's thread.
struct WatchedFileIdentities {
    /// The most names indexed in one directory.
    static let maximumPerDirectory = 4096

    private var byIdentity: [FileIdentity: Set<ItemPath>] = [:]
    private var byName: [ItemPath: FileIdentity] = [:]
    private var byDirectory: [ItemPath: Set<ItemPath>] = [:]

    /// Names indexed.
    var count: Int { byName.count }

    /// Whether `name` is indexed (a file the watcher saw there and has not seen go).
    func contains(_ name: ItemPath) -> Bool { byName[name] != nil }

    /// The names of the file `identity` in watched directories, sorted.
    func names(of identity: FileIdentity) -> [ItemPath] { byIdentity[identity]?.sorted() ?? [] }

    /// Records that `name` reaches the file `identity`. `false` when its directory is full (nothing recorded).
    mutating func set(_ name: ItemPath, to identity: FileIdentity) -> Bool {
        if byName[name] == identity { return true }
        remove(name)
        guard let directory = name.parent else { return false }
        guard (byDirectory[directory]?.count ?? 0) < Self.maximumPerDirectory else { return false }
        byName[name] = identity
        byIdentity[identity, default: []].insert(name)
        byDirectory[directory, default: []].insert(name)
        return true
    }

    /// Forgets `name` (deleted, renamed away, not a file).
    mutating func remove(_ name: ItemPath) {
        guard let identity = byName.removeValue(forKey: name) else { return }
        byIdentity[identity]?.remove(name)
        if byIdentity[identity]?.isEmpty == true { byIdentity[identity] = nil }
        if let directory = name.parent {
            byDirectory[directory]?.remove(name)
            if byDirectory[directory]?.isEmpty == true { byDirectory[directory] = nil }
        }
    }

    /// Forgets the names in `directory` (its watch went away).
    mutating func removeDirectory(_ directory: ItemPath) {
        guard let names = byDirectory[directory] else { return }
        for name in names { remove(name) }
    }
}
