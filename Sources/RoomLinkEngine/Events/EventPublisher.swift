/// Publishes one client's events: to an `AsyncStream` made on first use, and to an optional shared ``EventSink``.
///
/// A publisher holds no stream, buffer or task until ``events()`` is first called, so a million idle clients cost
/// nothing here. Events are stamped with their clock time and a sequence number, and go out in order.
///
/// The owner (a client actor) keeps the publisher in its isolated state and calls it from there, naming itself on each
/// call (``publish(_:from:at:)``): the name is the owner's, and a million clients' publishers do not keep a copy.
///
/// - Important: The stream is unicast and made once: every call to ``events()`` returns the same stream, and it
///   carries the events published from its creation on (their sequence numbers show what came before). With the
///   default `.unbounded` buffering nothing is ever dropped; with a bounded policy the events the buffer refuses are
///   counted in ``droppedCount``. ``finish()`` ends the stream; events published after it count as dropped.
public struct EventPublisher<Event: Sendable> {
    /// What the publishers of many clients share — where every event also goes, and how a stream buffers — kept
    /// once (a ``RoomClient/Environment`` holds one for all its clients) rather than copied into each: a million
    /// clients' publishers keep a reference each, not a 40-byte sink and a policy.
    public final class Settings: Sendable {
        public let bufferingPolicy: AsyncStream<Stamped<Event>>.Continuation.BufferingPolicy
        public let sink: (any EventSink<Event>)?

        /// Settings for publishers whose streams buffer by `bufferingPolicy`, and whose events also go to `sink`.
        public init(
            bufferingPolicy: AsyncStream<Stamped<Event>>.Continuation.BufferingPolicy = .unbounded,
            sink: (any EventSink<Event>)? = nil
        ) {
            self.bufferingPolicy = bufferingPolicy
            self.sink = sink
        }
    }

    /// The consumers a publisher has once someone asked for them: most clients of a load test never have one, so
    /// they cost a publisher one optional reference.
    @usableFromInline final class Consumers {
        @usableFromInline var stream: AsyncStream<Stamped<Event>>?
        @usableFromInline var continuation: AsyncStream<Stamped<Event>>.Continuation?
        @usableFromInline var eventQueue: EventQueue<Stamped<Event>>?
        /// Events the stream's buffer refused, or that came after ``EventPublisher/finish()``: kept here, not in every
        /// publisher, since only a publisher with a bounded stream, or a finished one, ever drops.
        @usableFromInline var dropped: UInt64 = 0

        @inlinable init() {}
    }

    // Inlinable state and methods: a publisher of another module's event type is specialised for it.
    @usableFromInline let settings: Settings
    @usableFromInline var consumers: Consumers?
    @usableFromInline var published: UInt64 = 0
    @usableFromInline var isFinished = false
    /// Events published so far (the next sequence number).
    public var publishedCount: UInt64 { published }
    /// Events the stream's buffer refused, or that came after ``finish()``.
    public var droppedCount: UInt64 { consumers?.dropped ?? 0 }

    /// Creates a publisher.
    ///
    /// - Parameters:
    ///   - bufferingPolicy: How the stream buffers for a slow consumer; default `.unbounded`.
    ///   - sink: Where every event also goes, whether or not anyone iterates the stream.
    @inlinable
    public init(
        bufferingPolicy: AsyncStream<Stamped<Event>>.Continuation.BufferingPolicy = .unbounded,
        sink: (any EventSink<Event>)? = nil
    ) {
        self.init(settings: Settings(bufferingPolicy: bufferingPolicy, sink: sink))
    }

    /// Creates a publisher with settings shared with other publishers.
    @inlinable
    public init(settings: Settings) {
        self.settings = settings
    }

    /// The consumers, made on first use.
    @inlinable
    mutating func madeConsumers() -> Consumers {
        if let consumers { return consumers }
        let made = Consumers()
        consumers = made
        return made
    }

    /// The stream of events from now on, made on the first call; later calls return the same stream.
    @inlinable
    public mutating func events() -> AsyncStream<Stamped<Event>> {
        let consumers = madeConsumers()
        if let stream = consumers.stream { return stream }
        let (stream, continuation) = AsyncStream.makeStream(
            of: Stamped<Event>.self,
            bufferingPolicy: settings.bufferingPolicy
        )
        if isFinished { continuation.finish() }
        consumers.stream = stream
        consumers.continuation = continuation
        return stream
    }

    /// The events from now on as an ``EventQueue`` — the faster alternative to ``events()`` for a consumer that
    /// takes hundreds of thousands of events per second. Made on the first call; later calls return the same queue.
    /// It gets every event the stream gets (use one or both); it never drops.
    @inlinable
    public mutating func queue() -> EventQueue<Stamped<Event>> {
        let consumers = madeConsumers()
        if let eventQueue = consumers.eventQueue { return eventQueue }
        let queue = EventQueue<Stamped<Event>>()
        if isFinished { queue.finish() }
        consumers.eventQueue = queue
        return queue
    }

    /// Publishes `event` of `client` (the name the sink receives with it) at `time`.
    @inlinable
    public mutating func publish(_ event: Event, from client: String, at time: RuntimeInstant) {
        guard !isFinished else {
            madeConsumers().dropped += 1
            return
        }
        let stamped = Stamped(time: time, sequence: published, event: event)
        published += 1
        settings.sink?.record(stamped, from: client)
        guard let consumers else { return }
        consumers.eventQueue?.send(stamped)
        guard let continuation = consumers.continuation else { return }
        switch continuation.yield(stamped) {
        case .enqueued: break
        case .dropped: consumers.dropped += 1
        case .terminated: break  // the consumer stopped iterating: nobody to miss it
        @unknown default: break
        }
    }

    /// Ends the stream; its consumer's loop ends after the events already buffered.
    @inlinable
    public mutating func finish() {
        isFinished = true
        consumers?.continuation?.finish()
        consumers?.eventQueue?.finish()
    }
}
