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
