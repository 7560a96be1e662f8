// The attribute keys of a metadata item, spelled and valued as Apple's Foundation spells them (NSMetadataAttributes.h):
// the names a predicate of a metadata query compares (`NSPredicate(format: "%K LIKE %@", NSMetadataItemFSNameKey,
// "*.txt")`) and, later, the keys of `NSMetadataItem.value(forAttribute:)`. Each value is the Spotlight attribute
// name it stands for, as on macOS, so that a format written with the name itself (`kMDItemFSName LIKE '*.txt'`)
// means the same.

/// The item's file name (a `String`), as stored on disk: Apple's `NSMetadataItemFSNameKey`.
public let NSMetadataItemFSNameKey = "kMDItemFSName"

/// The item's name for display (a `String`): Apple's `NSMetadataItemDisplayNameKey`.
public let NSMetadataItemDisplayNameKey = "kMDItemDisplayName"

/// The item's URL (a `URL`): Apple's `NSMetadataItemURLKey`.
public let NSMetadataItemURLKey = "kMDItemURL"

/// The item's full path (a `String`): Apple's `NSMetadataItemPathKey`.
public let NSMetadataItemPathKey = "kMDItemPath"

/// The item's size in bytes (a number): Apple's `NSMetadataItemFSSizeKey`.
public let NSMetadataItemFSSizeKey = "kMDItemFSSize"

/// When the item was created (a `Date`): Apple's `NSMetadataItemFSCreationDateKey`.
public let NSMetadataItemFSCreationDateKey = "kMDItemFSCreationDate"

/// When the item's contents last changed (a `Date`): Apple's `NSMetadataItemFSContentChangeDateKey`.
public let NSMetadataItemFSContentChangeDateKey = "kMDItemFSContentChangeDate"

/// The item's uniform type identifier (a `String`, such as `public.plain-text`): Apple's
/// `NSMetadataItemContentTypeKey`.
public let NSMetadataItemContentTypeKey = "kMDItemContentType"

/// The item's type and every type it conforms to (an array of `String`, such as `public.plain-text`, `public.text`,
/// `public.data`, `public.item`): Apple's `NSMetadataItemContentTypeTreeKey`.
public let NSMetadataItemContentTypeTreeKey = "kMDItemContentTypeTree"
