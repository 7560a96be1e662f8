import Dispatch

/// Redraws a view every 100 ms while it shows a running copy: a proxy `Progress` changes its counts without a
/// notification (swift-corelibs-foundation has no key-value observing).
///
/// - Important: Used on its view's serial queue only, where `redraw` runs too.
final class RedrawTimer {
    private let queue: DispatchQueue
    private let redraw: @Sendable () -> Void
    private var timer: (any DispatchSourceTimer)?

    init(queue: DispatchQueue, redraw: @escaping @Sendable () -> Void) {
        self.queue = queue
        self.redraw = redraw
    }

    /// Runs while `running`, stops otherwise.
    func run(_ running: Bool) {
        if running, timer == nil {
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100))
            timer.setEventHandler(handler: redraw)
            timer.resume()
            self.timer = timer
        } else if !running {
            timer?.cancel()
            timer = nil
        }
    }
}
