import FCCore

/// How a query's items are cut into `QueryItems` messages (issue 44): at most ``itemsPerMessage`` items and about
/// ``bytesPerMessage`` bytes each, so that no message nears the frame size limit (1 MiB by default) whatever the
/// paths' lengths: 2,000 paths of 520 bytes, or the removal of a folder of 15,000 files, went past it in one.
enum QueryMessageRuns {
    /// The most items in one message.
    static let itemsPerMessage = 2_000
    /// About the most bytes in one message: the paths' bytes and ``bytesPerItem`` more for each item.
    static let bytesPerMessage = 512 * 1024
    /// What a message spends on an item besides its path's bytes (its fields and their tags: about 30 bytes).
    static let bytesPerItem = 64

    /// `items` in consecutive runs, each one message's worth, by the bytes `size` gives each (never an empty run;
    /// none for no items).
    static func runs<Item>(_ items: [Item], size: (Item) -> Int) -> [ArraySlice<Item>] {
        var runs: [ArraySlice<Item>] = []
        var start = 0
        var bytes = 0
        for index in items.indices {
            let cost = size(items[index]) + bytesPerItem
            if index > start, index - start >= itemsPerMessage || bytes + cost > bytesPerMessage {
                runs.append(items[start..<index])
                start = index
                bytes = 0
            }
            bytes += cost
        }
        if start < items.count { runs.append(items[start...]) }
        return runs
    }

    /// The bytes of `path` as a message spells it (a slash before each component).
    static func length(_ path: ItemPath) -> Int { path.components.reduce(path.components.count) { $0 + $1.count } }
}
