/// Runs callbacks at deadlines, on one serial thread of execution.
///
/// RoomLink's engine arms every heartbeat, retry backoff and server deadline through this protocol and never
/// through a concrete clock, so the same code runs on libevent loops in real time (optionally scaled) and on the
/// deterministic ``SimulationRuntime`` in virtual time.
///
/// Timers are safe to schedule and cancel from any thread. Calls made on the service's own thread (see
/// ``isInServiceThread``) take effect at once and take no lock; calls from elsewhere are sent to it.
///
/// - Important: Deadlines are in scenario time (``RuntimeInstant``). A timer never fires before its deadline.
public protocol TimerService: AnyObject, Sendable {
    /// The current time on this service's clock, in scenario time.
    var now: RuntimeInstant { get }

    /// Whether the calling thread is the one this service runs its timers and jobs on.
    var isInServiceThread: Bool { get }

    /// Schedules `handler` at `deadline`, and then every `period` after it if `period` is not `nil`.
    ///
    /// A periodic timer keeps an absolute schedule: its `n`th firing is due at `deadline + n × period`, however
    /// late earlier firings ran, so it never drifts; periods missed entirely (a stalled loop) are skipped, not
    /// replayed in a burst.
    ///
    /// - Throws: ``RuntimeError/Code/loopShutDown`` after shutdown, ``RuntimeError/Code/invalidPeriod`` for a
    ///   period that is not positive.
    func scheduleTimer(
        at deadline: RuntimeInstant,
        period: Duration?,
        handler: some TimerHandler
    ) throws(RuntimeError)
        -> TimerHandle

    /// Cancels a timer, if it has not fired yet.
    ///
    /// On the service's thread the answer is exact and the handler's ``TimerHandler/timerCancelled(_:)`` has run
    /// when this returns `.cancelled`. Off it, the answer is ``TimerCancellation/requested``.
    @discardableResult
    func cancel(_ timer: TimerHandle) -> TimerCancellation
}

extension TimerService {
    /// Schedules `handler` once at `deadline` (at once if it has passed).
    @discardableResult
    public func schedule(at deadline: RuntimeInstant, handler: some TimerHandler) throws(RuntimeError) -> TimerHandle {
        try scheduleTimer(at: deadline, period: nil, handler: handler)
    }

    /// Schedules `handler` once, `delay` from now.
    ///
    /// - Throws: ``RuntimeError/Code/invalidDelay`` for a negative delay.
    @discardableResult
    public func schedule(after delay: Duration, handler: some TimerHandler) throws(RuntimeError) -> TimerHandle {
        guard delay >= .zero else { throw .invalidDelay(delay) }
        return try scheduleTimer(at: now.advanced(by: delay), period: nil, handler: handler)
    }

    /// Runs `body` once, `delay` from now.
    @discardableResult
    public func schedule(
        after delay: Duration,
        _ body: @escaping @Sendable () -> Void
    ) throws(RuntimeError)
        -> TimerHandle
    {
        try schedule(after: delay, handler: ClosureTimerHandler(onFire: body))
    }

    /// Runs `body` once at `deadline`.
    @discardableResult
    public func schedule(
        at deadline: RuntimeInstant,
        _ body: @escaping @Sendable () -> Void
    ) throws(RuntimeError)
        -> TimerHandle
    {
        try schedule(at: deadline, handler: ClosureTimerHandler(onFire: body))
    }

    /// Calls `handler` every `period`, the first time at `start` (default: one period from now).
    @discardableResult
    public func schedulePeriodic(
        every period: Duration,
        startingAt start: RuntimeInstant? = nil,
        handler: some TimerHandler
    ) throws(RuntimeError) -> TimerHandle {
        guard period > .zero else { throw .invalidPeriod(period) }
        return try scheduleTimer(at: start ?? now.advanced(by: period), period: period, handler: handler)
    }
}
