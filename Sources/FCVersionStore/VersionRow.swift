import GRDB

/// A row of the `version` table.
struct VersionRow: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "version"
    var id: String
    var itemPath: String
    var name: String
    var savingComputer: String?
    var originator: String?
    var modificationDate: Double
    var addedDate: Double
    var isConflict: Bool
    var isResolved: Bool
    var isDiscardable: Bool
    var itemGoneSince: Double?
}
