/// A timer's slot and generation in a ``TimerQueue``, packed so that a stale ID never matches a reused slot.
///
/// Generations stay below 2^31, so a packed ID never has its top bit set: that space belongs to handles given out
/// off a service's thread (``RemoteTimerIDs``).
@_spi(RoomLinkInternals) public struct TimerQueueID: Hashable, Sendable {
    @_spi(RoomLinkInternals) public let rawValue: UInt64
    @inlinable
    @_spi(RoomLinkInternals) public init(rawValue: UInt64) { self.rawValue = rawValue }
    @inlinable
    @_spi(RoomLinkInternals) public init(index: Int32, generation: UInt32) {
        rawValue = UInt64(generation) << 32 | UInt64(UInt32(bitPattern: index))
    }
    @inlinable
    @_spi(RoomLinkInternals) public var index: Int { Int(Int32(bitPattern: UInt32(truncatingIfNeeded: rawValue))) }
    @inlinable
    @_spi(RoomLinkInternals) public var generation: UInt32 { UInt32(truncatingIfNeeded: rawValue >> 32) }
    /// The generation after `generation`, wrapping below 2^31.
    @inlinable
    @_spi(RoomLinkInternals) public static func nextGeneration(after generation: UInt32) -> UInt32 {
        generation >= 0x7FFF_FFFF ? 1 : generation + 1
    }
}

/// Where a ``TimerTable`` keeps its timers in real-time order: the timing wheel, or libevent's own timers.
///
/// A timer is *scheduled* (waiting), *detached* (due and handed to the table for firing; the table then frees or
/// reschedules it) or gone.
@_spi(RoomLinkInternals) public protocol TimerQueue {
    associatedtype Payload
    /// Schedules `payload` at `deadline` (real nanoseconds).
    mutating func insert(deadline: UInt64, payload: Payload) -> TimerQueueID
    /// Schedules a scheduled or detached timer again at `deadline`, keeping its ID.
    mutating func reschedule(_ id: TimerQueueID, deadline: UInt64)
    /// Removes a scheduled timer; `nil` unless it was scheduled.
    mutating func remove(_ id: TimerQueueID) -> Payload?
    /// Frees a detached timer.
    @discardableResult mutating func free(_ id: TimerQueueID) -> Payload?
    /// Whether the timer is detached.
    func isDetached(_ id: TimerQueueID) -> Bool
    /// The payload of a scheduled or detached timer.
    func payload(_ id: TimerQueueID) -> Payload?
    /// Replaces the payload of a scheduled or detached timer.
    mutating func setPayload(_ id: TimerQueueID, _ payload: Payload)
    /// Calls `body` with the payload of a scheduled or detached timer in place (no copy of it, nor of what it
    /// holds); `nil` when there is none. Firing a timer reads and updates its record this way.
    mutating func withPayload<R>(_ id: TimerQueueID, _ body: (inout Payload) -> R) -> R?
    /// Removes every timer; returns them in deadline order.
    mutating func removeAll() -> [(TimerQueueID, Payload)]
    /// Scheduled timers.
    var count: Int { get }
}
