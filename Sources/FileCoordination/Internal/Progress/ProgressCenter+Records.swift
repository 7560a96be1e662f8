import Foundation

// What ProgressCenter keeps of each publication and subscription of this process (issue 44), under its state's lock.

extension ProgressCenter {
    /// A progress this process published.
    struct Publication: Sendable {
        let progress: UncheckedProgress
        let url: URL
        /// The fields read from `userInfo` on the publisher's thread (at `publish()`, then at each setter).
        var fields: ProgressSnapshot
    }

    /// A subscription this process made.
    struct Subscription: Sendable {
        let url: URL
        let handler: UncheckedHandler
    }
}
