/// An event as published: when it happened on the clock of the runtime that produced it, and its place in the
/// client's sequence.
public struct Stamped<Event: Sendable>: Sendable {
    /// The time on the producing runtime's clock, in scenario time.
    public var time: RuntimeInstant
    /// The client's sequence number for the event, from 0, one per published event: a gap means the consumer
    /// missed events (it subscribed late, or a bounded buffer dropped them).
    public var sequence: UInt64
    /// What happened.
    public var event: Event

    public init(time: RuntimeInstant, sequence: UInt64, event: Event) {
        self.time = time
        self.sequence = sequence
        self.event = event
    }
}

extension Stamped: Equatable where Event: Equatable {}
