import FCCore
import FCTestSupport
import Testing

/// Shared by the rule tests.
func path(_ string: String) -> ItemPath { ArbiterHarness.path(string) }

/// A harness whose arbiter watches the file system, as the daemon's does.
func watchingHarness(window: Duration = .milliseconds(50)) -> ArbiterHarness {
    var configuration = ArbiterConfiguration(presenterTimeout: nil, deadlockDetectionDelay: nil)
    configuration.watchesFileSystem = true
    configuration.coalescingWindow = window
    configuration.echoRetention = window * 4
    return ArbiterHarness(configuration: configuration)
}

/// A file's state in the echo tests: inode 7, the size and change time given.
func stamp(size: Int64, at time: Int64) -> ItemStamp { .present(inode: 7, size: size, changeTime: time) }

/// The only open request of `presenter`, or `nil` (and an issue) when it has none or several.
func soleRequest(
    _ h: ArbiterHarness,
    of presenter: PresenterID,
    sourceLocation: SourceLocation = #_sourceLocation
) -> (id: RequestID, kind: PresenterMessageKind)? {
    let open = h.openRequests(of: presenter)
    guard open.count == 1 else {
        Issue.record("\(presenter) has \(open.count) open requests, expected 1", sourceLocation: sourceLocation)
        return nil
    }
    return (open[0].0, open[0].1)
}
