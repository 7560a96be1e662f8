import FCCore
import Foundation

// What hosts tell each other about presenters through etcd (issue 41; docs/ARCHITECTURE.md §15.1, the keys in
// docs/PROTOCOL.md §11): a presenter's record under the host's session, and the mail between daemons (presenter
// messages one way, replies the other). JSON: etcd's values are bytes, and these are read by another build of
// this daemon, perhaps a later one; unknown fields are ignored, a value that does not decode is logged and dropped.

/// A path inside a shared folder, as every host can read it: the folder's cluster name and the components below it,
/// each as hexadecimal bytes (names are bytes, not Unicode).
struct WirePath: Codable, Hashable, Sendable {
    var folder: String
    var components: [String]
}

/// One presenter of a host in a shared folder: the value of
/// `<prefix>presenters/<folder, hex>/<host, hex>/<lease, hex>.<presenter, hex>`.
struct PresenceRecord: Codable, Hashable, Sendable {
    /// The item it presents.
    var path: WirePath
    /// `PresenterCallbacks.rawValue`: the other hosts send it only what it implements.
    var callbacks: UInt32
    /// Whether it presents a package (subitem notifications).
    var isPackage: Bool
    /// The rules by which its host names items (FCFileSystemPolicy's `PathRules.revision`): a host of other rules
    /// could name one item otherwise, and its presenter is not stood in for. `nil`: a host from before the field.
    var pathRules: UInt32?
}

/// One letter of the mail between two daemons: a message for a presenter of the receiving host, or a reply to one
/// the receiver sent.
struct MailItem: Codable, Hashable, Sendable {
    /// A message: the receiver's presenter (its global id, as published).
    var presenter: UInt64?
    /// A message that needs a reply: the sender's request id. A reply: the request it answers.
    var request: UInt64?
    /// A message: what it says (``PresenterMessageKind``, by name).
    var kind: String?
    /// A message: the paths it names, in order (`at`; `from`, `to`).
    var paths: [WirePath]?
    /// A version message: the version's id and `added`, `removed` or `resolved`.
    var version: String?
    var versionChange: String?
    /// A subitem moved in place: its old last component, hexadecimal.
    var movedFromName: String?
    /// A reacquire: the sender's id of the relinquish it follows.
    var relinquish: UInt64?
    /// A reply: `relinquished`, `succeeded` or `failed`.
    var reply: String?
    var reacquirer: Bool?
    var errorDomain: String?
    var errorCode: Int?
    var errorMessage: String?
}

/// One put of mail: the letters, and the receiver's session they are for (mail for an earlier session of the
/// receiver is for presenters it no longer has).
struct MailBatch: Codable, Sendable {
    var toLease: String
    var items: [MailItem]
}

/// Translates between this host's paths and ``WirePath``.
struct SharedPaths: Sendable {
    let folders: [ClusterConfiguration.SharedFolder]
    let byName: [String: ItemPath]

    init(_ folders: [ClusterConfiguration.SharedFolder]) {
        self.folders = folders
        var byName: [String: ItemPath] = [:]
        for folder in folders { byName[folder.name] = folder.path }
        self.byName = byName
    }

    /// The shared folder `path` is in (the deepest, if they nest), or `nil`.
    func folder(of path: ItemPath) -> ClusterConfiguration.SharedFolder? {
        folders.filter { path.isEqualOrDescendant(of: $0.path) }
            .max { $0.path.components.count < $1.path.components.count }
    }

    /// `path` as other hosts read it; `nil` outside every shared folder.
    func wire(_ path: ItemPath) -> WirePath? {
        guard let folder = folder(of: path) else { return nil }
        let below = path.components.dropFirst(folder.path.components.count)
        return WirePath(folder: folder.name, components: below.map(Self.hex))
    }

    /// A path another host sent, in this host's paths; `nil` for a folder this host does not share or a component
    /// that is not a name (bad input is refused, never trusted).
    func local(_ wire: WirePath) -> ItemPath? {
        guard let folder = byName[wire.folder] else { return nil }
        var components = folder.components
        for hex in wire.components {
            guard let component = Self.unhex(hex), ItemPath.isValidComponent(component) else { return nil }
            components.append(component)
        }
        return ItemPath(components: components)
    }

    static func hex(_ bytes: some Collection<UInt8>) -> String {
        String(bytes.flatMap { byte in [Self.digits[Int(byte >> 4)], Self.digits[Int(byte & 0xf)]] })
    }

    private static let digits = Array("0123456789abcdef")

    static func unhex(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = Self.value(utf8[index]), let low = Self.value(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}

/// Where a host takes its letters directly (issue 41): the value of `<prefix>mailboxes/<host, hex>/<lease, hex>`,
/// under the host's session. The token is what a sender shows in its ``PeerHello``: only a reader of the cluster's
/// keys can send letters, as only a writer of them could through etcd.
struct MailboxRecord: Codable, Hashable, Sendable {
    /// An IP address, and a TCP port.
    var address: String
    var port: Int
    /// 32 random bytes, hexadecimal; one per daemon process.
    var token: String
}

/// The first frame a sending daemon writes on its connection to a receiver's mailbox.
struct PeerHello: Codable, Hashable, Sendable {
    /// The version of this exchange: 1.
    var version: Int
    /// The receiver's ``MailboxRecord/token``.
    var token: String
    /// The sender's session, `<host, hex>/<lease, hex>`, as its etcd mail's keys name it.
    var sender: String
}

/// The receiver's answer to a ``PeerHello`` it accepts, and the only frame it writes: the sender writes letters
/// only after it (so that none is lost to a receiver that refuses the connection, such as a restarted daemon asked
/// with its earlier process's token).
struct PeerWelcome: Codable, Hashable, Sendable {
    /// The version of this exchange: 1.
    var version: Int
}

/// Every later frame: one batch of letters, with its number in the sender's series for the receiving session (the
/// series etcd's mail keys number too: a receiver reads the two ways in one order).
struct PeerFrame: Codable, Sendable {
    var number: Int
    var batch: MailBatch
}
