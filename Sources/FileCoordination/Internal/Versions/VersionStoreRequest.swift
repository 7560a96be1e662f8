import FCVersionStore

/// One call of the daemon's version store (issue 15), in the client's terms: what ``DaemonVersionStoreAccess`` asks
/// and ``VersionRequestTable`` sends. The transport alone turns it into a `VersionStoreRequest` frame
/// (`DaemonTransport+VersionFrames.swift`, docs/PROTOCOL.md §8), so no protobuf type reaches this layer.
///
/// A value type: `Sendable`.
enum VersionStoreRequest: Sendable, Equatable {
    /// The versions of the item at the path.
    case list(itemPath: String)
    /// The version with this identifier, if any.
    case find(id: String)
    /// A new version of `item` with the contents at `contentsPath`; with `conflict`, an unresolved conflict version.
    case add(item: String, contentsPath: String, byMoving: Bool, conflict: ConflictOrigin?)
    /// The version with this identifier removed.
    case remove(id: String)
    /// Every version of the item at the path removed.
    case removeAll(itemPath: String)
    /// The conflict version marked resolved.
    case resolve(id: String)
    /// The version marked discardable.
    case discardable(id: String)
    /// The item at `itemPath` replaced with the contents of version `id`.
    case replace(itemPath: String, id: String, byMoving: Bool)
    /// The item at `from` moved to `to`: its versions follow it.
    case moved(from: String, to: String)
    /// A new, empty directory inside the store.
    case temporaryDirectory
}
