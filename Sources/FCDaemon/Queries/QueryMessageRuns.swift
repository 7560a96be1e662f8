import FCCore
import FCSystem

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

    /// The bytes a message may take under a daemon whose frames are at most `maximumFrameSize` bytes: half of it, at
    /// most ``bytesPerMessage``. The other half is room for what the count leaves out (the frame's own fields, paths
    /// spelled longer in a client's mount namespace), so that no message fails to encode as a frame: a frame that
    /// could never be sent closed its client's connection, and the client, starting its queries again on the next
    /// one, would have met it again. A single item always fits a limit of 8 KiB or more (a path is at most 4 KiB).
    static func bytesPerMessage(maximumFrameSize: Int) -> Int { min(bytesPerMessage, max(maximumFrameSize / 2, 1)) }

    /// One message's items.
    struct Message {
        var added: [(ItemPath, ItemMetadata)] = []
        var changed: [(ItemPath, ItemMetadata)] = []
        var removed: [ItemPath] = []
        fileprivate var count = 0
        fileprivate var bytes = 0
    }

    /// `added`, `changed` and `removed` packed in that order into as few messages as fit (one, for all but big
    /// batches; never an empty one, none for nothing): the client applies a message's added and changed items
    /// before its removals, and a message before the next.
    static func pack(
        added: [(ItemPath, ItemMetadata)],
        changed: [(ItemPath, ItemMetadata)] = [],
        removed: [ItemPath],
        bytesPerMessage budget: Int = bytesPerMessage
    ) -> [Message] {
        var messages: [Message] = []
        var current = Message()
        func admit(_ path: ItemPath) {
            let cost = length(path) + bytesPerItem
            if current.count > 0, current.count >= itemsPerMessage || current.bytes + cost > budget {
                messages.append(current)
                current = Message()
            }
            current.count += 1
            current.bytes += cost
        }
        for item in added {
            admit(item.0)
            current.added.append(item)
        }
        for item in changed {
            admit(item.0)
            current.changed.append(item)
        }
        for path in removed {
            admit(path)
            current.removed.append(path)
        }
        if current.count > 0 { messages.append(current) }
        return messages
    }

    /// The bytes of `path` as a message spells it (a slash before each component).
    static func length(_ path: ItemPath) -> Int { path.components.reduce(path.components.count) { $0 + $1.count } }
}
