@_spi(RoomLinkInternals) import RoomLinkRuntime
import Synchronization

/// One simulated SDK engine of any dialect: a user's connection to its rooms, as an actor pinned to a runtime loop.
///
/// It joins, sends heartbeats (or, for a dialect whose media flows continuously, watches its data), notices a
/// closed connection at once and a silent one by missed heartbeats, reconnects with its retry policy until the
/// dialect gives up, and publishes what happened as its dialect's callbacks on ``events()`` and to the
/// environment's sink. The decisions are the same for every dialect; ``RoomDialect`` supplies the vocabulary, the
/// defaults and a few switches. The decisions themselves are a value, ``RoomClientState``; the actor feeds it what
/// happens and carries out what it decides (sends through the transport, timers on its loop, callbacks through its
/// dialect). Each dialect's public API (``RoomClient/loginRoom(_:config:)``,
/// ``RoomClient/joinChannel(_:token:role:appID:)``, ``RoomClient/connect(to:token:)``) is an extension of this type.
///
/// Timers and deliveries call it on its loop's thread with no hop; calls from elsewhere hop there like any actor
/// call.
public actor RoomClient<Dialect: RoomDialect>: RouteObserver, ClientChannel, TimerHandler, LoopPinnedActor {
    /// What many clients share: the transport, the timings, the retry policy and the event sink.
    public final class Environment: Sendable {
        public let transport: any ClientTransport
        /// How the clients send and hear their rooms' answers: ``transport`` itself when it carries the engine's
        /// clients (one process: ``InProcessTransport``), asked once here, or ``transport`` behind an adapter that
        /// delivers a room's answer on the client's loop. Never optional, and ahead of the fields whose layout depends
        /// on the dialect, so that the unspecialized code of a room's answer reads it at a fixed offset.
        let carrier: any InProcessTransport
        public let timings: Dialect.Timings
        public let retryPolicy: RetryPolicy
        public let sink: (any EventSink<Dialect.Event>)?
        public let bufferingPolicy: AsyncStream<Stamped<Dialect.Event>>.Continuation.BufferingPolicy
        /// Sees every transition and attempt of every client (a load test's statistics), if set.
        public let observer: (any EngineObserver)?
        /// Whether each login attempt's outcome goes to `sink` (``EventSink/recordAttempt(_:from:)``): the event
        /// log's optional `attempt` lines.
        public let logsAttempts: Bool
        /// What the clients' decisions go by (``RoomClientState/Rules``), made once.
        public let rules: RoomClientState.Rules
        /// Where the clients get their tokens, if they fetch them (``TokenSource``): without it, a client logs in
        /// with the token its app gave, and renews only when its app does.
        public let tokens: TokenSupply?
        /// The sink and buffering every client's publisher shares.
        let publishing: EventPublisher<Dialect.Event>.Settings
        /// The dialect's entry into the engine, in an object of the environment's, called through a reference that is
        /// not retained (the environment holds the object): a closure read from a stored property is retained around
        /// its call, and its context — the dialect's, one per process — was retained and released on every message by
        /// both shards' threads at once.
        let entries: UnretainedReference<Entries>
        /// The owner that keeps ``entries``' object alive (`UnretainedReference`'s invariant): the environment, which
        /// every client holds.
        private let entriesObject: Entries

        /// The dialect's entry points (``EnginePath``), kept by an environment.
        final class Entries: Sendable {
            let engine: @Sendable (RoomClient, Entry) -> Void
            /// The dialect's ``EnginePath`` heartbeat: a batched heartbeat calls it (``RoomClient/beatFromBatch(token:)``).
            let beat: @Sendable (RoomClient, UInt64) -> Bool

            init(
                engine: @escaping @Sendable (RoomClient, Entry) -> Void,
                beat: @escaping @Sendable (RoomClient, UInt64) -> Bool
            ) {
                self.engine = engine
                self.beat = beat
            }
        }
        /// The last heartbeat token handed out (``RoomClient/batchTokenBits``).
        private let heartbeatTokens = Atomic<UInt64>(0)

        /// Creates an environment. `timings` and `retryPolicy` default to the dialect's.
        public init(
            transport: any ClientTransport,
            timings: Dialect.Timings = .default,
            retryPolicy: RetryPolicy = Dialect.defaultRetryPolicy,
            sink: (any EventSink<Dialect.Event>)? = nil,
            bufferingPolicy: AsyncStream<Stamped<Dialect.Event>>.Continuation.BufferingPolicy = .unbounded,
            observer: (any EngineObserver)? = nil,
            logsAttempts: Bool = false,
            tokens: TokenSupply? = nil
        ) {
            self.observer = observer
            self.logsAttempts = logsAttempts
            self.transport = transport
            self.carrier = transport as? any InProcessTransport ?? AnsweringOnLoop(transport)
            self.timings = timings
            self.retryPolicy = retryPolicy
            self.sink = sink
            self.bufferingPolicy = bufferingPolicy
            var rules = RoomClientState.Rules(
                Dialect.self,
                timings: timings.engine,
                retryPolicy: retryPolicy,
                logsAttempts: logsAttempts && sink != nil
            )
            rules.fetchesTokens = tokens != nil
            self.rules = rules
            self.tokens = tokens
            self.publishing = EventPublisher.Settings(bufferingPolicy: bufferingPolicy, sink: sink)
            self.entriesObject = Entries(engine: Dialect.enginePath.enter, beat: Dialect.enginePath.beat)
            self.entries = UnretainedReference(entriesObject)
        }

        /// A token no heartbeat of these clients had, with ``RoomClient/batchTokenBits`` set.
        func nextHeartbeatToken() -> UInt64 {
            heartbeatTokens.wrappingAdd(1, ordering: .relaxed).newValue | RoomClient.batchTokenBits
        }
    }

    // Declared in this order on purpose: what a room reads of a client it answers (the names, the loop, the room
    // mode, the link and the member hint) before the client's state, and the small fields where they fill the bytes
    // the wider ones leave. A transport may load a client's first bytes ahead of answering it; the footprint tests
    // (`ClientFootprintTests`) fail if a field moves past what that covers, or the client grows past its allocator
    // block.

    /// The device's name on the network and in the event log.
    public nonisolated let endpointID: String
    /// The identity the server knows; two clients with one user ID are one user on two devices.
    public nonisolated let userID: String
    public nonisolated let loop: any RuntimeLoop
    let environment: Environment
    private var publisher: EventPublisher<Dialect.Event>
    /// Whether the client may be in several rooms at once (ZEGO's multi-room mode).
    public nonisolated let roomMode: RoomMode
    /// ``keptLinkState`` as its byte (`LinkState.byte`), in the padding before the hint.
    private nonisolated let link = Atomic<UInt8>(0)
    /// See ``memberHint``.
    private nonisolated let hint = Atomic<Int32>(-1)
    /// The client's decisions. Unchecked at run time (the static checks still hold): every message and heartbeat
    /// accesses it once or more, and what the state calls back while it is accessed (``perform(_:_:)``) never
    /// touches it.
    @exclusivity(unchecked) private(set) var state: RoomClientState
    private var inStep = false
    var isShutDown = false
    /// The heartbeat: its timer (as `TimerHandle.packed`: a word, where an optional handle takes two), or, in a
    /// loop's heartbeat batch (``HeartbeatBatch``), the token it beats with there (``batchTokenBits`` set); 0 when it
    /// does not beat.
    private var heartbeatBits: UInt64 = 0
    /// The top two bits, which mark a batched heartbeat's token: no timer handle has both (a queue's generation stays
    /// below 2^31, so bit 63 of a local handle is clear; a remote one's counter never reaches bit 62).
    static var batchTokenBits: UInt64 { 0b11 << 62 }
    /// For a dialect without heartbeats: the timer that declares the connection lost after its data stopped.
    private var dataSilence: TimerHandle? {
        get { TimerHandle(packed: dataSilenceBits) }
        set { dataSilenceBits = TimerHandle.packed(newValue) }
    }
    private var dataSilenceBits: UInt64 = 0
    /// While one message, link change or timer is handled: the time its callbacks carry, read at the first. Every
    /// callback one cause produces has the same time — as in virtual time, where the clock stands still — though on
    /// the real clock `loop.now` moves between two reads.
    private var stepTime: RuntimeInstant? {
        get { stepNanoseconds.value.map(RuntimeInstant.init(nanoseconds:)) }
        set { stepNanoseconds.value = newValue?.nanoseconds }
    }
    /// ``stepTime`` in one word (no clock reads `Int64.max`).
    private var stepNanoseconds = PackedOptional<Int64>()

    /// The FNV-1a of ``endpointID``, for what spreads clients by name (a message's fate, a source address). Computed
    /// on each read — a few nanoseconds over a short name — rather than kept: eight bytes of every client.
    public nonisolated var endpointHash: UInt64 { StableHash.fnv1a(endpointID) }

    /// Creates a client named `id` on `loop`.
    ///
    /// - Parameters:
    ///   - id: The client's name in logs, placement and sinks.
    ///   - userID: The identity sent to the server; defaults to `id`.
    ///   - roomMode: Whether the client may be in several rooms at once (ZEGO's multi-room mode).
    ///   - loop: The loop the client is pinned to: its actor runs there, and so do its timers.
    ///   - environment: The transport to the server, the event sink and the timings the client uses.
    ///   - seed: Seeds the client's retry jitter (with `id`), so a virtual-time run is reproducible.
    public init(
        id: String,
        userID: String? = nil,
        roomMode: RoomMode = .single,
        loop: any RuntimeLoop,
        environment: Environment,
        seed: UInt64 = 0
    ) {
        self.endpointID = id
        self.userID = userID ?? id
        self.roomMode = roomMode
        self.loop = loop
        self.environment = environment
        self.state = RoomClientState(
            clientID: id,
            userID: userID ?? id,
            seed: seed,
            sessionSalt: environment.transport.sessionSalt
        )
        self.publisher = EventPublisher(settings: environment.publishing)
    }

    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    /// In one process the client is its own channel as the server sees it: a room's answer travels the client's
    /// own transport to it (the environment's in-process carrier), or, over a transport that carries no clients
    /// itself, is delivered on the client's loop as soon as it runs.
    public nonisolated func send(_ message: ServerMessage, from room: any RoomEndpoint) {
        environment.carrier.carry(message, from: room, to: self)
    }
    /// Where the room of the client's latest heartbeat found it (an in-process transport's ``ClientChannel`` hint:
    /// the client is its own channel there). One per client, not per room: a client in several rooms only costs
    /// those rooms a lookup.
    public nonisolated var memberHint: Int32 { hint.load(ordering: .relaxed) }
    public nonisolated func setMemberHint(_ slot: Int32) { hint.store(slot, ordering: .relaxed) }

    // MARK: - Public API common to every dialect

    /// The client's events from now on: one stream, made on the first call (later calls return it again), ended by
    /// ``shutdown()``.
    public func events() -> AsyncStream<Stamped<Dialect.Event>> {
        publisher.events()
    }

    /// The client's events as an ``EventQueue``: the same events as ``events()``, through a single-consumer queue
    /// several times faster than `AsyncStream` (see `roomlink-bench delivery`). Made on the first call; ended by
    /// ``shutdown()``.
    public func eventQueue() -> EventQueue<Stamped<Dialect.Event>> {
        publisher.queue()
    }

    /// Events the stream's bounded buffer refused (always 0 with the default unbounded buffering).
    public var droppedEventCount: UInt64 { publisher.droppedCount }

    /// The rooms the client is in or trying to be in, in join order.
    var rooms: RoomList { state.rooms }

    /// The room IDs the client is in or trying to be in, in join order.
    public var roomIDs: [String] { state.rooms.map(\.roomID) }

    /// The phase of the client's connection to `roomID`, or `nil` when it is not in the room.
    public func phase(of roomID: String) -> RoomConnection.Phase? {
        state.index(of: roomID).map { state.rooms[$0].phase }
    }

    /// The device's network changed (a new IP address): every joined room closes its connection and reconnects at
    /// once over the new one (ZEGO `reconnecting`, Agora `reconnecting/clientIpAddressChanged`, LiveKit a quick
    /// reconnection).
    public func networkChanged() {
        reconnectAll(cause: .addressChanged)
    }

    /// Stops the client: cancels its timers, forgets its rooms without telling the server (as if the app were
    /// killed), and finishes its event stream.
    public func shutdown() {
        guard !isShutDown else { return }
        isShutDown = true
        state.shutdown { perform($0, &$1) }
        publisher.finish()
    }

    // MARK: - Engine operations (each dialect's API calls these)

    /// Starts joining `roomID` (the caller has checked that the dialect allows it): reports ``RoomTransition/joining``
    /// and sends the first attempt.
    func join(_ roomID: String, options: JoinOptions) {
        state.join(roomID, options: options, at: loop.now, rules: environment.rules) { perform($0, &$1) }
    }

    /// Leaves `roomID` at once, telling the server if the connection is up (if it is not, peers keep seeing the user
    /// until the server's timeout). Returns `false` when the client is not in the room.
    @discardableResult
    func leave(_ roomID: String) -> Bool {
        state.leave(roomID, rules: environment.rules) { perform($0, &$1) }
    }

    /// Gives the server a new token for `roomID`; later reconnections use it too. Returns `false` when the client
    /// is not in the room.
    @discardableResult
    func renew(_ token: String, roomID: String) -> Bool {
        state.renew(token, roomID: roomID) { perform($0, &$1) }
    }

    /// Shows or hides the member to its peers in `roomID` (an Agora role change). Returns `false` when the client
    /// is not in the room.
    @discardableResult
    func setHidden(_ hidden: Bool, roomID: String) -> Bool {
        state.setHidden(hidden, roomID: roomID) { perform($0, &$1) }
    }

    /// The client's connections move to a new path (a new IP address, a proxy): every joined room closes its
    /// connection and reconnects at once, reporting `cause`.
    func reconnectAll(cause: LossCause) {
        state.reconnectAll(cause: cause, at: loop.now, rules: environment.rules) { perform($0, &$1) }
    }

    /// Removes `roomID` without reporting it (the dialect reports its own reason), telling the server the member
    /// left.
    func abandon(_ roomID: String) {
        state.abandon(roomID, rules: environment.rules) { perform($0, &$1) }
    }

    /// Publishes a dialect event directly (a call the dialect refuses, reported as its vendor does).
    func publish(_ event: Dialect.Event) {
        publisher.publish(event, from: endpointID, at: eventTime)
    }

    // MARK: - Transport and timers

    public nonisolated func deliver(_ message: ServerMessage, from roomID: String) {
        enter(.message(message, from: roomID))
    }

    public nonisolated func linkChanged(to state: LinkState) {
        enter(.link(state))
    }

    public nonisolated func routeChanged(toRoom room: String, reachable: Bool) {
        enter(.route(room, reachable: reachable))
    }

    public nonisolated func connectionChanged(_ event: ConnectionEvent, room: String) {
        enter(.connection(event, room: room))
    }

    /// Every timer the client arms on its loop has the client itself as its handler, and the handle says which
    /// timer fired: a handler object per armed timer cost a 64-byte allocation on every attempt of every client,
    /// half a million of them alive at the peak of a million-client storm. A handle that is none of the client's
    /// armed timers is ignored.
    public nonisolated func timerFired(_ timer: TimerHandle) {
        enter(.timer(timer))
    }

    /// Hands `entry` to the dialect's compiled engine, from the loop's thread: ``LoopPinnedActor/onLoop(call:with:)``
    /// written out here, because these entry points run unspecialized (the runtime and the transport call them
    /// through protocols), and a call to that generic helper from unspecialized code builds the metadata of its
    /// function types at run time on every call — 2–3 % of a million-client run.
    private nonisolated func enter(_ entry: Entry) {
        precondition(loop.isInServiceThread, "a RoomClient was called off its loop's thread")
        // Safe for the reasons `onLoop(_:)` gives: the client's executor is `loop`, and this is its thread.
        environment.entries.withObject { $0.engine(self, entry) }
    }

    /// A heartbeat a loop's batch brings (``HeartbeatBatch``, on the client's own loop), started with `token`: due if
    /// the client still beats with that token. Answers whether it beats on (the batch then brings it again a period
    /// later).
    func beat(token: UInt64) -> Bool {
        guard heartbeatBits == token else { return false }
        handle(entry: .heartbeat)
        return heartbeatBits == token
    }

    /// What reaches the client from outside (``ClientEntry``).
    typealias Entry = ClientEntry

    /// Hands an ``Entry`` to the client's state (``EnginePath`` calls it, compiled for the dialect).
    func handle(entry: Entry) {
        inStep = true
        defer {
            inStep = false
            stepTime = nil
        }
        let now = loop.now
        let rules = environment.rules
        switch entry {
        case .message(let message, let roomID):
            withState { $0.receive(message, from: roomID, at: now, rules: rules, perform: $1) }
        case .link(let link):
            withState { $0.linkChanged(to: link, at: now, rules: rules, perform: $1) }
        case .route(let roomID, let reachable):
            withState { $0.routeChanged(toRoom: roomID, reachable: reachable, at: now, rules: rules, perform: $1) }
        case .connection(let event, let roomID):
            withState { $0.connectionChanged(event, room: roomID, at: now, rules: rules, perform: $1) }
        case .heartbeat:
            withState { $0.heartbeatDue(at: now, rules: rules, perform: $1) }
        case .token(let answer):
            withState {
                $0.tokenFetched(
                    answer.result,
                    room: answer.roomID,
                    session: answer.session,
                    attempt: answer.attempt,
                    at: now,
                    rules: rules,
                    perform: $1
                )
            }
        case .timer(let handle):
            if heartbeatBits == handle.rawValue {
                withState { $0.heartbeatDue(at: now, rules: rules, perform: $1) }
            } else if let timer = timer(firedAs: handle) {
                withState { $0.timerFired(timer, at: now, rules: rules, perform: $1) }
            }
        }
    }

    /// Runs `body` on the client's state, with what carries out the state's actions (``perform(_:_:)``).
    ///
    /// That closure holds the client `unowned(unsafe)`, which is safe because the client is this method's receiver,
    /// kept alive by its caller until it returns, and the closure cannot outlive the call: `body` takes it as a
    /// non-escaping parameter, which the compiler holds. Held strongly, the client was retained and released half a
    /// dozen times a heartbeat (0.94× the CPU of a million-client run).
    @inline(__always)
    private func withState(_ body: (inout RoomClientState, RoomClientState.Perform) -> Void) {
        body(&state) { [unowned(unsafe) self] in self.perform($0, &$1) }
    }

    /// What the timer of `handle` was armed for: the one of the client's armed timers whose handle it is (a room's
    /// one timer, named by the room's state as it stands — a room re-arms its timer whenever its attempt or session
    /// changes — its notice, or the data silence); `nil` for none.
    private func timer(firedAs handle: TimerHandle) -> RoomClientState.Timer? {
        if dataSilenceBits == handle.rawValue { return .dataSilence }
        // Each room borrowed in place: a copy of the list copied its first room whole, with the retains of its
        // strings and channel, and so did reading its timer through the list's getter — on every retry of half a
        // million clients in a storm.
        for index in state.rooms.indices {
            let found = state.rooms.readRoom(at: index) { room -> RoomClientState.Timer?? in
                if room.attachment.timer == handle { return .some(room.timer.map { .room(room.roomID, $0) }) }
                if room.attachment.notice == handle {
                    // The slot holds an episode's notice, or a joined room's renewal (``RoomClientState/Timer``).
                    return .some(room.noticeArmed ? .notice(room: room.roomID) : .renewal(room: room.roomID))
                }
                return .none
            }
            if let found { return found }
        }
        return nil
    }

    // MARK: - Carrying out the state's actions

    /// Sends `message` on the attachment's channel, borrowed: bound to a local, the channel was retained — a write
    /// to the room's first line, which at scale is in no cache — on every attempt of a storm's retries, whose link
    /// refuses them without looking at the room.
    private func send(_ message: ClientMessage, over attachment: borrowing RoomConnection.Attachment) -> SendOutcome {
        guard attachment.channel != nil else { return .refused }
        return environment.carrier.send(message, on: attachment.channel.unsafelyUnwrapped, from: self)
    }

    /// Carries out one action of the client's state, with the attachment of the room it concerns; for a send, says
    /// whether the message left.
    private func perform(_ action: RoomClientState.Action, _ attachment: inout RoomConnection.Attachment) -> SendOutcome
    {
        switch action {
        case .send(let message, let roomID):
            if attachment.channel == nil, case .login = message {
                attachment.channel = environment.transport.open(toRoom: roomID, for: self)
            }
            return send(message, over: attachment)
        case .closed(_, let session):
            if let channel = attachment.channel { environment.carrier.closed(channel, session: session, from: self) }
        case .report(let transition, let roomID):
            report(transition, room: roomID)
        case .arm(let timer, let deadline):
            let handle = try? loop.schedule(at: deadline, handler: self)
            replace(timer, with: handle, in: &attachment)
        case .cancel(let timer):
            replace(timer, with: nil, in: &attachment)
        case .startHeartbeat(let interval):
            guard heartbeatBits == 0 else { break }
            if let batch = (loop as? any BatchingLoop)?.heartbeatBatch(every: interval) {
                let token = environment.nextHeartbeatToken()
                if batch.add(BatchedHeartbeat(client: self, token: token), towards: attachment.channel) {
                    heartbeatBits = token
                    break
                }
            }
            heartbeatBits = TimerHandle.packed(try? loop.schedulePeriodic(every: interval, handler: self))
        case .stopHeartbeat:
            // A batched heartbeat needs no cancelling: it stops when its token is no longer the client's.
            if heartbeatBits & Self.batchTokenBits != Self.batchTokenBits,
                let heartbeat = TimerHandle(packed: heartbeatBits)
            {
                loop.cancel(heartbeat)
            }
            heartbeatBits = 0
        case .attemptSent(let roomID, let reconnecting, let number):
            environment.observer?.attempt(
                client: endpointID,
                room: roomID,
                reconnecting: reconnecting,
                number: number,
                at: loop.now
            )
        case .attemptEnded(let record):
            environment.sink?.recordAttempt(Stamped(time: eventTime, sequence: 0, event: record), from: endpointID)
        case .reopen:
            attachment.channel = nil
        case .abandon:
            if let channel = attachment.channel { environment.transport.abandon(channel, from: self) }
        case .ended:
            // The state cancelled the room's timers as it ended it; what is left to forget is its channel.
            attachment = RoomConnection.Attachment()
        case .fetchToken(let roomID, let session, let attempt):
            fetchToken(room: roomID, session: session, attempt: attempt)
        }
        return .sent
    }

    /// Asks the environment's token source for a token for `roomID`; the answer comes back on the client's loop, as
    /// a later step (never inside this one), and is timed for the token observer.
    private func fetchToken(room roomID: String, session: SessionID, attempt: UInt32) {
        guard let tokens = environment.tokens else { return }
        let started = loop.now
        tokens.observer?.tokenFetchStarted(at: started)
        let request = TokenRequest(userID: userID, roomID: roomID, dialect: Dialect.name)
        tokens.source.fetchToken(for: request, on: loop) { [self] result in
            let answer = TokenAnswer(result: result, roomID: roomID, session: session, attempt: attempt)
            // A timer at once, even on the loop's thread: the source may answer inside the call that asked.
            _ = try? loop.schedule(after: .zero) { [self] in
                let now = loop.now
                if let observer = environment.tokens?.observer {
                    let failure: TokenFetchFailure.Cause? =
                        switch result {
                        case .success: nil
                        case .failure(let failure): failure.cause
                        }
                    observer.tokenFetchEnded(failure: failure, latency: started.duration(to: now), at: now)
                }
                enter(.token(answer))
            }
        }
    }

    /// Puts `handle` (a timer just armed, or none) where `timer` is kept, cancelling the one it replaces.
    private func replace(
        _ timer: RoomClientState.Timer,
        with handle: TimerHandle?,
        in attachment: inout RoomConnection.Attachment
    ) {
        func swap(_ slot: inout TimerHandle?) {
            if let old = slot { loop.cancel(old) }
            slot = handle
        }
        switch timer {
        case .room: swap(&attachment.timer)
        case .notice, .renewal: swap(&attachment.notice)
        case .dataSilence: swap(&dataSilence)
        }
    }

    /// The time of a callback: the step's, once it has one.
    private var eventTime: RuntimeInstant {
        if let stepTime { return stepTime }
        let now = loop.now
        if inStep { stepTime = now }
        return now
    }

    /// Reports a transition of `room` as the dialect's events.
    func report(_ transition: RoomTransition, room: String) {
        // Every callback of one transition carries one time, on the real clock too — also outside a step (an app's
        // call: LiveKit's `disconnect()` reports `connectionState disconnected` and `disconnected` together).
        let outside = !inStep && stepTime == nil
        if outside { stepTime = loop.now }
        defer { if outside { stepTime = nil } }
        guard let observer = environment.observer else {
            Dialect.report(transition, room: room) { publish($0) }
            return
        }
        observer.transition(transition, client: endpointID, room: room, at: eventTime)
        var published = false
        Dialect.report(transition, room: room) {
            publish($0)
            published = true
        }
        // From the cause's deadline (a message's arrival, a timeout) to the callbacks handed to the app.
        if published, let latency = loop.firingLateness { observer.delivered(client: endpointID, latency: latency) }
    }
}

/// What reaches a client from outside: a message, a change of its link or of its path to one room, its heartbeat
/// timer, another of its timers.
///
/// Not nested in the generic ``RoomClient``: a type nested there is generic itself, and the client's entry points,
/// which run unspecialised (the transport and the runtime call them through protocols), looked up its metadata at
/// run time on every message.
enum ClientEntry {
    case message(ServerMessage, from: String)
    case link(LinkState)
    case route(String, reachable: Bool)
    case connection(ConnectionEvent, room: String)
    case heartbeat
    /// One of the client's timers on its loop (the heartbeat's, a room's, a notice's, the data silence's).
    case timer(TimerHandle)
    /// The token source's answer to a fetch.
    case token(TokenAnswer)
}

/// A token source's answer to one fetch of a room, boxed: the entry stays a few words.
final class TokenAnswer: Sendable {
    let result: Result<String, TokenFetchFailure>
    let roomID: String
    let session: SessionID
    let attempt: UInt32

    init(result: Result<String, TokenFetchFailure>, roomID: String, session: SessionID, attempt: UInt32) {
        self.result = result
        self.roomID = roomID
        self.session = session
        self.attempt = attempt
    }
}

// MARK: - In one process

extension RoomClient: InProcessClient, HeartbeatBeater {
    package nonisolated var loopIdentity: ObjectIdentifier { ObjectIdentifier(loop) }

    /// The client keeps its link state for its transport, beside the hint that a room answering it reads.
    package nonisolated var keptLinkState: LinkState { LinkState(byte: link.load(ordering: .acquiring)) }

    package nonisolated func exchangeKeptLinkState(_ state: LinkState) -> LinkState {
        LinkState(byte: link.exchange(state.byte, ordering: .acquiringAndReleasing))
    }

    /// Through the dialect's compiled entry (``EnginePath``), unretained: this witness runs unspecialized, and the
    /// closure's context is the dialect's, which both shards' threads would retain and release on every heartbeat.
    package nonisolated func beatFromBatch(token: UInt64) -> Bool {
        environment.entries.withObject { $0.beat(self, token) }
    }
}

/// A transport that carries no client itself, as the environment's carrier: what the clients send goes to it through
/// the public protocol, and a room that answers on a client itself (in one process, over a transport of your own)
/// has its answer delivered on the client's loop as soon as it runs.
final class AnsweringOnLoop: InProcessTransport {
    let base: any ClientTransport

    init(_ base: any ClientTransport) { self.base = base }

    func open(toRoom roomID: String, for client: any ClientEndpoint) -> (any RoomChannel)? {
        base.open(toRoom: roomID, for: client)
    }
    func send(_ message: ClientMessage, on channel: any RoomChannel, from client: any ClientEndpoint) -> SendOutcome {
        base.send(message, on: channel, from: client)
    }
    func closed(_ channel: any RoomChannel, session: SessionID, from client: any ClientEndpoint) {
        base.closed(channel, session: session, from: client)
    }
    func abandon(_ channel: any RoomChannel, from client: any ClientEndpoint) { base.abandon(channel, from: client) }
    func drop(_ client: any ClientEndpoint) { base.drop(client) }
    var sessionSalt: UInt64 { base.sessionSalt }
    func send(_ message: ClientMessage, on channel: any RoomChannel, from client: any InProcessClient) -> SendOutcome {
        base.send(message, on: channel, from: client)
    }
    func closed(_ channel: any RoomChannel, session: SessionID, from client: any InProcessClient) {
        base.closed(channel, session: session, from: client)
    }
    func carry(_ message: ServerMessage, from room: any RoomEndpoint, to client: any InProcessClient) {
        let roomID = room.roomID
        client.loop.runSoon { client.deliver(message, from: roomID) }
    }
}
