/// What ``TimerService/cancel(_:)`` achieved.
public enum TimerCancellation: Hashable, Sendable {
    /// The timer was pending and is now cancelled; its handler's ``TimerHandler/timerCancelled(_:)`` was called.
    case cancelled
    /// The timer had already fired (one-shot) or been cancelled; nothing changed.
    case notPending
    /// Called off the service's thread: the request was sent to the service, which decides on its own thread.
    /// The handler learns the outcome (fired or cancelled), exactly once.
    case requested
}
