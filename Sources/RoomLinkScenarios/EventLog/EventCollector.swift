/// An event sink that keeps every event in memory, as the event log would read back: for comparing two runs, and
/// for tests. It can forward each event to another sink too (the event log's writer).
public final class EventCollector: EventSink {
    private let events = LockedBox<[LoggedEvent]>([])
    private let forward: (any EventSink<EventLogLine>)?

    public init(forwardingTo forward: (any EventSink<EventLogLine>)? = nil) {
        self.forward = forward
    }

    public func record(_ event: Stamped<EventLogLine>, from client: String) {
        let logged = LoggedEvent(line: event.event, user: client, time: event.time.milliseconds)
        events.withLock { $0.append(logged) }
        forward?.record(event, from: client)
    }

    public func recordAttempt(_ attempt: Stamped<AttemptRecord>, from client: String) {
        forward?.recordAttempt(attempt, from: client)
    }

    /// The events so far, in the order recorded.
    public var all: [LoggedEvent] { events.withLock { $0 } }
}
