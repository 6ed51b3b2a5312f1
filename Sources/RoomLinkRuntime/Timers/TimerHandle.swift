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

extension TimerHandle {
    // No service hands out a handle whose value is 0: a timer queue's IDs carry a generation of at least 1 in their
    // high word (``TimerQueueID``), and handles given out off a service's thread have their top bit set
    // (``RemoteTimerIDs``). So 0 can stand for "no handle" in a packed word.

    /// The handle as one word, 0 for none: what a million clients keep, where an optional handle takes two words.
    public static func packed(_ handle: TimerHandle?) -> UInt64 {
        guard let handle else { return 0 }
        precondition(handle.rawValue != 0, "a timer handle of value 0, which stands for none when packed")
        return handle.rawValue
    }

    /// The handle a packed word holds, or `nil` for 0.
    public init?(packed: UInt64) {
        guard packed != 0 else { return nil }
        self.init(rawValue: packed)
    }
}
