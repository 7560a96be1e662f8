import FCCore
import FCSystem

// What the query service (QueryService.swift) asks of the host, and what the dump shows of its trees.

extension QueryService {
    /// What the service asks of the host.
    enum Output: Sendable {
        /// Items for a query: a piece of its gathering (`gathered` on the last), or one batch of changes.
        case items(
            QueryKey,
            added: [(ItemPath, ItemMetadata)],
            changed: [(ItemPath, ItemMetadata)],
            removed: [ItemPath],
            gathered: Bool,
            count: Int
        )
        /// A folder of the query's trees cannot be watched: changes in it will not reach the query
        /// (`QueryWatchUnavailable`, sent in order with its items).
        case watchUnavailable(QueryKey, folder: ItemPath, reason: String)
        /// Every folder of the query's tree `root` is watched again, after a ``watchUnavailable(_:folder:reason:)``
        /// (`QueryWatchAvailable`, in order with its items).
        case watchAvailable(QueryKey, root: ItemPath)
        /// Watch this folder for the queries (counted by the host with the arbiter's own watches).
        case watch(ItemPath)
        /// Ask the watcher again for a folder already watched for the tree (not counted again): a folder deleted
        /// and made again needs a new watch, which the watcher adds only where none is in place.
        case rewatch(ItemPath)
        case unwatch(ItemPath)
        /// Tell ``barriersPassed(_:)`` this token once the watches asked before it are in place.
        case barrier(UInt64)
    }

    /// What the dump shows of one tree.
    struct TreeSummary: Sendable {
        let root: ItemPath
        let queries: [QueryKey]
        let items: Int
        let directories: Int
        /// Folders of the tree whose watch failed (``QueryTree/unwatchable``).
        let unwatched: Int
        let gathered: Bool
    }
}
