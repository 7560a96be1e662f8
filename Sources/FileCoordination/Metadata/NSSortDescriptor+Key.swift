import FCToolkit
public import Foundation

// `NSSortDescriptor(key:ascending:)` for metadata queries (issue 44): swift-corelibs-foundation marks it unavailable
// (it has no key-value coding), and macOS code sorts a query's results with it by attribute name
// (`NSSortDescriptor(key: NSMetadataItemFSNameKey, ascending: true)`). Declared here, it wins over the unavailable
// one; the descriptor remembers its key for ``NSMetadataQuery``, which sorts its results by the items' attributes.

extension NSSortDescriptor {
    /// A descriptor that orders metadata items by the attribute `key`: strings by `compare(_:)`, numbers by value,
    /// dates by time, an item without the attribute first. Only ``NSMetadataQuery`` reads the key: for anything
    /// else the descriptor compares nothing (swift-corelibs-foundation has no key-value coding).
    public convenience init(key: String?, ascending: Bool) {
        self.init(keyPath: \String.self, ascending: ascending)
        if let key { SortDescriptorKeys.shared.remember(key, for: self) }
    }

    /// The attribute name given to ``init(key:ascending:)``, if this descriptor was made by it.
    var metadataKey: String? { SortDescriptorKeys.shared.key(of: self) }
}

/// The keys of descriptors made by `init(key:ascending:)`, by descriptor (weakly held; entries of descriptors gone
/// are dropped as new ones come, so the table holds about as many entries as live descriptors).
///
/// - Important: Thread-safe (one lock).
final class SortDescriptorKeys: Sendable {
    static let shared = SortDescriptorKeys()

    private struct Entry {
        weak var descriptor: NSSortDescriptor?
        let key: String
    }
    // @unchecked: the entries are only touched under the lock.
    private struct Table: @unchecked Sendable {
        var entries: [ObjectIdentifier: Entry] = [:]
        var sweepAt = 64
    }
    private let table = Locked(Table())

    func remember(_ key: String, for descriptor: NSSortDescriptor) {
        table.withLock { table in
            table.entries[ObjectIdentifier(descriptor)] = Entry(descriptor: descriptor, key: key)
            guard table.entries.count >= table.sweepAt else { return }
            table.entries = table.entries.filter { $0.value.descriptor != nil }
            table.sweepAt = max(64, table.entries.count * 2)
        }
    }

    func key(of descriptor: NSSortDescriptor) -> String? {
        table.withLock { table in
            guard let entry = table.entries[ObjectIdentifier(descriptor)], entry.descriptor === descriptor else {
                return nil
            }
            return entry.key
        }
    }
}
