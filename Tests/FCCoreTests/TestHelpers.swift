import FCCore
import FCTestSupport
import Testing

/// Shared by the rule tests.
func path(_ string: String) -> ItemPath { ArbiterHarness.path(string) }

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
