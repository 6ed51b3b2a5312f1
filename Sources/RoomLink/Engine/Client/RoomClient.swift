/// One simulated SDK engine of any dialect: a user's connection to its rooms, as an actor pinned to a runtime loop.
///
/// It joins, sends heartbeats (or, for a dialect whose media flows continuously, watches its data), notices a
/// closed connection at once and a silent one by missed heartbeats, reconnects with its retry policy until the
/// dialect gives up, and publishes what happened as its dialect's callbacks on ``events()`` and to the
/// environment's sink. The decisions are the same for every dialect; ``RoomDialect`` supplies the vocabulary, the
/// defaults and a few switches. Each dialect's public API (``RoomClient/loginRoom(_:config:)``,
/// ``RoomClient/joinChannel(_:token:role:appID:)``, ``RoomClient/connect(to:token:)``) is an extension of this type.
///
/// Timers and deliveries call it on its loop's thread with no hop; calls from elsewhere hop there like any actor
/// call.
public actor RoomClient<Dialect: RoomDialect>: ClientEndpoint, TimerHandler, LoopPinnedActor {
    /// What many clients share: the transport, the timings, the retry policy and the event sink.
    public final class Environment: Sendable {
        public let transport: any RoomTransport
        public let timings: Dialect.Timings
        public let retryPolicy: RetryPolicy
        public let sink: (any EventSink<Dialect.Event>)?
        public let bufferingPolicy: AsyncStream<Stamped<Dialect.Event>>.Continuation.BufferingPolicy
        /// Sees every transition and attempt of every client (a load test's statistics), if set.
        public let observer: (any EngineObserver)?
        /// Whether each login attempt's outcome goes to `sink` (``EventSink/recordAttempt(_:from:)``): the event
        /// log's optional `attempt` lines.
        public let logsAttempts: Bool
        /// `timings` in the engine's terms, converted once.
        let engine: EngineTimings

        /// Creates an environment. `timings` and `retryPolicy` default to the dialect's.
        public init(
            transport: any RoomTransport,
            timings: Dialect.Timings = .default,
            retryPolicy: RetryPolicy = Dialect.defaultRetryPolicy,
            sink: (any EventSink<Dialect.Event>)? = nil,
            bufferingPolicy: AsyncStream<Stamped<Dialect.Event>>.Continuation.BufferingPolicy = .unbounded,
            observer: (any EngineObserver)? = nil,
            logsAttempts: Bool = false
        ) {
            self.observer = observer
            self.logsAttempts = logsAttempts
            self.transport = transport
            self.timings = timings
            self.retryPolicy = retryPolicy
            self.sink = sink
            self.bufferingPolicy = bufferingPolicy
            self.engine = timings.engine
        }

        /// When a reconnection episode gives up at the latest: the retry timeout, or the policy's `maxElapsed` if
        /// sooner; `nil` when only the policy's attempts end it.
        var reconnectLimit: Duration? {
            switch (engine.retryTimeout, retryPolicy.maxElapsed) {
            case (let timeout?, let elapsed?): min(timeout, elapsed)
            case (let timeout?, nil): timeout
            case (nil, let elapsed): elapsed
            }
        }
    }

    /// The device's name on the network and in the event log.
    public nonisolated let endpointID: String
    public nonisolated let endpointHash: UInt64
    /// The identity the server knows; two clients with one user ID are one user on two devices.
    public nonisolated let userID: String
    public nonisolated let roomMode: Scenario.RoomMode
    public nonisolated let loop: any RuntimeLoop
    let environment: Environment
    private var random: SeededRandom
    private var publisher: EventPublisher<Dialect.Event>
    /// The rooms the client is in or trying to be in, in join order.
    var rooms: [RoomConnection] = []
    private var heartbeat: TimerHandle?
    /// For a dialect without heartbeats: the timer that declares the connection lost after its data stopped.
    private var dataSilence: TimerHandle?
    private var sessionsStarted: UInt64 = 0
    /// While one message, link change or timer is handled: the time its callbacks carry, read at the first. Every
    /// callback one cause produces has the same time — as in virtual time, where the clock stands still — though on
    /// the real clock `loop.now` moves between two reads.
    private var stepTime: RuntimeInstant?
    private var inStep = false
    var isShutDown = false
    /// The dialect's ``EnginePath``, kept as the bare closure: a function value copies without looking up any
    /// generic metadata, where an `EnginePath<Dialect>` value would need it on every call.
    private let engine: @Sendable (RoomClient, Entry) -> Void

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
        roomMode: Scenario.RoomMode = .single,
        loop: any RuntimeLoop,
        environment: Environment,
        seed: UInt64 = 0
    ) {
        self.endpointID = id
        self.endpointHash = StableHash.fnv1a(id)
        self.userID = userID ?? id
        self.roomMode = roomMode
        self.loop = loop
        self.environment = environment
        self.random = SeededRandom(seed: seed, stream: StableHash.fnv1a(id))
        self.publisher = EventPublisher(
            client: id,
            bufferingPolicy: environment.bufferingPolicy,
            sink: environment.sink
        )
        self.engine = Dialect.enginePath.enter
    }

    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

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

    /// The room IDs the client is in or trying to be in, in join order.
    public var roomIDs: [String] { rooms.map(\.roomID) }

    /// The phase of the client's connection to `roomID`, or `nil` when it is not in the room.
    public func phase(of roomID: String) -> RoomConnection.Phase? {
        rooms.first { $0.roomID == roomID }?.phase
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
        while !rooms.isEmpty { _ = end(at: rooms.count - 1) }
        if let dataSilence { loop.cancel(dataSilence) }
        dataSilence = nil
        publisher.finish()
    }

    // MARK: - Engine operations (each dialect's API calls these)

    /// Starts joining `roomID` (the caller has checked that the dialect allows it): reports ``RoomTransition/joining``
    /// and sends the first attempt.
    func join(_ roomID: String, options: JoinOptions) {
        var options = options
        if Dialect.alwaysNotifiesPeers { options.notifiesPeers = true }
        let room = RoomConnection(
            roomID: roomID,
            options: options,
            session: newSession(),
            now: loop.now,
            retry: environment.retryPolicy.makeIterator(random: SeededRandom(seed: random.next()))
        )
        rooms.append(room)
        report(.joining, room: roomID)
        setEpisodeDeadline(roomID, after: environment.engine.loginTimeout)
        attempt(roomID)
    }

    /// Leaves `roomID` at once, telling the server if the connection is up (if it is not, peers keep seeing the user
    /// until the server's timeout). Returns `false` when the client is not in the room.
    @discardableResult
    func leave(_ roomID: String) -> Bool {
        guard let index = rooms.firstIndex(where: { $0.roomID == roomID }) else { return false }
        let phase = rooms[index].phase
        let room = end(at: index)
        send(.logout(userID: userID, session: room.session), to: room.server)
        report(.left(from: phase), room: roomID)
        return true
    }

    /// Gives the server a new token for `roomID`; later reconnections use it too. Returns `false` when the client
    /// is not in the room.
    @discardableResult
    func renew(_ token: String, roomID: String) -> Bool {
        guard let index = rooms.firstIndex(where: { $0.roomID == roomID }) else { return false }
        rooms[index].options.token = token
        send(.renewToken(userID: userID, session: rooms[index].session, token: token), to: rooms[index].server)
        if rooms[index].phase == .reconnecting { report(.tokenRenewedWhileReconnecting, room: roomID) }
        return true
    }

    /// Shows or hides the member to its peers in `roomID` (an Agora role change). Returns `false` when the client
    /// is not in the room.
    @discardableResult
    func setHidden(_ hidden: Bool, roomID: String) -> Bool {
        guard let index = rooms.firstIndex(where: { $0.roomID == roomID }) else { return false }
        guard rooms[index].options.hidden != hidden else { return true }
        rooms[index].options.hidden = hidden
        send(.setHidden(userID: userID, session: rooms[index].session, hidden: hidden), to: rooms[index].server)
        return true
    }

    /// The client's connections move to a new path (a new IP address, a proxy): every joined room closes its
    /// connection and reconnects at once, reporting `cause`.
    func reconnectAll(cause: LossCause) {
        for roomID in rooms.map(\.roomID) {
            guard let index = rooms.firstIndex(where: { $0.roomID == roomID }) else { continue }
            connectionLost(at: index, closed: true, cause: cause)
        }
    }

    /// Removes `roomID` without reporting it (the dialect reports its own reason), telling the server the member
    /// left.
    func abandon(_ roomID: String) {
        guard let index = rooms.firstIndex(where: { $0.roomID == roomID }) else { return }
        let room = end(at: index)
        send(.logout(userID: userID, session: room.session), to: room.server)
    }

    /// Publishes a dialect event directly (a call the dialect refuses, reported as its vendor does).
    func publish(_ event: Dialect.Event) {
        publisher.publish(event, at: eventTime)
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

    public nonisolated func timerFired(_ timer: TimerHandle) {
        enter(.heartbeat)
    }

    /// Hands `entry` to the dialect's compiled engine, from the loop's thread: ``LoopPinnedActor/onLoop(call:with:)``
    /// written out here, because these entry points run unspecialized (the runtime and the transport call them
    /// through protocols), and a call to that generic helper from unspecialized code builds the metadata of its
    /// function types at run time on every call — 2–3 % of a million-client run.
    private nonisolated func enter(_ entry: Entry) {
        precondition(loop.isInServiceThread, "a RoomClient was called off its loop's thread")
        // Safe for the reasons `onLoop(_:)` gives: the client's executor is `loop`, and this is its thread.
        engine(self, entry)
    }

    /// What reaches the client from outside: a message, a change of its link or of its path to one room, its
    /// heartbeat timer.
    enum Entry {
        case message(ServerMessage, from: String)
        case link(LinkState)
        case route(String, reachable: Bool)
        case heartbeat
    }

    /// Handles an ``Entry`` (``EnginePath`` calls it, compiled for the dialect).
    func handle(entry: Entry) {
        inStep = true
        defer {
            inStep = false
            stepTime = nil
        }
        switch entry {
        case .message(let message, let roomID): receive(message, from: roomID)
        case .link(let state): linkChanged(state)
        case .route(let roomID, let reachable): routeChanged(roomID, reachable: reachable)
        case .heartbeat: heartbeatDue()
        }
    }

    private func receive(_ message: ServerMessage, from roomID: String) {
        guard let index = rooms.firstIndex(where: { $0.roomID == roomID }) else { return }
        let now = loop.now
        switch message {
        case .loginAccepted(let session, let attempt, let roomSessionID, let present):
            guard rooms[index].session == session else { return }
            rooms[index].heard(at: now)
            // A late answer to an earlier attempt: the client gave up on it (and closed its connection).
            guard rooms[index].phase != .joined, rooms[index].isAnswer(to: attempt) else { return }
            attemptEnded(at: index, .ok)
            cancelTimers(of: index)
            cancelNotice(of: index)
            for transition in rooms[index].accepted(roomSessionID: roomSessionID, present: present, at: now) {
                report(transition, room: roomID)
            }
            startHeartbeat()
        case .loginRejected(let session, let attempt, let reason):
            guard rooms[index].session == session, rooms[index].phase != .joined, rooms[index].isAnswer(to: attempt)
            else { return }
            attemptEnded(at: index, .refused)
            let phase = rooms[index].phase
            _ = end(at: index)
            report(.rejected(reason, from: phase), room: roomID)
        case .heartbeatAck(let session, let slot):
            guard rooms[index].session == session else { return }
            rooms[index].heard(at: now)
            rooms[index].serverSlot = slot
        case .sessionUnknown(let session):
            guard rooms[index].session == session else { return }
            switch rooms[index].phase {
            case .joined:
                connectionLost(at: index, closed: false, cause: .sessionGone)
            case .reconnecting where rooms[index].attemptInFlight:
                // The server cannot resume the session: the next attempt starts a new one.
                rooms[index].fullOnNext = true
                cancelTimers(of: index)
                attemptFailed(roomID, .refused)
            default:
                return
            }
        case .userUpdate(let change, let users, let reason):
            rooms[index].heard(at: now)
            // Peer updates do not reach a client resuming its session (LiveKit); it learns the difference when back.
            guard rooms[index].phase == .joined else { return }
            if let transition = rooms[index].userUpdate(change, users: users, reason: reason) {
                report(transition, room: roomID)
            }
        case .kicked(let session, let reason):
            guard rooms[index].session == session else { return }
            let phase = rooms[index].phase
            _ = end(at: index)
            report(.kicked(reason, from: phase), room: roomID)
        case .tokenWillExpire(let session, let remaining):
            guard rooms[index].session == session else { return }
            rooms[index].heard(at: now)
            report(.tokenWillExpire(remaining: remaining), room: roomID)
        case .busy(let session, let attempt, let retryAfter):
            // Admission control: a failed attempt whose next one waits at least as long as the server asked.
            guard rooms[index].session == session, rooms[index].phase != .joined, rooms[index].isAnswer(to: attempt)
            else { return }
            cancelTimers(of: index)
            attemptFailed(roomID, .busy, notBefore: retryAfter)
        case .reconnectRequested(let session):
            guard rooms[index].session == session, rooms[index].phase == .joined else { return }
            connectionLost(at: index, closed: true, cause: .serverRequest, full: true)
        }
    }

    private func linkChanged(_ state: LinkState) {
        let watchesData = environment.engine.dataSilenceDetection != nil
        switch state {
        case .down, .blackhole:
            if watchesData {
                // The data stops: the server notices its absence at once, the client after the detection time.
                for index in rooms.indices where rooms[index].phase == .joined {
                    send(.connectionClosed(userID: userID, session: rooms[index].session), to: rooms[index].server)
                }
                armDataSilence()
            }
            guard state == .down else { return }  // a blackhole looks like an up link: only silence reveals it
            for roomID in rooms.map(\.roomID) {
                guard let index = rooms.firstIndex(where: { $0.roomID == roomID }) else { continue }
                if watchesData, rooms[index].phase == .joined { continue }  // noticed after the detection time
                connectionLost(at: index, closed: !watchesData, cause: .closed)
            }
        case .up:
            if let dataSilence {
                // Back before the client noticed: the data flows again, and the server hears it.
                loop.cancel(dataSilence)
                self.dataSilence = nil
                for index in rooms.indices where rooms[index].phase == .joined {
                    send(.connectionResumed(userID: userID, session: rooms[index].session), to: rooms[index].server)
                }
            }
            // The system reports the network back: every room still trying tries again at once.
            for roomID in rooms.map(\.roomID) {
                guard let index = rooms.firstIndex(where: { $0.roomID == roomID }), rooms[index].phase != .joined
                else { continue }
                if let timer = rooms[index].attemptTimer { loop.cancel(timer) }
                rooms[index].attemptTimer = nil
                attempt(roomID)
            }
        }
    }

    /// The path to one room was cut or restored (a room partition). Heartbeats notice it by silence; a dialect that
    /// watches its data sees the room's data stop — the server sees it too — and declares the room lost after the
    /// detection time unless the path comes back first. A room already trying keeps its schedule: nothing tells the
    /// client the path is back.
    private func routeChanged(_ roomID: String, reachable: Bool) {
        guard let detection = environment.engine.dataSilenceDetection,
            let index = rooms.firstIndex(where: { $0.roomID == roomID }), rooms[index].phase == .joined
        else { return }
        let session = rooms[index].session
        if reachable {
            // The joined room's one timer is this silence timer (attempt timers belong to episodes).
            guard let timer = rooms[index].attemptTimer else { return }
            loop.cancel(timer)
            rooms[index].attemptTimer = nil
            send(.connectionResumed(userID: userID, session: session), to: rooms[index].server)
        } else {
            guard rooms[index].attemptTimer == nil else { return }
            send(.connectionClosed(userID: userID, session: session), to: rooms[index].server)
            rooms[index].attemptTimer = arm(at: loop.now.advanced(by: detection)) { client in
                guard let index = client.rooms.firstIndex(where: { $0.roomID == roomID }),
                    client.rooms[index].session == session, client.rooms[index].phase == .joined
                else { return }
                client.rooms[index].attemptTimer = nil
                client.connectionLost(at: index, closed: false, cause: .silent)
            }
        }
    }

    /// Arms the data-silence timer, unless it is armed: when it fires, every joined room has lost its connection.
    private func armDataSilence() {
        guard dataSilence == nil, let detection = environment.engine.dataSilenceDetection else { return }
        dataSilence = arm(at: loop.now.advanced(by: detection)) { client in
            client.dataSilence = nil
            for roomID in client.rooms.map(\.roomID) {
                guard let index = client.rooms.firstIndex(where: { $0.roomID == roomID }),
                    client.rooms[index].phase == .joined
                else { continue }
                client.connectionLost(at: index, closed: false, cause: .silent)
            }
        }
    }

    private func heartbeatDue() {
        let now = loop.now
        guard !rooms.isEmpty else {
            if let heartbeat { loop.cancel(heartbeat) }
            heartbeat = nil
            return
        }
        let timeout = environment.engine.silenceTimeout
        // By index, without copying the room list (this runs for every client every interval). Losing a
        // connection can end only the room at hand (a policy allowing a single attempt), so the index stays put then.
        var index = 0
        while index < rooms.count {
            let count = rooms.count
            if rooms[index].phase == .joined {
                if rooms[index].isSilent(at: now, timeout: timeout) {
                    connectionLost(at: index, closed: false, cause: .silent)
                } else if send(
                    .heartbeat(userID: userID, session: rooms[index].session, slot: rooms[index].serverSlot),
                    to: rooms[index].server
                )
                    == .refused, dataSilence == nil
                {
                    // A dialect that watches its data (Agora) notices a down link when its data-silence timer fires,
                    // 4 s after the data stopped, not at the first keep-alive ping that cannot leave.
                    connectionLost(at: index, closed: true, cause: .closed)
                }
            }
            if rooms.count == count { index += 1 }
        }
    }

    // MARK: - Attempts

    /// The connection of room `index` was lost: a joined room starts reconnecting; a room already trying counts
    /// its attempt in flight as failed. `closed` tells the server (the socket closed under it); `full` starts a
    /// dialect with reconnect modes in full mode (the server asked for it).
    private func connectionLost(at index: Int, closed: Bool, cause: LossCause, full: Bool = false) {
        let roomID = rooms[index].roomID
        if rooms[index].phase == .joined { cancelTimers(of: index) }  // a partition's silence timer, if armed
        if closed { send(.connectionClosed(userID: userID, session: rooms[index].session), to: rooms[index].server) }
        let now = loop.now
        let retry = environment.retryPolicy.makeIterator(random: SeededRandom(seed: random.next()))
        if rooms[index].connectionLost(at: now, retry: retry) {
            report(.lost(cause), room: roomID)
            if Dialect.reconnectsInModes {
                // Full from the start: the first attempt switches, and reports it.
                if full { rooms[index].fullOnNext = true } else { report(.reconnectMode(.quick), room: roomID) }
            }
            if let notice = environment.engine.lostNotice { armLostNotice(roomID, after: notice) }
            setEpisodeDeadline(roomID, after: environment.reconnectLimit)
            attempt(roomID)
        } else if rooms[index].attemptInFlight {
            attemptFailed(roomID, .refused)
        }
    }

    /// Sends one login request for `roomID`, and arms its answer timeout.
    private func attempt(_ roomID: String) {
        guard let index = rooms.firstIndex(where: { $0.roomID == roomID }) else { return }
        rooms[index].attempt &+= 1
        if Dialect.reconnectsInModes,
            let forgotten = rooms[index].switchToFullIfDue(
                maxAttempts: environment.retryPolicy.maxAttempts,
                newSession: { newSession() }
            )
        {
            report(.reconnectMode(.full), room: roomID)
            if !forgotten.isEmpty { report(.peersCleared(forgotten), room: roomID) }
        }
        let room = rooms[index]
        let kind: LoginRequest.Kind =
            switch room.phase {
            case .joining, .joined: .join
            case .reconnecting where !Dialect.reconnectsInModes: .reconnect
            case .reconnecting: room.mode == .full ? .join : .resume
            }
        let now = loop.now
        let request = LoginRequest(
            userID: userID,
            session: room.session,
            token: room.options.token,
            userStatusNotify: room.options.notifiesPeers,
            maxMemberCount: room.options.maxMemberCount,
            kind: kind,
            hidden: room.options.hidden,
            attempt: room.attempt,
            answerBy: now.advanced(by: environment.engine.attemptTimeout)
        )
        if room.server == nil { rooms[index].server = environment.transport.room(roomID) }
        rooms[index].attemptSentAt = now
        guard send(.login(request), to: rooms[index].server) == .sent else {
            rooms[index].attemptInFlight = true
            attemptFailed(roomID, .refused)
            return
        }
        rooms[index].attemptInFlight = true
        environment.observer?.attempt(
            client: endpointID,
            room: roomID,
            reconnecting: rooms[index].phase == .reconnecting,
            number: rooms[index].attemptsMade,
            at: loop.now
        )
        armAttemptTimer(at: index, after: environment.engine.attemptTimeout, answerTimeout: true)
    }

    /// The attempt in flight for `roomID` failed with `outcome`; the next one waits for the policy's delay, and at
    /// least `notBefore` (a busy server's hint).
    private func attemptFailed(_ roomID: String, _ outcome: AttemptRecord.Outcome, notBefore: Duration? = nil) {
        guard let index = rooms.firstIndex(where: { $0.roomID == roomID }) else { return }
        attemptEnded(at: index, outcome, retryAfter: notBefore)
        let limit =
            rooms[index].phase == .joining
            ? (Dialect.firstJoinAttempts ?? environment.retryPolicy.maxAttempts)
            : environment.retryPolicy.maxAttempts
        switch rooms[index].attemptFailed(at: loop.now, maxAttempts: limit, notBefore: notBefore) {
        case .retry(let delay):
            armAttemptTimer(at: index, after: delay, answerTimeout: false)
        case .awaitDeadline where rooms[index].episodeDeadline != nil:
            armAttemptTimer(at: index, after: nil, answerTimeout: false)
        case .awaitDeadline, .giveUp:
            giveUp(at: index)
        }
    }

    private func giveUp(at index: Int) {
        let roomID = rooms[index].roomID
        let phase = rooms[index].phase
        _ = end(at: index)
        report(.gaveUp(from: phase), room: roomID)
    }

    /// Sets the give-up deadline of the room's current episode (none when `limit` is `nil`); the room's attempt
    /// timers never go past it.
    private func setEpisodeDeadline(_ roomID: String, after limit: Duration?) {
        guard let index = rooms.firstIndex(where: { $0.roomID == roomID }) else { return }
        rooms[index].episodeDeadline = limit.map { loop.now.advanced(by: $0) }
    }

    /// Arms room `index`'s one timer: after `delay` (at the episode's deadline if that comes first, or if `delay` is
    /// `nil`) it gives up when the deadline has come, and otherwise counts the attempt in flight as failed
    /// (`answerTimeout`) or starts the next attempt.
    private func armAttemptTimer(at index: Int, after delay: Duration?, answerTimeout: Bool) {
        let roomID = rooms[index].roomID
        let tag = rooms[index].attempt
        let deadline = rooms[index].episodeDeadline
        var due = delay.map { loop.now.advanced(by: $0) } ?? deadline ?? loop.now
        if let deadline, deadline < due { due = deadline }
        if let old = rooms[index].attemptTimer { loop.cancel(old) }
        rooms[index].attemptTimer = arm(at: due) { client in
            guard let index = client.rooms.firstIndex(where: { $0.roomID == roomID }),
                client.rooms[index].attempt == tag, client.rooms[index].phase != .joined
            else { return }
            client.rooms[index].attemptTimer = nil
            if let deadline = client.rooms[index].episodeDeadline, client.loop.now >= deadline {
                client.attemptEnded(at: index, .timeout)
                client.giveUp(at: index)
            } else if answerTimeout {
                if client.rooms[index].attemptInFlight { client.attemptFailed(roomID, .timeout) }
            } else if !client.rooms[index].attemptInFlight {
                client.attempt(roomID)
            }
        }
    }

    /// Arms the ``RoomTransition/stillLost`` notice of a reconnection episode that just began.
    private func armLostNotice(_ roomID: String, after notice: Duration) {
        guard let index = rooms.firstIndex(where: { $0.roomID == roomID }) else { return }
        if let old = rooms[index].noticeTimer { loop.cancel(old) }
        rooms[index].noticeTimer = arm(at: loop.now.advanced(by: notice)) { client in
            guard let index = client.rooms.firstIndex(where: { $0.roomID == roomID }) else { return }
            client.rooms[index].noticeTimer = nil
            guard client.rooms[index].phase == .reconnecting else { return }
            client.report(.stillLost, room: roomID)
        }
    }

    /// Hands the outcome of room `index`'s attempt in flight to the sink, when attempts are logged.
    private func attemptEnded(at index: Int, _ outcome: AttemptRecord.Outcome, retryAfter: Duration? = nil) {
        guard environment.logsAttempts, rooms[index].attemptInFlight, let sink = environment.sink else { return }
        let room = rooms[index]
        let record = AttemptRecord(
            room: room.roomID,
            number: room.attemptsMade,
            reconnecting: room.phase == .reconnecting,
            after: room.episodeStart.duration(to: room.attemptSentAt),
            outcome: outcome,
            retryAfter: outcome == .busy ? retryAfter : nil,
            busyCode: Dialect.busyCode
        )
        sink.recordAttempt(Stamped(time: eventTime, sequence: 0, event: record), from: endpointID)
    }

    // MARK: - Helpers

    private func newSession() -> SessionID {
        sessionsStarted += 1
        return SessionID(rawValue: StableHash.fnv1a("\(endpointID)#\(sessionsStarted)"))
    }

    private func startHeartbeat() {
        guard heartbeat == nil, let interval = environment.engine.heartbeatInterval else { return }
        heartbeat = try? loop.schedulePeriodic(every: interval, handler: self)
    }

    /// Removes room `index` and cancels its timers; the heartbeat stops at its next beat if no room is left.
    func end(at index: Int) -> RoomConnection {
        cancelTimers(of: index)
        cancelNotice(of: index)
        return rooms.remove(at: index)
    }

    private func cancelTimers(of index: Int) {
        if let timer = rooms[index].attemptTimer { loop.cancel(timer) }
        rooms[index].attemptTimer = nil
    }

    /// Cancels the room's ``RoomTransition/stillLost`` notice, which belongs to its episode, not to an attempt.
    private func cancelNotice(of index: Int) {
        if let timer = rooms[index].noticeTimer { loop.cancel(timer) }
        rooms[index].noticeTimer = nil
    }

    /// Sends `message` to a room's server; refused when the transport cannot reach it. (It takes the endpoint, not
    /// the room: passing a whole ``RoomConnection`` copies and retains every field, on every heartbeat.)
    @discardableResult
    private func send(_ message: ClientMessage, to server: (any RoomEndpoint)?) -> SendOutcome {
        guard let server else { return .refused }
        return environment.transport.send(message, from: self, to: server)
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

    /// Runs `body` on this client at `deadline`; `nil` when the loop has shut down (the run is over).
    private func arm(
        at deadline: RuntimeInstant,
        _ body: @escaping @Sendable (isolated RoomClient) -> Void
    )
        -> TimerHandle?
    {
        try? loop.schedule(at: deadline) { [self] in
            onLoop { client in
                client.inStep = true
                defer {
                    client.inStep = false
                    client.stepTime = nil
                }
                body(client)
            }
        }
    }
}
