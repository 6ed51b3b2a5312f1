/// A ``TimerHandler`` that runs closures.
///
/// A class, not a struct: a timer table keeps handlers as objects (`TimerHandlerObject`), and two closures are
/// too big for an existential's inline buffer anyway, so a struct was boxed on every timer armed with one.
public final class ClosureTimerHandler: TimerHandler {
    private let fired: @Sendable () -> Void
    private let cancelled: (@Sendable () -> Void)?

    /// Creates a handler that runs `onFire` when the timer fires and `onCancel` when it is cancelled.
    public init(onFire: @escaping @Sendable () -> Void, onCancel: (@Sendable () -> Void)? = nil) {
        self.fired = onFire
        self.cancelled = onCancel
    }

    public func timerFired(_ timer: TimerHandle) { fired() }
    public func timerCancelled(_ timer: TimerHandle) { cancelled?() }
}
