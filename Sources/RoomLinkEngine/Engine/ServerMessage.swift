/// What the server of a room sends to a client.
public enum ServerMessage: Sendable, Equatable {
    /// The login (or reconnection) of `session` succeeded. `attempt` is the request's
    /// (``LoginRequest/attempt``); `roomSessionID` identifies the room's current life on the server; `present` lists
    /// the other users already in the room when the member asked for user-status notification (the first `add` it
    /// reports), and is empty otherwise.
    case loginAccepted(session: SessionID, attempt: UInt32, roomSessionID: String, present: [String])
    /// The login `attempt` of `session` was refused and must not be retried.
    case loginRejected(session: SessionID, attempt: UInt32, reason: LoginRejection)
    /// The server is too busy to take login `attempt` of `session` (admission control, contract §9): the client may
    /// try again, no sooner than `retryAfter` from now. Each dialect reports it in its own vocabulary.
    case busy(session: SessionID, attempt: UInt32, retryAfter: Duration)
    /// The server heard the heartbeat of `session`.
    case heartbeatAck(session: SessionID)
    /// A heartbeat, or a request to resume, named a session the server no longer has (its heartbeat timeout
    /// passed): the client must reconnect — with a new session, after a refused resume — to be a member again.
    case sessionUnknown(session: SessionID)
    /// Peers joined or left (only to members that asked for user-status notification); for a departure, why.
    case userUpdate(PresenceChange, users: [String], reason: DepartureReason?)
    /// The server removed `session` from the room; the client must not reconnect.
    case kicked(session: SessionID, reason: KickReason)
    /// The session's token expires in `remaining` unless renewed.
    case tokenWillExpire(session: SessionID, remaining: Duration)
    /// The server asks the member to reconnect now (LiveKit's `LeaveRequest` with a reconnect action: a node going
    /// away); a dialect with reconnect modes reconnects in full, with a new session.
    case reconnectRequested(session: SessionID)
}

/// Whether peers joined or left a room.
public enum PresenceChange: String, Sendable, Hashable, CaseIterable {
    case add, delete
}

/// Why a peer left a room, as the server tells the others (Agora's `USER_OFFLINE_REASON`).
public enum DepartureReason: String, Sendable, Hashable, CaseIterable {
    /// It left (logout, leave).
    case quit
    /// The server stopped hearing from it, or removed it.
    case dropped
    /// It stayed but became invisible (an Agora broadcaster switching to audience).
    case becomeAudience
}

/// Why a server refused a login.
public enum LoginRejection: String, Sendable, Hashable, CaseIterable {
    /// The token is wrong, or has expired.
    case tokenInvalid
    /// The room is at its member cap.
    case memberCapReached
}

/// Why a server removed a member.
public enum KickReason: String, Sendable, Hashable, CaseIterable {
    /// The same user ID logged in to the room from another device; the newer login wins.
    case duplicateLogin
    /// The business server's kick API.
    case admin
    /// The member's token expired and was not renewed in time.
    case tokenExpired
}
