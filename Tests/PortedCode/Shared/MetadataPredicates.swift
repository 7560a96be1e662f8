// Metadata query predicates written as macOS apps write them (a "find the text files" search, a recent-documents
// filter): Apple's NSPredicate format initialisers, Apple's attribute keys, and NSCompoundPredicate. The one line that
// is not macOS code is the guarded import.

import Foundation

#if canImport(FileCoordination)
import FileCoordination
#endif

enum MetadataPredicates {
    /// Text files by name, whatever the case of their extension.
    static func textFiles() -> NSPredicate {
        NSPredicate(format: "%K LIKE[c] %@", NSMetadataItemFSNameKey, "*.txt")
    }

    /// Files larger than `bytes`.
    static func larger(than bytes: Int) -> NSPredicate {
        NSPredicate(format: "%K > %d", NSMetadataItemFSSizeKey, bytes)
    }

    /// Files changed after `date`: a date goes through the argument array.
    static func changed(after date: Date) -> NSPredicate {
        NSPredicate(format: "%K > %@", argumentArray: [NSMetadataItemFSContentChangeDateKey, date])
    }

    /// Plain text or images, by their content type tree.
    static func textOrImages() -> NSPredicate {
        NSPredicate(
            format: "%K == %@ OR %K == %@",
            NSMetadataItemContentTypeTreeKey,
            "public.text",
            NSMetadataItemContentTypeTreeKey,
            "public.image"
        )
    }

    /// Large text files changed recently, but not drafts.
    static func recentLargeTextFiles(since date: Date) -> NSPredicate {
        NSCompoundPredicate(andPredicateWithSubpredicates: [
            textFiles(),
            larger(than: 1_000),
            changed(after: date),
            NSCompoundPredicate(
                notPredicateWithSubpredicate: NSPredicate(
                    format: "%K BEGINSWITH[cd] 'draft'",
                    NSMetadataItemDisplayNameKey
                )
            ),
        ])
    }
}
