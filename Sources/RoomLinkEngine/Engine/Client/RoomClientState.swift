/// Every decision of one client, as a plain value: which rooms it is in and where each connection stands, when it
/// sends, retries, gives up, and what it reports. ``RoomClient`` feeds it events — an app's call, a server's message,
/// a change of link or route, a timer — with the time, and carries out the actions it returns; tests drive it alone,
/// with no clock, loop, transport or actor (as ``ServerRoomState`` is the server's).
///
/// Actions come out through `perform`, in the order they must be carried out, each with the
/// ``RoomConnection/Attachment`` of the room it concerns: what the client keeps with the room (its channel as the
/// transport opened it, its timers), which the state carries beside the room and never reads. One action has an
/// answer: a ``Action/send(_:room:)`` says whether the message left (``SendOutcome/refused`` when the client's connection is
/// down), because what the client does next depends on it — a refused login is a failed attempt at once, a refused
/// heartbeat a lost connection — and answering in place keeps every consequence in the order the client meets it.
/// Every other action's answer is ignored.
///
/// Timers are the caller's: the state asks for one with ``Action/arm(_:at:)`` and hears it back through
/// ``timerFired(_:at:rules:perform:)``; it recognises, and ignores, a timer it no longer waits for.
public struct RoomClientState: Sendable {
    /// What a client does that the state decides.
    public enum Action: Sendable, Equatable {
        /// Send `message` to the server of `room`. The answer says whether it left.
        case send(ClientMessage, room: String)
        /// The connection carrying `session` to `room` closed under the client (its link went down), or its data
        /// stopped: the transport lets the server hear it (``ClientTransport/closed(_:session:from:)``).
        case closed(room: String, session: SessionID)
        /// Report `transition` of `room` (the dialect turns it into its vendor's callbacks).
        case report(RoomTransition, room: String)
        /// Arm `timer` for `deadline`, replacing the one armed for the same purpose, if any.
        case arm(Timer, at: RuntimeInstant)
        /// Cancel `timer`.
        case cancel(Timer)
        /// Start beating every `interval` (``heartbeatDue(at:rules:perform:)`` at each beat). Performed with the
        /// attachment of the room whose join started it, whose channel the beats go out on.
        case startHeartbeat(every: Duration)
        /// Stop the heartbeat: no room is left.
        case stopHeartbeat
        /// A login attempt for `room` left: the `number`th of its join or reconnection episode.
        case attemptSent(room: String, reconnecting: Bool, number: Int)
        /// An attempt ended (only when ``Rules/logsAttempts``): the event log's `attempt` line.
        case attemptEnded(AttemptRecord)
        /// The transport closed the channel to `room` (or never opened it): the next login opens a new one.
        case reopen(room: String)
        /// The client gave up on the connection carrying `room`: a login or heartbeat went unanswered for its
        /// timeout, or its data stopped. As an SDK closes such a connection and dials a new one for its next attempt,
        /// the transport closes it (``ClientTransport/abandon(_:from:)``), unless something arrived on it since the
        /// room's last message left — another room's traffic: then only this room's path is silent.
        case abandon(room: String)
        /// The client is done with `room`: it forgets the room's server and whatever it kept for it.
        case ended(room: String)
        /// Ask the client's token source for a token for `room` (``Rules/fetchesTokens``); the answer comes back
        /// through ``tokenFetched(_:room:session:attempt:at:rules:perform:)`` with the same session and attempt.
        case fetchToken(room: String, session: SessionID, attempt: UInt32)
    }

    /// A timer the state asks for.
    public enum Timer: Sendable, Hashable {
        /// A room's one timer (see ``RoomConnection/Timer``).
        case room(String, RoomConnection.Timer)
        /// The ``RoomTransition/stillLost`` notice of a room's reconnection episode.
        case notice(room: String)
        /// The client's data stopped (a dialect that watches its data): when this fires, every joined room has
        /// lost its connection.
        case dataSilence
        /// A joined room's renewal asks its token source again (its last fetch failed). Kept where the room's
        /// notice is: a joined room arms no notice, and a room that loses its connection fetches before it logs in.
        case renewal(room: String)
    }

    /// What many clients share and the state decides by: the engine's timings, the retry policy, and the few
    /// switches a dialect sets. Passed to each call rather than kept, so that a million clients keep one copy.
    public struct Rules: Sendable {
        public var timings: EngineTimings
        public var retryPolicy: RetryPolicy {
            get { sharedRetryPolicy.withObject(\.policy) }
            set { sharedRetryPolicy = UnretainedReference(.interned(newValue)) }
        }
        /// ``retryPolicy``, kept once for every iterator the clients make — interned, never freed, and so held
        /// without a reference count: the rules are handed to a client's state on every message and heartbeat, and
        /// with a counted reference each hand-over was a retain and a release (the rules hold nothing else counted).
        package private(set) var sharedRetryPolicy: UnretainedReference<RetryPolicy.Shared>
        /// Whether every client hears of peers joining and leaving, whatever its options
        /// (``RoomDialect/alwaysNotifiesPeers``).
        public var alwaysNotifiesPeers: Bool
        /// How many attempts a first join makes (``RoomDialect/firstJoinAttempts``); `nil`: the policy's.
        public var firstJoinAttempts: Int?
        /// Whether reconnections resume first and go full when that fails (``RoomDialect/reconnectsInModes``).
        public var reconnectsInModes: Bool
        /// The dialect's code for a busy server, carried by attempt records.
        public var busyCode: Int64
        /// Whether each attempt's outcome becomes an ``Action/attemptEnded(_:)``.
        public var logsAttempts: Bool
        /// Whether the clients get their tokens from a ``TokenSource``: a room fetches one before it logs in, when a
        /// login with a token it used before is refused for its token, and when the server says the token will
        /// expire (``Action/fetchToken(room:session:attempt:)``).
        public var fetchesTokens = false
        /// When a reconnection episode gives up at the latest: the retry timeout, or the policy's `maxElapsed` if
        /// sooner; `nil` when only the policy's attempts end it.
        public let reconnectLimit: Duration?

        /// The rules of `Dialect` with these timings, policy and attempt logging.
        public init<Dialect: RoomDialect>(
            _ dialect: Dialect.Type,
            timings: EngineTimings,
            retryPolicy: RetryPolicy,
            logsAttempts: Bool = false
        ) {
            self.timings = timings
            self.sharedRetryPolicy = UnretainedReference(.interned(retryPolicy))
            self.alwaysNotifiesPeers = Dialect.alwaysNotifiesPeers
            self.firstJoinAttempts = Dialect.firstJoinAttempts
            self.reconnectsInModes = Dialect.reconnectsInModes
            self.busyCode = Dialect.busyCode
            self.logsAttempts = logsAttempts
            self.reconnectLimit =
                switch (timings.retryTimeout, retryPolicy.maxElapsed) {
                case (let timeout?, let elapsed?): min(timeout, elapsed)
                case (let timeout?, nil): timeout
                case (nil, let elapsed): elapsed
                }
        }
    }

    /// What carries out an action — given the attachment of the room it concerns (a scratch one for an action of
    /// no room) — and, for a send, says whether the message left.
    public typealias Perform = (Action, inout RoomConnection.Attachment) -> SendOutcome

    /// The identity the server knows.
    public let userID: String
    /// The rooms the client is in or trying to be in, in join order.
    public private(set) var rooms = RoomList()
    private var random: SeededRandom
    /// The FNV-1a of `"<clientID>#"`: session `n` is the FNV-1a of `"<clientID>#<n>"`, continued from it (a hash,
    /// not the name, kept per client).
    private let sessionPrefix: UInt64
    // The small fields last, together: they share one word.
    private var sessionsStarted: UInt32 = 0
    /// Whether the heartbeat runs.
    public private(set) var isBeating = false
    /// Whether the data-silence timer is armed (the client's data stopped, and it has not noticed yet).
    public private(set) var isDataSilent = false

    /// A client named `clientID` with no rooms, whose retry jitter is drawn from `seed` (with `clientID`), and whose
    /// session IDs mix in `sessionSalt` (``ClientTransport/sessionSalt``; 0 keeps them the name's alone).
    public init(clientID: String, userID: String, seed: UInt64, sessionSalt: UInt64 = 0) {
        self.userID = userID
        self.sessionPrefix = StableHash.fnv1a(clientID + "#") ^ sessionSalt
        self.random = SeededRandom(seed: seed, stream: StableHash.fnv1a(clientID))
    }

    /// The index of `roomID` in ``rooms``.
    public func index(of roomID: String) -> Int? {
        rooms.index(ofRoom: roomID)
    }

    // MARK: - The app's calls

    /// Starts joining `roomID` (the caller has checked that its dialect allows it): reports
    /// ``RoomTransition/joining`` and sends the first attempt.
    public mutating func join(
        _ roomID: String,
        options: JoinOptions,
        at now: RuntimeInstant,
        rules: Rules,
        perform: Perform
    ) {
        var options = options
        if rules.alwaysNotifiesPeers { options.notifiesPeers = true }
        let session = newSession()
        let retry = rules.sharedRetryPolicy.withObject { $0.makeIterator(random: SeededRandom(seed: random.next())) }
        rooms.append(RoomConnection(roomID: roomID, options: options, session: session, now: now, retry: retry))
        // A token the app passed is used first; without one, the first attempt fetches one.
        if rules.fetchesTokens, options.token == nil { rooms[rooms.count - 1].tokenStep = .due }
        act(.report(.joining, room: roomID), perform)
        rooms[rooms.count - 1].episodeDeadline = now.advanced(by: rules.timings.loginTimeout)
        attempt(roomID, at: now, rules: rules, perform: perform)
    }

    /// Leaves `roomID` at once, telling the server if the connection is up (if it is not, peers keep seeing the user
    /// until the server's timeout). Returns `false` when the client is not in the room.
    public mutating func leave(_ roomID: String, rules: Rules, perform: Perform) -> Bool {
        guard let index = index(of: roomID) else { return false }
        let phase = rooms[index].phase
        var room = end(at: index, perform: perform)
        _ = perform(.send(.logout(userID: userID, session: room.session), room: roomID), &room.attachment)
        stopData(of: &room, rules: rules, perform: perform)
        act(.report(.left(from: phase), room: roomID), perform)
        _ = perform(.ended(room: roomID), &room.attachment)
        return true
    }

    /// Removes `roomID` without reporting it (the dialect reports its own reason), telling the server the member
    /// left.
    public mutating func abandon(_ roomID: String, rules: Rules, perform: Perform) {
        guard let index = index(of: roomID) else { return }
        var room = end(at: index, perform: perform)
        _ = perform(.send(.logout(userID: userID, session: room.session), room: roomID), &room.attachment)
        stopData(of: &room, rules: rules, perform: perform)
        _ = perform(.ended(room: roomID), &room.attachment)
    }

    /// The client is done with `room` (removed from its list): for a dialect whose data flows, the session's data
    /// stops, and the server hears it. Whatever the room's phase — a login of the session the server admitted, its
    /// answer lost, holds a member whose data would otherwise never be heard to stop, and a logout sent down a link
    /// that is down never arrives. A server that no longer holds the session ignores it.
    private func stopData(of room: inout RoomConnection, rules: Rules, perform: Perform) {
        guard rules.timings.dataSilenceDetection != nil else { return }
        _ = perform(.closed(room: room.roomID, session: room.session), &room.attachment)
    }

    /// Gives the server a new token for `roomID`; later reconnections use it too. Returns `false` when the client
    /// is not in the room.
    public mutating func renew(_ token: String, roomID: String, perform: Perform) -> Bool {
        guard let index = index(of: roomID) else { return false }
        rooms[index].options.token = token
        let renewal = ClientMessage.renewToken(userID: userID, session: rooms[index].session, token: token)
        _ = perform(.send(renewal, room: roomID), &rooms[index].attachment)
        if rooms[index].phase == .reconnecting { act(.report(.tokenRenewedWhileReconnecting, room: roomID), perform) }
        return true
    }

    /// Shows or hides the member to its peers in `roomID` (an Agora role change). Returns `false` when the client
    /// is not in the room.
    public mutating func setHidden(_ hidden: Bool, roomID: String, perform: Perform) -> Bool {
        guard let index = index(of: roomID) else { return false }
        guard rooms[index].options.hidden != hidden else { return true }
        rooms[index].options.hidden = hidden
        let change = ClientMessage.setHidden(userID: userID, session: rooms[index].session, hidden: hidden)
        _ = perform(.send(change, room: roomID), &rooms[index].attachment)
        return true
    }

    /// The client's connections move to a new path (a new IP address, a proxy): every joined room closes its
    /// connection and reconnects at once, reporting `cause`.
    public mutating func reconnectAll(cause: LossCause, at now: RuntimeInstant, rules: Rules, perform: Perform) {
        for roomID in rooms.roomIDs {
            guard let index = index(of: roomID) else { continue }
            connectionLost(at: index, closed: true, cause: cause, now: now, rules: rules, perform: perform)
        }
    }

    /// Forgets every room without telling the server (as if the app were killed) and disarms the client's timers.
    public mutating func shutdown(perform: Perform) {
        while !rooms.isEmpty {
            var room = end(at: rooms.count - 1, perform: perform)
            _ = perform(.ended(room: room.roomID), &room.attachment)
        }
        if isDataSilent { act(.cancel(.dataSilence), perform) }
        isDataSilent = false
    }

    // MARK: - The network

    /// A message from the server of `roomID`.
    public mutating func receive(
        _ message: ServerMessage,
        from roomID: String,
        at now: RuntimeInstant,
        rules: Rules,
        perform: Perform
    ) {
        guard let index = index(of: roomID) else { return }
        switch message {
        case .loginAccepted(let session, let attempt, let roomSessionID, let present):
            guard sessionOfRoom(at: index) == session else { return }
            rooms[index].heard(at: now)
            // A late answer to an earlier attempt: the client gave up on it (and closed its connection).
            guard awaitsAnswer(at: index, to: attempt) else { return }
            if rules.fetchesTokens, rooms[index].tokenStep == .fresh { rooms[index].tokenStep = .settled }
            attemptEnded(at: index, .ok, rules: rules, perform: perform)
            cancelTimer(of: index, perform: perform)
            cancelNotice(of: index, perform: perform)
            for transition in rooms[index].accepted(roomSessionID: roomSessionID, present: present, at: now) {
                act(.report(transition, room: roomID), perform)
            }
            startHeartbeat(at: index, rules: rules, perform: perform)
        case .loginRejected(let session, let attempt, let reason):
            guard sessionOfRoom(at: index) == session, awaitsAnswer(at: index, to: attempt) else { return }
            if rules.fetchesTokens, reason == .tokenInvalid, rooms[index].tokenStep == .settled {
                // A token used before, refused: it expired while the client was away. The next attempt fetches a
                // new one (a refusal of one just fetched is the token's own fault, and ends the room below).
                cancelTimer(of: index, perform: perform)
                rooms[index].tokenStep = .due
                attemptFailed(roomID, .refused, at: now, rules: rules, perform: perform)
                return
            }
            attemptEnded(at: index, .refused, rules: rules, perform: perform)
            close(at: index, { .rejected(reason, from: $0) }, rules: rules, perform: perform)
        case .heartbeatAck(let session):
            rooms.withRoom(at: index) { room in
                if room.session == session { room.heard(at: now) }
            }
        case .sessionUnknown(let session):
            guard sessionOfRoom(at: index) == session else { return }
            switch phaseOfRoom(at: index) {
            case .joined:
                connectionLost(at: index, closed: false, cause: .sessionGone, now: now, rules: rules, perform: perform)
            case .reconnecting where rooms[index].attemptInFlight:
                // The server cannot resume the session: the next attempt starts a new one.
                rooms[index].fullOnNext = true
                cancelTimer(of: index, perform: perform)
                attemptFailed(roomID, .refused, at: now, rules: rules, perform: perform)
            default:
                return
            }
        case .userUpdate(let change, let users, let reason):
            rooms[index].heard(at: now)
            // Peer updates do not reach a client resuming its session (LiveKit); it learns the difference when back.
            guard phaseOfRoom(at: index) == .joined else { return }
            if let transition = rooms[index].userUpdate(change, users: users, reason: reason) {
                act(.report(transition, room: roomID), perform)
            }
        case .kicked(let session, let reason):
            guard sessionOfRoom(at: index) == session else { return }
            close(at: index, { .kicked(reason, from: $0) }, rules: rules, perform: perform)
        case .tokenWillExpire(let session, let remaining):
            guard sessionOfRoom(at: index) == session else { return }
            rooms[index].heard(at: now)
            act(.report(.tokenWillExpire(remaining: remaining), room: roomID), perform)
            if rules.fetchesTokens, phaseOfRoom(at: index) == .joined, rooms[index].tokenStep == .settled {
                rooms[index].tokenStep = .renewing
                requestToken(at: index, perform: perform)
            }
        case .busy(let session, let attempt, let retryAfter):
            // Admission control: a failed attempt whose next one waits at least as long as the server asked.
            guard sessionOfRoom(at: index) == session, awaitsAnswer(at: index, to: attempt) else { return }
            cancelTimer(of: index, perform: perform)
            attemptFailed(roomID, .busy, notBefore: retryAfter, at: now, rules: rules, perform: perform)
        case .reconnectRequested(let session):
            guard sessionOfRoom(at: index) == session, phaseOfRoom(at: index) == .joined else { return }
            connectionLost(
                at: index,
                closed: true,
                cause: .serverRequest,
                full: true,
                now: now,
                rules: rules,
                perform: perform
            )
        }
    }

    /// The client's own link changed (the operating system tells the SDK at once, except that a blackhole looks like
    /// an up link).
    public mutating func linkChanged(to state: LinkState, at now: RuntimeInstant, rules: Rules, perform: Perform) {
        let watchesData = rules.timings.dataSilenceDetection != nil
        switch state {
        case .down, .blackhole:
            if watchesData {
                // The data stops: the server notices its absence at once, the client after the detection time.
                for index in rooms.indices where rooms[index].phase == .joined {
                    let closed = Action.closed(room: rooms[index].roomID, session: rooms[index].session)
                    _ = perform(closed, &rooms[index].attachment)
                }
                armDataSilence(at: now, rules: rules, perform: perform)
            }
            guard state == .down else { return }  // a blackhole looks like an up link: only silence reveals it
            for roomID in rooms.roomIDs {
                guard let index = index(of: roomID) else { continue }
                if watchesData, rooms[index].phase == .joined { continue }  // noticed after the detection time
                connectionLost(
                    at: index,
                    closed: !watchesData,
                    cause: .closed,
                    now: now,
                    rules: rules,
                    perform: perform
                )
            }
        case .up:
            if isDataSilent {
                // Back before the client noticed: the data flows again, and the server hears it.
                act(.cancel(.dataSilence), perform)
                isDataSilent = false
                for index in rooms.indices where rooms[index].phase == .joined {
                    let resumed = ClientMessage.connectionResumed(userID: userID, session: rooms[index].session)
                    _ = perform(.send(resumed, room: rooms[index].roomID), &rooms[index].attachment)
                }
            }
            // The system reports the network back: every room still trying tries again at once.
            for roomID in rooms.roomIDs {
                guard let index = index(of: roomID), rooms[index].phase != .joined else { continue }
                cancelTimer(of: index, perform: perform)
                attempt(roomID, at: now, rules: rules, perform: perform)
            }
        }
    }

    /// The transport says what became of the connection carrying the channel to `roomID`. A closed or refused
    /// connection loses the room's connection as a closed socket does — a joined room reconnects at once, an attempt
    /// in flight has failed — and the next attempt opens a new channel. (The server's side of the transport tells the
    /// server itself, so the client sends nothing.)
    public mutating func connectionChanged(
        _ event: ConnectionEvent,
        room roomID: String,
        at now: RuntimeInstant,
        rules: Rules,
        perform: Perform
    ) {
        guard let index = index(of: roomID) else { return }
        switch event {
        case .connected:
            return
        case .dataStopped(let since):
            guard rules.timings.dataSilenceDetection != nil else { return }  // heartbeats watch the connection
            routeChanged(toRoom: roomID, reachable: false, since: since, at: now, rules: rules, perform: perform)
        case .dataResumed:
            routeChanged(toRoom: roomID, reachable: true, at: now, rules: rules, perform: perform)
        case .closed, .refused:
            _ = perform(.reopen(room: roomID), &rooms[index].attachment)
            connectionLost(at: index, closed: false, cause: .closed, now: now, rules: rules, perform: perform)
        }
    }

    /// The path to one room was cut or restored (a room partition). Heartbeats notice it by silence; a dialect that
    /// watches its data sees the room's data stop — the server sees it too — and declares the room lost after the
    /// detection time unless the path comes back first. A room already trying keeps its schedule: nothing tells the
    /// client the path is back.
    public mutating func routeChanged(
        toRoom roomID: String,
        reachable: Bool,
        at now: RuntimeInstant,
        rules: Rules,
        perform: Perform
    ) {
        routeChanged(toRoom: roomID, reachable: reachable, since: now, at: now, rules: rules, perform: perform)
    }

    /// ``routeChanged(toRoom:reachable:at:rules:perform:)`` for a cut noticed at `now` that began at `since` (the
    /// last data a socket received): the detection time counts from `since`.
    private mutating func routeChanged(
        toRoom roomID: String,
        reachable: Bool,
        since: RuntimeInstant,
        at now: RuntimeInstant,
        rules: Rules,
        perform: Perform
    ) {
        guard let detection = rules.timings.dataSilenceDetection, let index = index(of: roomID),
            rooms[index].phase == .joined
        else { return }
        let session = rooms[index].session
        if reachable {
            // The joined room's one timer is this silence timer (attempt timers belong to episodes).
            guard rooms[index].timer != nil else { return }
            cancelTimer(of: index, perform: perform)
            _ = perform(
                .send(.connectionResumed(userID: userID, session: session), room: roomID),
                &rooms[index].attachment
            )
        } else {
            guard rooms[index].timer == nil else { return }
            _ = perform(.closed(room: roomID, session: session), &rooms[index].attachment)
            // Never in the past: a cut noticed late is declared at once, through the timer like any other.
            arm(.routeSilence(session), at: index, deadline: max(now, since.advanced(by: detection)), perform: perform)
        }
    }

    // MARK: - Tokens

    /// The client's token source answered the fetch of `roomID`'s `session` made for `attempt`
    /// (``Action/fetchToken(room:session:attempt:)``); an answer the room no longer waits for is ignored.
    ///
    /// A token for a login is used at once; one for a renewal is sent to the server. A failed fetch for a login is a
    /// failed attempt: the retry policy says when the next fetch goes, and gives up as it would on logins. A failed
    /// renewal asks again after the policy's delay, while the policy allows; then the token runs out.
    public mutating func tokenFetched(
        _ result: Result<String, TokenFetchFailure>,
        room roomID: String,
        session: SessionID,
        attempt: UInt32,
        at now: RuntimeInstant,
        rules: Rules,
        perform: Perform
    ) {
        guard let index = index(of: roomID) else { return }
        let (step, current, tag) = rooms.readRoom(at: index) { ($0.tokenStep, $0.session, $0.attempt) }
        guard current == session, tag == attempt else { return }
        switch (step, result) {
        case (.fetching, .success(let token)):
            cancelTimer(of: index, perform: perform)
            rooms[index].options.token = token
            rooms[index].tokenStep = .fresh
            self.attempt(roomID, at: now, rules: rules, perform: perform)
        case (.fetching, .failure):
            cancelTimer(of: index, perform: perform)
            rooms[index].tokenStep = .due
            attemptFailed(roomID, .refused, at: now, rules: rules, perform: perform)
        case (.renewing, .success(let token)):
            rooms[index].tokenStep = .settled
            rooms[index].renewalEnded()
            _ = renew(token, roomID: roomID, perform: perform)
        case (.renewing, .failure):
            let retry = rules.sharedRetryPolicy.withObject {
                $0.makeIterator(random: SeededRandom(seed: random.next()))
            }
            let delay = rooms[index].renewalFailed(at: now, retry: retry)
            if let delay {
                rooms[index].tokenStep = .renewalDue
                _ = perform(.arm(.renewal(room: roomID), at: now.advanced(by: delay)), &rooms[index].attachment)
            } else {
                rooms[index].tokenStep = .settled
                rooms[index].renewalEnded()
            }
        case (.settled, _), (.due, _), (.fresh, _), (.renewalDue, _):
            return
        }
    }

    /// Asks the token source for room `index`'s token, for its current session and attempt.
    private mutating func requestToken(at index: Int, perform: Perform) {
        let (roomID, session, tag) = rooms.readRoom(at: index) { ($0.roomID, $0.session, $0.attempt) }
        _ = perform(.fetchToken(room: roomID, session: session, attempt: tag), &rooms[index].attachment)
    }

    // MARK: - Time

    /// A heartbeat is due: each joined room that heard nothing for the silence timeout has lost its connection; the
    /// others send a heartbeat.
    public mutating func heartbeatDue(at now: RuntimeInstant, rules: Rules, perform: Perform) {
        guard !rooms.isEmpty else {
            if isBeating { act(.stopHeartbeat, perform) }
            isBeating = false
            return
        }
        let timeout = rules.timings.silenceTimeout
        // By index, without copying the room list (this runs for every client every interval). Losing a
        // connection can end only the room at hand (a policy allowing a single attempt), so the index stays put then.
        let userID = userID
        var index = 0
        while index < rooms.count {
            let count = rooms.count
            // In place: what decides is three fields of the room, and the heartbeat goes out on its attachment.
            let beat = rooms.withRoom(at: index) { room -> Beat in
                guard room.phase == .joined else { return .notJoined }
                if room.isSilent(at: now, timeout: timeout) { return .silent }
                let heartbeat = ClientMessage.heartbeat(userID: userID, session: room.session)
                return perform(.send(heartbeat, room: room.roomID), &room.attachment) == .refused ? .refused : .sent
            }
            if beat != .notJoined {
                if beat == .silent {
                    connectionLost(at: index, closed: false, cause: .silent, now: now, rules: rules, perform: perform)
                } else if beat == .refused, !isDataSilent {
                    // A dialect that watches its data (Agora) notices a down link when its data-silence timer fires,
                    // 4 s after the data stopped, not at the first keep-alive ping that cannot leave.
                    connectionLost(at: index, closed: true, cause: .closed, now: now, rules: rules, perform: perform)
                }
            }
            if rooms.count == count { index += 1 }
        }
    }

    /// What a joined room's heartbeat came to.
    private enum Beat {
        /// Not joined: no heartbeat.
        case notJoined
        /// Heard nothing for the silence timeout: the connection is lost.
        case silent
        case sent
        /// The heartbeat could not leave (the link is down).
        case refused
    }

    /// A timer the state asked for fired; one it no longer waits for is ignored.
    public mutating func timerFired(_ timer: Timer, at now: RuntimeInstant, rules: Rules, perform: Perform) {
        switch timer {
        case .dataSilence:
            guard isDataSilent else { return }
            isDataSilent = false
            for roomID in rooms.roomIDs {
                guard let index = index(of: roomID), rooms[index].phase == .joined else { continue }
                connectionLost(at: index, closed: false, cause: .silent, now: now, rules: rules, perform: perform)
            }
        case .renewal(let roomID):
            guard let index = index(of: roomID), rooms[index].tokenStep == .renewalDue,
                rooms[index].phase == .joined
            else { return }
            rooms[index].tokenStep = .renewing
            requestToken(at: index, perform: perform)
        case .notice(let roomID):
            guard let index = index(of: roomID), rooms[index].noticeArmed else { return }
            rooms[index].noticeArmed = false
            guard rooms[index].phase == .reconnecting else { return }
            act(.report(.stillLost, room: roomID), perform)
        case .room(let roomID, let purpose):
            guard let index = index(of: roomID) else { return }
            // What decides, read in place at once: each field read through the list's getter here copied the room
            // whole, retaining its strings, retry and channel — on every retry of half a million clients in a storm.
            let room = rooms.readRoom(at: index) { room in
                (
                    timer: room.timer, session: room.session, phase: room.phase, attempt: room.attempt,
                    deadline: room.episodeDeadline, inFlight: room.attemptInFlight
                )
            }
            guard room.timer == purpose else { return }
            switch purpose {
            case .routeSilence(let session):
                guard room.session == session, room.phase == .joined else { return }
                rooms[index].timer = nil
                connectionLost(at: index, closed: false, cause: .silent, now: now, rules: rules, perform: perform)
            case .answer(let tag), .nextAttempt(let tag):
                guard room.attempt == tag, room.phase != .joined else { return }
                rooms[index].timer = nil
                if let deadline = room.deadline, now >= deadline {
                    attemptEnded(at: index, .timeout, rules: rules, perform: perform)
                    close(at: index, { .gaveUp(from: $0) }, rules: rules, perform: perform)
                } else if case .answer = purpose {
                    if room.inFlight {
                        // Unanswered: the connection it went over is given up on, and the next attempt dials anew.
                        _ = perform(.abandon(room: roomID), &rooms[index].attachment)
                        attemptFailed(roomID, .timeout, at: now, rules: rules, perform: perform)
                    }
                } else if !room.inFlight {
                    attempt(roomID, at: now, rules: rules, perform: perform)
                }
            }
        }
    }

    // MARK: - Attempts

    /// The connection of room `index` was lost: a joined room starts reconnecting; a room already trying counts
    /// its attempt in flight as failed. `closed` tells the server (the socket closed under it); `full` starts a
    /// dialect with reconnect modes in full mode (the server asked for it).
    private mutating func connectionLost(
        at index: Int,
        closed: Bool,
        cause: LossCause,
        full: Bool = false,
        now: RuntimeInstant,
        rules: Rules,
        perform: Perform
    ) {
        // Read in place (through the list's getter, each read copied the room whole: half a million clients at the
        // instant a storm takes their link). Cancelling the timer and closing change neither the phase nor the session.
        let (roomID, joined, session) = rooms.readRoom(at: index) { ($0.roomID, $0.phase == .joined, $0.session) }
        if joined { cancelTimer(of: index, perform: perform) }  // a partition's silence timer
        // Silence condemns the connection it came over: the next attempt must not go down it again.
        if cause == .silent { _ = perform(.abandon(room: roomID), &rooms[index].attachment) }
        if closed {
            _ = perform(.closed(room: roomID, session: session), &rooms[index].attachment)
        }
        let retry = rules.sharedRetryPolicy.withObject { $0.makeIterator(random: SeededRandom(seed: random.next())) }
        if joined, rules.fetchesTokens {
            // A renewal under way is overtaken: the token is about to run out, so the reconnection fetches first.
            switch rooms[index].tokenStep {
            case .renewalDue:
                _ = perform(.cancel(.renewal(room: roomID)), &rooms[index].attachment)
                rooms[index].tokenStep = .due
            case .renewing:
                rooms[index].tokenStep = .due
            case .settled, .due, .fetching, .fresh:
                break
            }
        }
        if rooms[index].connectionLost(at: now, retry: retry) {
            act(.report(.lost(cause), room: roomID), perform)
            if rules.reconnectsInModes {
                // Full from the start: the first attempt switches, and reports it.
                if full {
                    rooms[index].fullOnNext = true
                } else {
                    act(.report(.reconnectMode(.quick), room: roomID), perform)
                }
            }
            if let notice = rules.timings.lostNotice {
                if rooms[index].noticeArmed { _ = perform(.cancel(.notice(room: roomID)), &rooms[index].attachment) }
                rooms[index].noticeArmed = true
                _ = perform(.arm(.notice(room: roomID), at: now.advanced(by: notice)), &rooms[index].attachment)
            }
            rooms[index].episodeDeadline = rules.reconnectLimit.map { now.advanced(by: $0) }
            attempt(roomID, at: now, rules: rules, perform: perform)
        } else if rooms[index].attemptInFlight {
            attemptFailed(roomID, .refused, at: now, rules: rules, perform: perform)
        }
    }

    /// Sends one login request for `roomID`, and arms its answer timeout.
    private mutating func attempt(_ roomID: String, at now: RuntimeInstant, rules: Rules, perform: Perform) {
        guard let index = index(of: roomID) else { return }
        if rules.fetchesTokens {
            switch rooms[index].tokenStep {
            case .due:
                // The token first: the fetch stands for this attempt, and its answer sends the login.
                rooms[index].attempt &+= 1
                rooms[index].tokenStep = .fetching
                requestToken(at: index, perform: perform)
                if rooms[index].episodeDeadline != nil {
                    armAttemptTimer(at: index, after: nil, answer: false, now: now, perform: perform)
                }
                return
            case .fetching:
                // Still waiting for the token (the link came back meanwhile): only the deadline is armed again.
                if rooms[index].episodeDeadline != nil {
                    armAttemptTimer(at: index, after: nil, answer: false, now: now, perform: perform)
                }
                return
            case .settled, .fresh, .renewing, .renewalDue:
                break
            }
        }
        rooms[index].attempt &+= 1
        if rules.reconnectsInModes, rooms[index].isFullReconnectionDue(maxAttempts: rules.retryPolicy.maxAttempts) {
            let forgotten = rooms[index].switchToFull(session: newSession())
            act(.report(.reconnectMode(.full), room: roomID), perform)
            if !forgotten.isEmpty { act(.report(.peersCleared(forgotten), room: roomID), perform) }
        }
        let userID = userID
        let request = rooms.readRoom(at: index) { room in
            let kind: LoginRequest.Kind =
                switch room.phase {
                case .joining, .joined: .join
                case .reconnecting where !rules.reconnectsInModes: .reconnect
                case .reconnecting: room.mode == .full ? .join : .resume
                }
            return LoginRequest(
                userID: userID,
                session: room.session,
                token: room.options.token,
                userStatusNotify: room.options.notifiesPeers,
                maxMemberCount: room.options.maxMemberCount,
                kind: kind,
                hidden: room.options.hidden,
                attempt: room.attempt,
                answerBy: now.advanced(by: rules.timings.attemptTimeout),
                sentAt: now
            )
        }
        rooms[index].attemptSentAt = now
        rooms[index].attemptInFlight = true
        guard perform(.send(.login(request), room: roomID), &rooms[index].attachment) == .sent else {
            attemptFailed(roomID, .refused, at: now, rules: rules, perform: perform)
            return
        }
        act(
            .attemptSent(
                room: roomID,
                reconnecting: rooms[index].phase == .reconnecting,
                number: rooms[index].attemptsMade
            ),
            perform
        )
        armAttemptTimer(at: index, after: rules.timings.attemptTimeout, answer: true, now: now, perform: perform)
    }

    /// The attempt in flight for `roomID` failed with `outcome`; the next one waits for the policy's delay, and at
    /// least `notBefore` (a busy server's hint).
    private mutating func attemptFailed(
        _ roomID: String,
        _ outcome: AttemptRecord.Outcome,
        notBefore: Duration? = nil,
        at now: RuntimeInstant,
        rules: Rules,
        perform: Perform
    ) {
        guard let index = index(of: roomID) else { return }
        attemptEnded(at: index, outcome, retryAfter: notBefore, rules: rules, perform: perform)
        // Read in place (through the list's getter, each read copied the room whole: every failed retry in a storm).
        let (joining, hasDeadline) = rooms.readRoom(at: index) { ($0.phase == .joining, $0.episodeDeadline != nil) }
        let limit =
            joining
            ? (rules.firstJoinAttempts ?? rules.retryPolicy.maxAttempts)
            : rules.retryPolicy.maxAttempts
        switch rooms[index].attemptFailed(at: now, maxAttempts: limit, notBefore: notBefore) {
        case .retry(let delay):
            armAttemptTimer(at: index, after: delay, answer: false, now: now, perform: perform)
        case .awaitDeadline where hasDeadline:
            armAttemptTimer(at: index, after: nil, answer: false, now: now, perform: perform)
        case .awaitDeadline, .giveUp:
            close(at: index, { .gaveUp(from: $0) }, rules: rules, perform: perform)
        }
    }

    /// Ends room `index` for good (given up, refused, kicked), reporting `transition` from the phase it was in.
    private mutating func close(
        at index: Int,
        _ transition: (RoomConnection.Phase) -> RoomTransition,
        rules: Rules,
        perform: Perform
    ) {
        let phase = rooms[index].phase
        var room = end(at: index, perform: perform)
        stopData(of: &room, rules: rules, perform: perform)
        act(.report(transition(phase), room: room.roomID), perform)
        _ = perform(.ended(room: room.roomID), &room.attachment)
    }

    /// Arms room `index`'s one timer: after `delay` (at the episode's deadline if that comes first, or if `delay` is
    /// `nil`) it gives up when the deadline has come, and otherwise counts the attempt in flight as failed (`answer`)
    /// or starts the next attempt.
    private mutating func armAttemptTimer(
        at index: Int,
        after delay: Duration?,
        answer: Bool,
        now: RuntimeInstant,
        perform: Perform
    ) {
        let tag = rooms[index].attempt
        let deadline = rooms[index].episodeDeadline
        var due = delay.map { now.advanced(by: $0) } ?? deadline ?? now
        if let deadline, deadline < due { due = deadline }
        arm(answer ? .answer(attempt: tag) : .nextAttempt(after: tag), at: index, deadline: due, perform: perform)
    }

    /// Arms room `index`'s one timer for `purpose`, replacing the one armed.
    private mutating func arm(
        _ purpose: RoomConnection.Timer,
        at index: Int,
        deadline: RuntimeInstant,
        perform: Perform
    ) {
        cancelTimer(of: index, perform: perform)
        rooms[index].timer = purpose
        _ = perform(.arm(.room(rooms[index].roomID, purpose), at: deadline), &rooms[index].attachment)
    }

    /// Hands the outcome of room `index`'s attempt in flight on, when attempts are logged.
    private func attemptEnded(
        at index: Int,
        _ outcome: AttemptRecord.Outcome,
        retryAfter: Duration? = nil,
        rules: Rules,
        perform: Perform
    ) {
        guard rules.logsAttempts, rooms[index].attemptInFlight else { return }
        let record = rooms.readRoom(at: index) { room in
            AttemptRecord(
                room: room.roomID,
                number: room.attemptsMade,
                reconnecting: room.phase == .reconnecting,
                after: room.episodeStart.duration(to: room.attemptSentAt),
                outcome: outcome,
                retryAfter: outcome == .busy ? retryAfter : nil,
                busyCode: rules.busyCode
            )
        }
        act(.attemptEnded(record), perform)
    }

    // MARK: - Helpers

    /// Carries out `action`, which concerns no room's attachment.
    private func act(_ action: Action, _ perform: Perform) {
        var none = RoomConnection.Attachment()
        _ = perform(action, &none)
    }

    private mutating func newSession() -> SessionID {
        sessionsStarted += 1
        return SessionID(rawValue: StableHash.fnv1a(continuing: sessionPrefix, String(sessionsStarted)))
    }

    /// Starts the heartbeat, if it is not beating, as room `index` joins.
    private mutating func startHeartbeat(at index: Int, rules: Rules, perform: Perform) {
        guard !isBeating, let interval = rules.timings.heartbeatInterval else { return }
        isBeating = true
        // With the room's attachment, not an empty one: the heartbeat goes where the attachment's channel leads, and
        // whoever carries it out may look there ahead of each beat.
        _ = perform(.startHeartbeat(every: interval), &rooms[index].attachment)
    }

    /// Arms the data-silence timer, unless it is armed.
    private mutating func armDataSilence(at now: RuntimeInstant, rules: Rules, perform: Perform) {
        guard !isDataSilent, let detection = rules.timings.dataSilenceDetection else { return }
        isDataSilent = true
        act(.arm(.dataSilence, at: now.advanced(by: detection)), perform)
    }

    /// Removes room `index` and disarms its timers; the heartbeat stops at its next beat if no room is left. The
    /// caller reports ``Action/ended(room:)`` once it has sent what the room's end sends.
    private mutating func end(at index: Int, perform: Perform) -> RoomConnection {
        cancelTimer(of: index, perform: perform)
        cancelNotice(of: index, perform: perform)
        return rooms.remove(at: index)
    }

    private mutating func cancelTimer(of index: Int, perform: Perform) {
        rooms.withRoom(at: index) { room in
            guard let purpose = room.timer else { return }
            _ = perform(.cancel(.room(room.roomID, purpose)), &room.attachment)
            room.timer = nil
        }
    }

    /// Disarms the room's ``RoomTransition/stillLost`` notice, which belongs to its episode, not to an attempt.
    private mutating func cancelNotice(of index: Int, perform: Perform) {
        rooms.withRoom(at: index) { room in
            if room.tokenStep == .renewalDue {
                _ = perform(.cancel(.renewal(room: room.roomID)), &room.attachment)
                room.tokenStep = .settled
            }
            guard room.noticeArmed else { return }
            _ = perform(.cancel(.notice(room: room.roomID)), &room.attachment)
            room.noticeArmed = false
        }
    }

    /// The session of room `index`, read in place: through the list's getter the whole room was copied (an outlined
    /// value-witness copy, with the retains of its strings and channel) on every answer a client took — a fill's
    /// millions of login answers.
    private func sessionOfRoom(at index: Int) -> SessionID {
        rooms.readRoom(at: index) { $0.session }
    }

    /// The phase of room `index`, read in place (as ``sessionOfRoom(at:)``).
    private func phaseOfRoom(at index: Int) -> RoomConnection.Phase {
        rooms.readRoom(at: index) { $0.phase }
    }

    /// Whether room `index` is still waiting for the answer to its attempt `attempt` (read in place, not copied).
    private func awaitsAnswer(at index: Int, to attempt: UInt32) -> Bool {
        rooms.readRoom(at: index) { $0.phase != .joined && $0.isAnswer(to: attempt) }
    }
}
