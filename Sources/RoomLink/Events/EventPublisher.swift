/// Publishes one client's events: to an `AsyncStream` made on first use, and to an optional shared ``EventSink``.
///
/// A publisher holds no stream, buffer or task until ``events()`` is first called, so a million idle clients cost
/// nothing here. Events are stamped with their clock time and a sequence number, and go out in order.
///
/// The owner (a client actor) keeps the publisher in its isolated state and calls it from there.
///
/// - Important: The stream is unicast and made once: every call to ``events()`` returns the same stream, and it
///   carries the events published from its creation on (their sequence numbers show what came before). With the
///   default `.unbounded` buffering nothing is ever dropped; with a bounded policy the events the buffer refuses are
///   counted in ``droppedCount``. ``finish()`` ends the stream; events published after it count as dropped.
public struct EventPublisher<Event: Sendable> {
    /// The name the sink is given for this client.
    public let client: String
    private let bufferingPolicy: AsyncStream<Stamped<Event>>.Continuation.BufferingPolicy
    private let sink: (any EventSink<Event>)?
    private var stream: AsyncStream<Stamped<Event>>?
    private var continuation: AsyncStream<Stamped<Event>>.Continuation?
    private var eventQueue: EventQueue<Stamped<Event>>?
    private var isFinished = false
    /// Events published so far (the next sequence number).
    public private(set) var publishedCount: UInt64 = 0
    /// Events the stream's buffer refused, or that came after ``finish()``.
    public private(set) var droppedCount: UInt64 = 0

    /// Creates a publisher for `client`.
    ///
    /// - Parameters:
    ///   - bufferingPolicy: How the stream buffers for a slow consumer; default `.unbounded`.
    ///   - sink: Where every event also goes, whether or not anyone iterates the stream.
    public init(
        client: String,
        bufferingPolicy: AsyncStream<Stamped<Event>>.Continuation.BufferingPolicy = .unbounded,
        sink: (any EventSink<Event>)? = nil
    ) {
        self.client = client
        self.bufferingPolicy = bufferingPolicy
        self.sink = sink
    }

    /// The stream of events from now on, made on the first call; later calls return the same stream.
    public mutating func events() -> AsyncStream<Stamped<Event>> {
        if let stream { return stream }
        let (stream, continuation) = AsyncStream.makeStream(of: Stamped<Event>.self, bufferingPolicy: bufferingPolicy)
        if isFinished { continuation.finish() }
        self.stream = stream
        self.continuation = continuation
        return stream
    }

    /// The events from now on as an ``EventQueue`` — the faster alternative to ``events()`` for a consumer that
    /// takes hundreds of thousands of events per second. Made on the first call; later calls return the same queue.
    /// It gets every event the stream gets (use one or both); it never drops.
    public mutating func queue() -> EventQueue<Stamped<Event>> {
        if let eventQueue { return eventQueue }
        let queue = EventQueue<Stamped<Event>>()
        if isFinished { queue.finish() }
        eventQueue = queue
        return queue
    }

    /// Publishes `event` at `time`.
    public mutating func publish(_ event: Event, at time: RuntimeInstant) {
        guard !isFinished else {
            droppedCount += 1
            return
        }
        let stamped = Stamped(time: time, sequence: publishedCount, event: event)
        publishedCount += 1
        sink?.record(stamped, from: client)
        eventQueue?.send(stamped)
        guard let continuation else { return }
        switch continuation.yield(stamped) {
        case .enqueued: break
        case .dropped: droppedCount += 1
        case .terminated: break  // the consumer stopped iterating: nobody to miss it
        @unknown default: break
        }
    }

    /// Ends the stream; its consumer's loop ends after the events already buffered.
    public mutating func finish() {
        isFinished = true
        continuation?.finish()
        eventQueue?.finish()
    }
}
