import FCCore
import NIOCore

/// The arbiter's timers (presenter timeouts, deadlock checks), earliest first in a ``DeadlineHeap``: one NIO timer is
/// armed, for the earliest (issue 12), instead of one per request. When it fires, ``willFire`` runs once, then
/// ``fire`` for each timer due, in deadline order, then the NIO timer is armed again for the next.
///
/// - Important: Everything runs on the arbiter's event loop, ``loop``; not `Sendable`.
final class ArbiterTimers {
    let loop: any EventLoop
    /// Runs once each time the NIO timer fires, before the timers due (the host checks the cluster's fence).
    var willFire: () -> Void = {}
    /// Fires one timer due.
    var fire: (TimerID) -> Void = { _ in }
    private var deadlines = DeadlineHeap<TimerID, NIODeadline>()
    /// The NIO timer armed for the earliest deadline, and that deadline.
    private var armedTimer: (deadline: NIODeadline, task: Scheduled<Void>)?
    /// `true` while due timers are being fired: the NIO timer is armed again once, after all of them.
    private(set) var isFiring = false

    init(loop: any EventLoop) {
        self.loop = loop
    }

    /// The number of timers scheduled.
    var count: Int { deadlines.count }

    /// Schedules `timer` to fire `after` from now, replacing its earlier deadline if it had one. Armed by
    /// ``armUnlessFiring()``.
    func start(_ timer: TimerID, after: Duration) {
        deadlines.schedule(timer, at: .now() + .nanoseconds(after.nanoseconds))
    }

    /// Cancels `timer`: it does not fire.
    func cancel(_ timer: TimerID) {
        deadlines.cancel(timer)
    }

    /// Arms the NIO timer for the earliest deadline, unless timers are being fired (it is armed after them).
    func armUnlessFiring() {
        if !isFiring { arm() }
    }

    /// Cancels every timer and the NIO timer.
    func removeAll() {
        deadlines.removeAll()
        armedTimer?.task.cancel()
        armedTimer = nil
    }

    /// Arms the one NIO timer for the earliest deadline, unless one is armed that fires no later. A timer armed for
    /// a deadline since cancelled is left to fire: it finds nothing due and arms the next (cheaper than cancelling
    /// NIO's task on every cancel).
    private func arm() {
        guard let earliest = deadlines.earliest() else { return }
        if let armed = armedTimer {
            guard earliest < armed.deadline else { return }
            armed.task.cancel()
        }
        let task: Scheduled<Void> = loop.assumeIsolated().scheduleTask(deadline: earliest) { [weak self] in
            guard let self else { return }
            self.fireDueTimers()
        }
        armedTimer = (earliest, task)
    }

    /// Fires every timer due now, in deadline order, then arms the NIO timer for the next.
    private func fireDueTimers() {
        guard let armed = armedTimer else { return }
        armedTimer = nil
        // NIO fires at or after the deadline; the armed deadline counts as now in case the clocks' readings differ.
        let now = max(NIODeadline.now(), armed.deadline)
        isFiring = true
        willFire()
        while let timer = deadlines.popDue(at: now) {
            fire(timer)
        }
        isFiring = false
        arm()
    }
}
