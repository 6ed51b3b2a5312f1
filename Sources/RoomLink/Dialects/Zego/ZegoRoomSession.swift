extension Array {
    /// The first index whose element satisfies `belongs`, for a predicate that is false then true along the array.
    fileprivate func partitioningIndex(where belongs: (Element) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if belongs(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}

/// One room of a ZEGO client as a plain value: its phase, its session, its login or reconnection episode, and the
/// peers it knows. ``ZegoClient`` drives it and carries out what it decides; tests can drive it alone.
///
/// Phases: `logining` (a first login: attempts until ``ZegoTimings/loginTimeout``), `logined`, `reconnecting`
/// (attempts until the retry timeout). A session that fails, is kicked or logs out is removed by its client.
public struct ZegoRoomSession: Sendable {
    /// Where the room's connection is.
    public enum Phase: Sendable, Hashable {
        case logining, logined, reconnecting
    }

    /// What to do after an attempt failed.
    public enum NextAttempt: Sendable, Equatable {
        /// Try again after this delay.
        case retry(after: Duration)
        /// The policy allows no attempt before the episode's deadline: wait for it.
        case awaitDeadline
        /// The policy's attempts are used up: give up now with this event.
        case giveUp(ZegoEvent)
    }

    public let roomID: String
    public internal(set) var config: ZegoRoomConfig
    public internal(set) var session: SessionID
    public internal(set) var phase: Phase
    /// When the current login or reconnection episode began.
    public internal(set) var episodeStart: RuntimeInstant
    /// When the client last heard from the room's server.
    public internal(set) var lastHeard: RuntimeInstant
    /// The peers the client has reported present (sorted), when it asked for user-status notification.
    public internal(set) var peers: [String] = []
    /// The retry iterator of the current episode, boxed: 120 bytes that a logged-in room does not need inline.
    private var episodeRetry: Boxed<RetryPolicy.Iterator>?

    /// A value on the heap, so that an optional one costs a pointer when absent.
    private indirect enum Boxed<Value: Sendable>: Sendable {
        case value(Value)

        var value: Value {
            get {
                switch self {
                case .value(let value): value
                }
            }
            set { self = .value(newValue) }
        }
    }
    /// Whether a login request is waiting for its answer.
    var attemptInFlight = false
    /// Counts attempts, so that a timer of an earlier attempt is ignored.
    var attempt: UInt32 = 0
    /// The room's one timer during an episode: the answer timeout or the wait before the next attempt, never later
    /// than the episode's deadline (where it gives up). One timer, not two, per room that is trying.
    var attemptTimer: TimerHandle?
    /// When the current login or reconnection episode gives up; `nil` once logged in.
    var episodeDeadline: RuntimeInstant?
    /// The room's server as the transport reaches it, resolved at the first attempt.
    var server: (any RoomEndpoint)?

    /// A session starting its first login at `now`, whose first attempt (never delayed) goes out at once.
    public init(
        roomID: String,
        config: ZegoRoomConfig,
        session: SessionID,
        now: RuntimeInstant,
        retry: RetryPolicy.Iterator
    ) {
        self.roomID = roomID
        self.config = config
        self.session = session
        self.phase = .logining
        self.episodeStart = now
        self.lastHeard = now
        var retry = retry
        _ = retry.next(elapsed: .zero)
        self.episodeRetry = .value(retry)
    }

    /// The connection was lost (closed, or silent for too long). A logged-in session starts reconnecting — its first
    /// attempt goes out at once — and returns the `reconnecting` event; one already trying returns `nil` (its
    /// attempt in flight has failed).
    public mutating func connectionLost(at now: RuntimeInstant, retry newRetry: RetryPolicy.Iterator) -> ZegoEvent? {
        guard phase == .logined else { return nil }
        phase = .reconnecting
        episodeStart = now
        var retry = newRetry
        _ = retry.next(elapsed: .zero)
        episodeRetry = .value(retry)
        return .roomStateChanged(
            roomID: roomID,
            reason: .reconnecting,
            errorCode: .connectionInterrupted,
            extendedData: [:]
        )
    }

    /// An attempt failed at `now` (refused, unanswered, or its connection dropped): when to try again.
    public mutating func attemptFailed(at now: RuntimeInstant, maxAttempts: Int?) -> NextAttempt {
        attemptInFlight = false
        guard var retry = episodeRetry?.value else { return .awaitDeadline }  // no episode: nothing to retry
        defer { episodeRetry = .value(retry) }
        if let delay = retry.next(elapsed: episodeStart.duration(to: now)) { return .retry(after: delay) }
        if let maxAttempts, retry.attempts >= maxAttempts { return .giveUp(giveUpEvent) }
        return .awaitDeadline
    }

    /// The event when the episode's time runs out: `loginFailed` or `reconnectFailed`, both 1002053.
    public var giveUpEvent: ZegoEvent {
        .roomStateChanged(
            roomID: roomID,
            reason: phase == .reconnecting ? .reconnectFailed : .loginFailed,
            errorCode: .networkTimeout,
            extendedData: [:]
        )
    }

    /// The server accepted the login or reconnection: the state change, then the peers to report.
    ///
    /// A first login reports `present` as one `add`; a reconnection reports the difference between the peers it
    /// knew and `present` (what changed while it was away), deletions first.
    public mutating func accepted(roomSessionID: String, present: [String], at now: RuntimeInstant) -> [ZegoEvent] {
        let wasReconnecting = phase == .reconnecting
        phase = .logined
        episodeRetry = nil
        episodeDeadline = nil
        lastHeard = now
        attemptInFlight = false
        var events: [ZegoEvent] = [
            wasReconnecting
                ? .roomStateChanged(roomID: roomID, reason: .reconnected, errorCode: .success, extendedData: [:])
                : .roomStateChanged(
                    roomID: roomID,
                    reason: .logined,
                    errorCode: .success,
                    extendedData: ["room_session_id": roomSessionID]
                )
        ]
        guard config.isUserStatusNotify else { return events }
        let known = Set(peers)
        let current = Set(present)
        let gone = peers.filter { !current.contains($0) }
        let new = present.filter { !known.contains($0) }
        if !gone.isEmpty { events.append(.roomUserUpdate(roomID: roomID, update: .delete, users: gone)) }
        if !new.isEmpty { events.append(.roomUserUpdate(roomID: roomID, update: .add, users: new)) }
        peers = present.sorted()
        return events
    }

    /// The server refused the login: the ending event. During a reconnection a refused token means the token
    /// expired while the client was away (1002056); a full room ends the reconnection (1002034).
    public func rejected(_ reason: LoginRejection) -> ZegoEvent {
        let (reason, code): (ZegoRoomStateChangedReason, ZegoErrorCode) =
            switch (phase, reason) {
            case (.reconnecting, .tokenInvalid): (.kickOut, .kickedByTokenExpiry)
            case (.reconnecting, .memberCapReached): (.reconnectFailed, .roomMemberCapReached)
            case (_, .tokenInvalid): (.loginFailed, .tokenInvalid)
            case (_, .memberCapReached): (.loginFailed, .roomMemberCapReached)
            }
        return .roomStateChanged(roomID: roomID, reason: reason, errorCode: code, extendedData: [:])
    }

    /// The server removed the session: the `kickOut` event with the reason's code.
    public func kicked(_ reason: KickReason) -> ZegoEvent {
        let code: ZegoErrorCode =
            switch reason {
            case .duplicateLogin: .kickedByDuplicateLogin
            case .admin: .kickedByAdmin
            case .tokenExpired: .kickedByTokenExpiry
            }
        return .roomStateChanged(roomID: roomID, reason: .kickOut, errorCode: code, extendedData: [:])
    }

    /// Peers joined or left: the event to report, if the session asked for them.
    public mutating func userUpdate(_ change: PresenceChange, users: [String]) -> ZegoEvent? {
        guard config.isUserStatusNotify, !users.isEmpty else { return nil }
        // `peers` stays sorted: a binary search per user, not a sort per update (rooms have hundreds of members).
        for user in users {
            let index = peers.partitioningIndex { $0 >= user }
            let present = index < peers.count && peers[index] == user
            switch change {
            case .add where !present: peers.insert(user, at: index)
            case .delete where present: peers.remove(at: index)
            default: break
            }
        }
        return .roomUserUpdate(roomID: roomID, update: change == .add ? .add : .delete, users: users)
    }

    /// Whether a logged-in session's server has been silent for `detection` at `now`: the connection is lost.
    public func isSilent(at now: RuntimeInstant, detection: Duration) -> Bool {
        phase == .logined && lastHeard.duration(to: now) >= detection
    }

    /// Heard from the server.
    mutating func heard(at now: RuntimeInstant) {
        lastHeard = now
    }
}
