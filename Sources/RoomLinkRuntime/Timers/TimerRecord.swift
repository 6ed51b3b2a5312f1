/// What a ``TimerTable`` keeps for each timer.
@_spi(RoomLinkInternals) public struct TimerRecord {
    @_spi(RoomLinkInternals) public var handler: TimerHandlerObject
    /// Scenario-time deadline of the pending (or current) firing.
    @_spi(RoomLinkInternals) public var deadline: Int64
    /// Scenario-time period in nanoseconds; 0 for a one-shot timer.
    @_spi(RoomLinkInternals) public var period: Int64
    /// The handle given out off the service thread, or 0 for a timer armed on it (whose handle is its queue ID).
    @_spi(RoomLinkInternals) public var remoteID: UInt64
    /// A periodic timer was cancelled by its own handler while firing; the handler is told after it returns.
    @_spi(RoomLinkInternals) public var isCancelRequested = false
    /// Cancelled while due in a batch, before its turn to fire; the handler was told, and it will not fire.
    @_spi(RoomLinkInternals) public var isCancelled = false

    /// Where ``handler``'s existential container starts in a record, for reading its first word without opening it.
    /// (Computed once: a key path's offset is looked up at run time.)
    @_spi(RoomLinkInternals) public static let handlerOffset = MemoryLayout<TimerRecord>.offset(of: \.handler)!

    @inlinable
    public init(handler: TimerHandlerObject, deadline: Int64, period: Int64, remoteID: UInt64) {
        self.handler = handler
        self.deadline = deadline
        self.period = period
        self.remoteID = remoteID
    }
}
