/// An ``EventSink`` that funnels every client's events into one ``EventQueue``: one consumer for a whole
/// population, with no task or stream per client.
///
/// ```swift
/// let sink = EventQueueSink<ZegoEvent>()
/// let environment = ZegoClient.Environment(transport: network, sink: sink)
/// // … make clients with `environment` …
/// for await record in sink.records { print(record.client, record.event.event) }
/// ```
///
/// `roomlink-bench delivery` measures it as "fan-in": millions of events per second into one `for await` loop,
/// however many clients publish.
public final class EventQueueSink<Event: Sendable>: EventSink {
    /// One event and the client that published it.
    public struct Record: Sendable {
        public let client: String
        public let event: Stamped<Event>
    }

    /// Every event recorded, in the order `record` was called.
    public let records = EventQueue<Record>()

    public init() {}

    public func record(_ event: Stamped<Event>, from client: String) {
        records.send(Record(client: client, event: event))
    }

    /// Ends ``records`` after what is buffered.
    public func finish() {
        records.finish()
    }
}
