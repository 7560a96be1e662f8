public import Dispatch

extension Duration {
    /// The duration for Dispatch (nanoseconds; negative durations are 0).
    public var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        return .nanoseconds(Int(clamping: max(0, nanoseconds)))
    }
}
