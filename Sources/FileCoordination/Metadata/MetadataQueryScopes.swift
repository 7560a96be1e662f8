// The search scopes of a metadata query, with the values Apple's Foundation gives them at run time (NSMetadata.h
// declares them as string constants): an app that compares or stores a scope sees the same strings as on macOS.

/// Search the user's home directory: Apple's `NSMetadataQueryUserHomeScope`.
public let NSMetadataQueryUserHomeScope = "kMDQueryScopeHome"

/// Search every locally mounted volume, and the user's home directory even where it is remote: Apple's
/// `NSMetadataQueryLocalComputerScope`.
public let NSMetadataQueryLocalComputerScope = "kMDQueryScopeComputer"

/// Search every user-mounted remote volume: Apple's `NSMetadataQueryNetworkScope`.
public let NSMetadataQueryNetworkScope = "kMDQueryScopeNetwork"

/// Search the `Documents` folders of the app's iCloud containers: Apple's `NSMetadataQueryUbiquitousDocumentsScope`.
/// Linux has no iCloud container; the constant exists so that code naming it compiles.
public let NSMetadataQueryUbiquitousDocumentsScope = "NSMetadataQueryUbiquitousDocumentsScope"

/// Search the app's iCloud containers outside their `Documents` folders: Apple's `NSMetadataQueryUbiquitousDataScope`.
/// Linux has no iCloud container; the constant exists so that code naming it compiles.
public let NSMetadataQueryUbiquitousDataScope = "NSMetadataQueryUbiquitousDataScope"

/// Search documents outside the app's container that the user opened before: Apple's
/// `NSMetadataQueryAccessibleUbiquitousExternalDocumentsScope`. Linux has no iCloud container; the constant exists so
/// that code naming it compiles.
public let NSMetadataQueryAccessibleUbiquitousExternalDocumentsScope =
    "NSMetadataQueryAccessibleUbiquitousExternalDocumentsScope"
