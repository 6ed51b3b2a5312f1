/// Identifies one timer scheduled on a ``TimerService``; pass it to ``TimerService/cancel(_:)``.
///
/// A handle is a small value: storing one per client costs eight bytes. Handles are unique per service for the
/// service's lifetime, so a stale handle never cancels a newer timer.
public struct TimerHandle: Hashable, Sendable, CustomStringConvertible {
    /// The service's opaque identifier.
    @_spi(RoomLinkInternals) public let rawValue: UInt64

    @_spi(RoomLinkInternals) @inlinable
    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    public var description: String { "TimerHandle(\(String(rawValue, radix: 16)))" }
}

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
