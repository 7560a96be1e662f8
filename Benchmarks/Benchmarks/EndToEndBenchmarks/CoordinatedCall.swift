import FileCoordination
import Foundation

/// One coordinated read or write of `url` with no options and an empty accessor, as the benchmarks of one call
/// measure it; the error it failed with, if any.
func coordinatedCall(_ url: URL, writing: Bool) -> NSError? {
    var error: NSError?
    if writing {
        NSFileCoordinator().coordinate(writingItemAt: url, options: [], error: &error) { _ in }
    } else {
        NSFileCoordinator().coordinate(readingItemAt: url, options: [], error: &error) { _ in }
    }
    return error
}
