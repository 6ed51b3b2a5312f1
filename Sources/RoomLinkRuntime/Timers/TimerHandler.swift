/// Receives the outcome of a timer scheduled on a ``TimerService``.
///
/// Every timer has exactly one outcome: a one-shot timer is either fired once or cancelled once; a periodic timer
/// fires once per period until it is cancelled once. Both calls run on the service's own thread (the loop the
/// timer was scheduled on, or the simulation), so an actor pinned to that loop can handle them with
/// `assumeIsolated` and no thread hop:
///
/// ```swift
/// extension Client: TimerHandler {
///     nonisolated func timerFired(_ timer: TimerHandle) {
///         assumeIsolated { $0.heartbeatDue() }
///     }
/// }
/// ```
public protocol TimerHandler: Sendable {
    /// Called when the timer's deadline has passed (never before it).
    func timerFired(_ timer: TimerHandle)

    /// Called once when the timer is cancelled before firing, explicitly or because its loop shut down.
    ///
    /// For a periodic timer this is its last call.
    func timerCancelled(_ timer: TimerHandle)
}

extension TimerHandler {
    /// Does nothing.
    public func timerCancelled(_ timer: TimerHandle) {}
}
