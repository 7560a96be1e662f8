/// The rules by which a client makes an item's canonical path, its key for the daemon (docs/SEMANTICS.md §4): links
/// resolved, each folder's case rule (``FileSystemCaseRule``), names folded in case-insensitive folders
/// (``CaseFolding``), names compared by their bytes. The daemon's watcher names what it sees by the same rules.
///
/// Two clients whose rules differ could name one item by two keys, and both be granted a claim on it. So a client
/// states its ``revision`` in `Hello.path_rules`, and a daemon refuses a client that states another
/// (docs/PROTOCOL.md section 2).
///
/// - Important: Constants; thread-safe.
public enum PathRules {
    /// This build's rules. Raise it with any change that can give one item another key than before (a case rule
    /// decided otherwise, another folding, another resolution of links), never for one that cannot.
    ///
    /// 1: the rules of 2026-12-06 (stop 63: case probes by names' bytes; NFC and NFD names two items).
    public static let revision: UInt32 = 1
}
