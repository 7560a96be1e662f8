import FCCore
import Foundation

/// What a live query's first gathering received, in the order it came (issue 44): each path's bytes in one buffer and
/// the item it was given (`nil`: removed, or refused by the predicate). Each message's part is sorted as it comes,
/// while the daemon lists what follows, so that the end of the gathering, which the user waits for, merges sorted
/// runs instead of sorting 100,000 paths.
///
/// - Important: Not thread-safe: confined to its query's serial queue, with ``MetadataQueryResults``.
struct GatheringArrivals {
    private var bytes: [UInt8] = []
    private var bounds: [Range<Int>] = []
    private var items: [NSMetadataItem?] = []
    /// Indices into the arrays above: sorted by path up to `sortedCount`, in arrival order after.
    private var order: [Int] = []
    private var sortedCount = 0

    mutating func add(_ path: Data, _ item: NSMetadataItem?) {
        let start = bytes.count
        bytes.append(contentsOf: path)
        bounds.append(start..<bytes.count)
        order.append(items.count)
        items.append(item)
    }

    /// Sorts what was added since the last call: one more sorted run.
    mutating func sortNewArrivals() {
        guard sortedCount < order.count else { return }
        Self.sortIndices(&order[sortedCount...], bytes: bytes, bounds: bounds)
        sortedCount = order.count
    }

    /// The items in path order, each path's last arrival only, those given no item left out; what ``index()``
    /// then indexes.
    mutating func merge() -> [NSMetadataItem] {
        sortNewArrivals()
        // A stable sort finds the runs and merges them; among equal paths the arrival order stays.
        Self.sortIndices(&order[...], bytes: bytes, bounds: bounds)
        var kept: [Int] = []
        kept.reserveCapacity(order.count)
        bytes.withUnsafeBytes { buffer in
            for (position, index) in order.enumerated() where items[index] != nil {
                if position + 1 < order.count {
                    let next = order[position + 1]
                    let same = ByteComparison.equal(
                        UnsafeRawBufferPointer(rebasing: buffer[bounds[index]]),
                        UnsafeRawBufferPointer(rebasing: buffer[bounds[next]])
                    )
                    if same { continue }
                }
                kept.append(index)
            }
        }
        order = kept
        return kept.map { items[$0]! }
    }

    /// The merged items by path (after ``merge()``).
    func index() -> [ByteKey: NSMetadataItem] {
        var index: [ByteKey: NSMetadataItem] = [:]
        index.reserveCapacity(order.count)
        for position in order { index[ByteKey(Array(bytes[bounds[position]]))] = items[position]! }
        return index
    }

    /// Sorts `indices` by the bytes their `bounds` give in `bytes`, compared in the buffer (no retain per
    /// comparison): the arrivals' runs, and ``MetadataQueryResults``'s reorder of its results. Static, with the
    /// buffers passed in: a method of `self` called while `order` is changed in place worked on a copy of `self`,
    /// which copied the whole `order` at each message.
    static func sortIndices(_ indices: inout ArraySlice<Int>, bytes: [UInt8], bounds: [Range<Int>]) {
        bytes.withUnsafeBytes { buffer in
            bounds.withUnsafeBufferPointer { bounds in
                indices.sort {
                    ByteComparison.precedes(
                        UnsafeRawBufferPointer(rebasing: buffer[bounds[$0]]),
                        UnsafeRawBufferPointer(rebasing: buffer[bounds[$1]])
                    )
                }
            }
        }
    }
}
