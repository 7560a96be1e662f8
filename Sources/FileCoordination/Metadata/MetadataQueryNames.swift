public import Foundation

// The notifications and user-info keys of `NSMetadataQuery`, spelled and valued as Apple's Foundation spells them
// (NSMetadata.h; issue 44).

extension NSNotification.Name {
    /// Posted by a query when ``NSMetadataQuery/start()`` began the gathering.
    public static let NSMetadataQueryDidStartGathering = NSNotification.Name(
        "NSMetadataQueryDidStartGatheringNotification"
    )
    /// Posted by a query as pieces of its gathering arrive.
    public static let NSMetadataQueryGatheringProgress = NSNotification.Name(
        "NSMetadataQueryGatheringProgressNotification"
    )
    /// Posted by a query when the gathering is done: ``NSMetadataQuery/results`` holds every match.
    public static let NSMetadataQueryDidFinishGathering = NSNotification.Name(
        "NSMetadataQueryDidFinishGatheringNotification"
    )
    /// Posted by a query for each batch of changes after the gathering, with the items added, changed and removed
    /// under ``NSMetadataQueryUpdateAddedItemsKey``, ``NSMetadataQueryUpdateChangedItemsKey`` and
    /// ``NSMetadataQueryUpdateRemovedItemsKey``.
    public static let NSMetadataQueryDidUpdate = NSNotification.Name("NSMetadataQueryDidUpdateNotification")
}

/// The items that started to match, in a `NSMetadataQueryDidUpdate` notification's `userInfo` (`[NSMetadataItem]`).
public let NSMetadataQueryUpdateAddedItemsKey = "kMDQueryUpdateAddedItems"
/// The items that changed and still match (`[NSMetadataItem]`, the new items).
public let NSMetadataQueryUpdateChangedItemsKey = "kMDQueryUpdateChangedItems"
/// The items that stopped matching or are gone (`[NSMetadataItem]`, as they were last).
public let NSMetadataQueryUpdateRemovedItemsKey = "kMDQueryUpdateRemovedItems"
