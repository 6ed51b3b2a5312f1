/// One simulated ZEGO Express engine: a user's connection to its rooms, as an actor pinned to a runtime loop.
///
/// It logs in, sends heartbeats, notices a closed connection at once and a silent one by missed heartbeats,
/// reconnects with its retry policy until the retry timeout, and publishes ZEGO's callbacks
/// (`onRoomStateChanged`, `onRoomUserUpdate`, `onRoomTokenWillExpire`) on ``events()`` and to the environment's
/// sink. Calls behave as ZEGO's do (SPEC §2); a call ZEGO refuses returns its error code, and also reports it as a
/// state change where ZEGO does (`loginFailed` for an empty room ID or a second room in single-room mode,
/// `logoutFailed` for a room the user is not in).
///
/// ```swift
/// let client = ZegoClient(id: "A", loop: group.loop(for: "A"), environment: environment)
/// await client.loginRoom("r1", config: ZegoRoomConfig(isUserStatusNotify: true))
/// for await change in await client.events() { print(change.time, change.event) }
/// ```
///
/// Timers and deliveries call it on its loop's thread with no hop; calls from elsewhere hop there like any actor
/// call.
public actor ZegoClient: ClientEndpoint, TimerHandler {
    /// What many clients share: the transport, the timings, the retry policy and the event sink.
    public final class Environment: Sendable {
        public let transport: any RoomTransport
        public let timings: ZegoTimings
        public let retryPolicy: RetryPolicy
        public let sink: (any EventSink<ZegoEvent>)?
        public let bufferingPolicy: AsyncStream<Stamped<ZegoEvent>>.Continuation.BufferingPolicy

        /// Creates an environment. `retryPolicy` defaults to ``RetryPolicy/zegoDefault``.
        public init(
            transport: any RoomTransport,
            timings: ZegoTimings = .default,
            retryPolicy: RetryPolicy = .zegoDefault,
            sink: (any EventSink<ZegoEvent>)? = nil,
            bufferingPolicy: AsyncStream<Stamped<ZegoEvent>>.Continuation.BufferingPolicy = .unbounded
        ) {
            self.transport = transport
            self.timings = timings
            self.retryPolicy = retryPolicy
            self.sink = sink
            self.bufferingPolicy = bufferingPolicy
        }

        /// When an episode gives up at the latest: the retry timeout, or the policy's `maxElapsed` if sooner.
        var reconnectLimit: Duration {
            min(timings.retryTimeout, retryPolicy.maxElapsed ?? timings.retryTimeout)
        }
    }

    /// The device's name on the network and in the event log.
    public nonisolated let endpointID: String
    public nonisolated let endpointHash: UInt64
    /// The identity the server knows; two clients with one user ID are one user on two devices.
    public nonisolated let userID: String
    public nonisolated let roomMode: Scenario.RoomMode
    public nonisolated let loop: any RuntimeLoop
    private let environment: Environment
    private var random: SeededRandom
    private var publisher: EventPublisher<ZegoEvent>
    /// The rooms the client is in or trying to be in, in login order.
    private var rooms: [ZegoRoomSession] = []
    private var heartbeat: TimerHandle?
    private var sessionsStarted: UInt64 = 0
    private var isShutDown = false

    /// Creates a client named `id` on `loop`.
    ///
    /// - Parameters:
    ///   - userID: The identity sent to the server; defaults to `id`.
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
    }

    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    // MARK: - Public API

    /// The client's events from now on: one stream, made on the first call (later calls return it again), ended by
    /// ``shutdown()``.
    public func events() -> AsyncStream<Stamped<ZegoEvent>> {
        publisher.events()
    }

    /// The client's events as an ``EventQueue``: the same events as ``events()``, through a single-consumer queue
    /// several times faster than `AsyncStream` (see `roomlink-bench delivery`). Made on the first call; ended by
    /// ``shutdown()``.
    public func eventQueue() -> EventQueue<Stamped<ZegoEvent>> {
        publisher.queue()
    }

    /// Events the stream's bounded buffer refused (always 0 with the default unbounded buffering).
    public var droppedEventCount: UInt64 { publisher.droppedCount }

    /// The room IDs the client is in or trying to be in, in login order.
    public var roomIDs: [String] { rooms.map(\.roomID) }

    /// `loginRoom(roomID, user, config)`: starts logging in; the outcome arrives as state changes.
    ///
    /// - Returns: `.success` when the login started; otherwise the error code: 1002011 for an empty room ID and
    ///   1002001 for a second room in single-room mode (both also reported as `loginFailed`), 1002001 for a room
    ///   the client is already in (reported by the return value only: that room's state does not change).
    @discardableResult
    public func loginRoom(_ roomID: String, config: ZegoRoomConfig = ZegoRoomConfig()) -> ZegoErrorCode {
        guard !isShutDown else { return .roomCountExceeded }
        guard !roomID.isEmpty else {
            publish(.roomStateChanged(roomID: roomID, reason: .loginFailed, errorCode: .roomIDEmpty, extendedData: [:]))
            return .roomIDEmpty
        }
        if rooms.contains(where: { $0.roomID == roomID }) { return .roomCountExceeded }
        if roomMode == .single, !rooms.isEmpty {
            publish(
                .roomStateChanged(
                    roomID: roomID,
                    reason: .loginFailed,
                    errorCode: .roomCountExceeded,
                    extendedData: [:]
                )
            )
            return .roomCountExceeded
        }
        sessionsStarted += 1
        let now = loop.now
        let room = ZegoRoomSession(
            roomID: roomID,
            config: config,
            session: SessionID(rawValue: StableHash.fnv1a("\(endpointID)#\(sessionsStarted)")),
            now: now,
            retry: environment.retryPolicy.makeIterator(random: SeededRandom(seed: random.next()))
        )
        rooms.append(room)
        publish(.roomStateChanged(roomID: roomID, reason: .logining, errorCode: .success, extendedData: [:]))
        setEpisodeDeadline(roomID, after: environment.timings.loginTimeout)
        attempt(roomID)
        return .success
    }

    /// `logoutRoom(roomID)`: leaves one room at once (`logout`). The server is told if the connection is up; if
    /// it is not, peers keep seeing the user until the server's heartbeat timeout.
    ///
    /// - Returns: `.success`, or 1002002 (also reported as `logoutFailed`) when the client is not in the room.
    @discardableResult
    public func logoutRoom(_ roomID: String) -> ZegoErrorCode {
        guard let index = rooms.firstIndex(where: { $0.roomID == roomID }) else {
            publish(
                .roomStateChanged(roomID: roomID, reason: .logoutFailed, errorCode: .userNotInRoom, extendedData: [:])
            )
            return .userNotInRoom
        }
        let room = end(at: index)
        send(.logout(userID: userID, session: room.session), to: room.server)
        publish(.roomStateChanged(roomID: roomID, reason: .logout, errorCode: .success, extendedData: [:]))
        return .success
    }

    /// `logoutRoom()`: leaves every room, in login order.
    public func logoutRoom() {
        for roomID in rooms.map(\.roomID) { logoutRoom(roomID) }
    }

    /// `switchRoom(from, to, config)`: `logout(from)`, then a login to `to`.
    ///
    /// - Returns: `.success`; 1002002 (reported as `logoutFailed` of `from`) when the client is not in `from`;
    ///   1002001 when it is already in `to`. Neither room changes on an error.
    @discardableResult
    public func switchRoom(
        from fromRoomID: String,
        to toRoomID: String,
        config: ZegoRoomConfig? = nil
    ) -> ZegoErrorCode {
        guard let current = rooms.first(where: { $0.roomID == fromRoomID }) else {
            publish(
                .roomStateChanged(
                    roomID: fromRoomID,
                    reason: .logoutFailed,
                    errorCode: .userNotInRoom,
                    extendedData: [:]
                )
            )
            return .userNotInRoom
        }
        guard !rooms.contains(where: { $0.roomID == toRoomID }) else { return .roomCountExceeded }
        logoutRoom(fromRoomID)
        return loginRoom(toRoomID, config: config ?? current.config)
    }

    /// `renewToken(token, roomID)`: gives the server a new token before the old one expires; later reconnections
    /// use it too.
    ///
    /// - Returns: `.success`, or 1002002 when the client is not in the room.
    @discardableResult
    public func renewToken(_ token: String, roomID: String) -> ZegoErrorCode {
        guard let index = rooms.firstIndex(where: { $0.roomID == roomID }) else { return .userNotInRoom }
        rooms[index].config.token = token
        send(.renewToken(userID: userID, session: rooms[index].session, token: token), to: rooms[index].server)
        return .success
    }

    /// Stops the client: cancels its timers, forgets its rooms without telling the server (as if the app were
    /// killed), and finishes its event stream.
    public func shutdown() {
        guard !isShutDown else { return }
        isShutDown = true
        while !rooms.isEmpty { _ = end(at: rooms.count - 1) }
        publisher.finish()
    }

    // MARK: - Transport and timers

    public nonisolated func deliver(_ message: ServerMessage, from roomID: String) {
        assumeIsolated { $0.receive(message, from: roomID) }
    }

    public nonisolated func linkChanged(to state: LinkState) {
        assumeIsolated { $0.linkChanged(state) }
    }

    public nonisolated func timerFired(_ timer: TimerHandle) {
        assumeIsolated { $0.heartbeatDue() }
    }

    private func receive(_ message: ServerMessage, from roomID: String) {
        guard let index = rooms.firstIndex(where: { $0.roomID == roomID }) else { return }
        let now = loop.now
        switch message {
        case .loginAccepted(let session, let roomSessionID, let present):
            guard rooms[index].session == session else { return }
            rooms[index].heard(at: now)
            guard rooms[index].phase != .logined else { return }  // a late answer to an earlier attempt
            cancelTimers(of: index)
            for event in rooms[index].accepted(roomSessionID: roomSessionID, present: present, at: now) {
                publish(event)
            }
            startHeartbeat()
        case .loginRejected(let session, let reason):
            guard rooms[index].session == session, rooms[index].phase != .logined else { return }
            let event = rooms[index].rejected(reason)
            _ = end(at: index)
            publish(event)
        case .heartbeatAck(let session):
            if rooms[index].session == session { rooms[index].heard(at: now) }
        case .sessionUnknown(let session):
            guard rooms[index].session == session, rooms[index].phase == .logined else { return }
            connectionLost(at: index, closed: false)
        case .userUpdate(let change, let users):
            rooms[index].heard(at: now)
            if let event = rooms[index].userUpdate(change, users: users) { publish(event) }
        case .kicked(let session, let reason):
            guard rooms[index].session == session else { return }
            let event = rooms[index].kicked(reason)
            _ = end(at: index)
            publish(event)
        case .tokenWillExpire(let session, let remaining):
            guard rooms[index].session == session else { return }
            rooms[index].heard(at: now)
            publish(.roomTokenWillExpire(roomID: roomID, remainingSeconds: Int(remaining.seconds.rounded())))
        }
    }

    private func linkChanged(_ state: LinkState) {
        switch state {
        case .down:
            for roomID in rooms.map(\.roomID) {
                guard let index = rooms.firstIndex(where: { $0.roomID == roomID }) else { continue }
                connectionLost(at: index, closed: true)
            }
        case .up:
            // The system reports the network back: every room still trying tries again at once.
            for roomID in rooms.map(\.roomID) {
                guard let index = rooms.firstIndex(where: { $0.roomID == roomID }), rooms[index].phase != .logined
                else { continue }
                if let timer = rooms[index].attemptTimer { loop.cancel(timer) }
                rooms[index].attemptTimer = nil
                attempt(roomID)
            }
        case .blackhole:
            break  // nothing tells the client: only missed heartbeats will
        }
    }

    private func heartbeatDue() {
        let now = loop.now
        guard !rooms.isEmpty else {
            if let heartbeat { loop.cancel(heartbeat) }
            heartbeat = nil
            return
        }
        let detection = environment.timings.blackholeDetection
        // By index, without copying the room list (this runs for every client every interval). Losing a
        // connection can end only the room at hand (a policy allowing a single attempt), so the index stays put then.
        var index = 0
        while index < rooms.count {
            let count = rooms.count
            if rooms[index].phase == .logined {
                if rooms[index].isSilent(at: now, detection: detection) {
                    connectionLost(at: index, closed: false)
                } else if send(.heartbeat(userID: userID, session: rooms[index].session), to: rooms[index].server)
                    == .refused
                {
                    connectionLost(at: index, closed: true)
                }
            }
            if rooms.count == count { index += 1 }
        }
    }

    // MARK: - Attempts

    /// The connection of room `index` was lost: a logged-in room starts reconnecting; a room already trying counts
    /// its attempt in flight as failed. `closed` tells the server (the socket closed under it).
    private func connectionLost(at index: Int, closed: Bool) {
        let roomID = rooms[index].roomID
        if closed { send(.connectionClosed(userID: userID, session: rooms[index].session), to: rooms[index].server) }
        let now = loop.now
        let retry = environment.retryPolicy.makeIterator(random: SeededRandom(seed: random.next()))
        if let event = rooms[index].connectionLost(at: now, retry: retry) {
            publish(event)
            setEpisodeDeadline(roomID, after: environment.reconnectLimit)
            attempt(roomID)
        } else if rooms[index].attemptInFlight {
            attemptFailed(roomID)
        }
    }

    /// Sends one login request for `roomID`, and arms its answer timeout.
    private func attempt(_ roomID: String) {
        guard let index = rooms.firstIndex(where: { $0.roomID == roomID }) else { return }
        rooms[index].attempt &+= 1
        let room = rooms[index]
        let request = LoginRequest(
            userID: userID,
            session: room.session,
            token: room.config.token,
            userStatusNotify: room.config.isUserStatusNotify,
            maxMemberCount: room.config.maxMemberCount,
            isReconnect: room.phase == .reconnecting
        )
        if room.server == nil { rooms[index].server = environment.transport.room(roomID) }
        guard send(.login(request), to: rooms[index].server) == .sent else {
            rooms[index].attemptInFlight = true
            attemptFailed(roomID)
            return
        }
        rooms[index].attemptInFlight = true
        armAttemptTimer(at: index, after: environment.timings.attemptTimeout, answerTimeout: true)
    }

    private func attemptFailed(_ roomID: String) {
        guard let index = rooms.firstIndex(where: { $0.roomID == roomID }) else { return }
        switch rooms[index].attemptFailed(at: loop.now, maxAttempts: environment.retryPolicy.maxAttempts) {
        case .retry(let delay):
            armAttemptTimer(at: index, after: delay, answerTimeout: false)
        case .awaitDeadline:
            armAttemptTimer(at: index, after: nil, answerTimeout: false)
        case .giveUp(let event):
            _ = end(at: index)
            publish(event)
        }
    }

    /// Sets the give-up deadline of the room's current episode; the room's attempt timers never go past it.
    private func setEpisodeDeadline(_ roomID: String, after limit: Duration) {
        guard let index = rooms.firstIndex(where: { $0.roomID == roomID }) else { return }
        rooms[index].episodeDeadline = loop.now.advanced(by: limit)
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
                client.rooms[index].attempt == tag, client.rooms[index].phase != .logined
            else { return }
            client.rooms[index].attemptTimer = nil
            if let deadline = client.rooms[index].episodeDeadline, client.loop.now >= deadline {
                let event = client.rooms[index].giveUpEvent
                _ = client.end(at: index)
                client.publish(event)
            } else if answerTimeout {
                if client.rooms[index].attemptInFlight { client.attemptFailed(roomID) }
            } else if !client.rooms[index].attemptInFlight {
                client.attempt(roomID)
            }
        }
    }

    // MARK: - Helpers

    private func startHeartbeat() {
        guard heartbeat == nil else { return }
        heartbeat = try? loop.schedulePeriodic(every: environment.timings.heartbeatInterval, handler: self)
    }

    /// Removes room `index` and cancels its timers; the heartbeat stops at its next beat if no room is left.
    private func end(at index: Int) -> ZegoRoomSession {
        cancelTimers(of: index)
        return rooms.remove(at: index)
    }

    private func cancelTimers(of index: Int) {
        if let timer = rooms[index].attemptTimer { loop.cancel(timer) }
        rooms[index].attemptTimer = nil
    }

    /// Sends `message` to a room's server; refused when the transport cannot reach it. (It takes the endpoint, not
    /// the room: passing a whole `ZegoRoomSession` copies and retains every field, on every heartbeat.)
    @discardableResult
    private func send(_ message: ClientMessage, to server: (any RoomEndpoint)?) -> SendOutcome {
        guard let server else { return .refused }
        return environment.transport.send(message, from: self, to: server)
    }

    private func publish(_ event: ZegoEvent) {
        publisher.publish(event, at: loop.now)
    }

    /// Runs `body` on this client at `deadline`; `nil` when the loop has shut down (the run is over).
    private func arm(
        at deadline: RuntimeInstant,
        _ body: @escaping @Sendable (isolated ZegoClient) -> Void
    )
        -> TimerHandle?
    {
        try? loop.schedule(at: deadline) { [self] in assumeIsolated { body($0) } }
    }
}
