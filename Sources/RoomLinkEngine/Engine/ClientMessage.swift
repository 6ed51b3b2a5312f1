/// What a client sends to the server of one room.
///
/// The protocol is RoomLink's own, shared by every dialect: a dialect's client maps its calls onto these messages and
/// the server's replies (``ServerMessage``) back onto its vendor's callbacks.
public enum ClientMessage: Sendable, Equatable {
    /// Join the room (a first login, or a reconnection of an existing session).
    case login(LoginRequest)
    /// "I am still here": refreshes the member's heartbeat deadline; the server answers
    /// ``ServerMessage/heartbeatAck(session:)``.
    case heartbeat(userID: String, session: SessionID)
    /// Leave the room.
    case logout(userID: String, session: SessionID)
    /// Replace the session's token before it expires.
    case renewToken(userID: String, session: SessionID, token: String)
    /// The client's data reaches the server again after a short outage that the client did not need to reconnect
    /// from (a dialect whose media flows continuously, Agora). It models an edge of a continuous stream — the
    /// counterpart of the transport's `RoomEndpoint.connectionClosed(userID:session:on:)` — so a transport does not
    /// lose it; the server treats it as a heartbeat.
    case connectionResumed(userID: String, session: SessionID)
    /// The member becomes invisible to its peers (`hidden`, an Agora audience member) or visible again.
    case setHidden(userID: String, session: SessionID, hidden: Bool)
}

/// Identifies one login of one client device: a new login makes a new session, a reconnection keeps it.
public struct SessionID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64

    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    public var description: String { String(rawValue, radix: 16) }
}

/// A login or reconnection request.
public struct LoginRequest: Sendable, Equatable {
    // Stored widest first, the one-byte fields in the bytes the optional cap's tag leaves, and the two instants as
    // words: 72 bytes, where the declaration order of the public fields with optional instants took 89 in a 96-byte
    // stride. A storm's half-million logins in flight and in processing each carry one.

    /// The identity the server knows the user by; two devices with one user ID are one user.
    public var userID: String
    public var session: SessionID
    /// The token the server checks against its authentication table, if it has one.
    public var token: String?
    /// The member cap the first member of a room sets; ignored once the room exists.
    public var maxMemberCount: Int?
    /// Whether the member wants to hear about peers joining and leaving.
    public var userStatusNotify: Bool
    /// A new login, a reconnection, or a resumption of the session.
    public var kind: Kind
    /// Whether peers cannot see the member (an Agora audience member).
    public var hidden: Bool
    /// Which attempt of its client this is; the server's answer carries it back, so that the client can tell the
    /// answer to an attempt it gave up on (and ignore it) from the answer to the one it waits for.
    public var attempt: UInt32
    /// ``answerBy`` in nanoseconds, `Int64.min` for none.
    private var answerByBits: Int64
    /// ``sentAt`` in nanoseconds, `Int64.min` for none.
    private var sentAtBits: Int64

    /// When the client stops waiting for the answer (its attempt timeout), if it says: a server that models its
    /// capacity counts work finished after it as wasted, and may shed a login that waited past it. (A wire
    /// protocol sends it as a relative timeout, as gRPC sends a deadline.)
    ///
    /// An instant of `Int64.min` nanoseconds — no clock's reading — reads back as `nil`.
    public var answerBy: RuntimeInstant? {
        get { Self.instant(answerByBits) }
        set { answerByBits = Self.bits(newValue) }
    }

    /// When the client sent it, if the server can know (in one process): the answer's way back is taken to be as long
    /// as the request's way there, which a server that models its capacity needs to tell useful work from wasted.
    ///
    /// An instant of `Int64.min` nanoseconds — no clock's reading — reads back as `nil`.
    public var sentAt: RuntimeInstant? {
        get { Self.instant(sentAtBits) }
        set { sentAtBits = Self.bits(newValue) }
    }

    private static func instant(_ bits: Int64) -> RuntimeInstant? {
        bits == .min ? nil : RuntimeInstant(nanoseconds: bits)
    }

    private static func bits(_ instant: RuntimeInstant?) -> Int64 {
        instant?.nanoseconds ?? .min
    }

    /// What a login request asks for.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A new session (a first login, or LiveKit's full reconnection).
        case join
        /// The same session after its connection was lost: the server resumes it, or re-adds the member if it had
        /// dropped it (ZEGO, Agora).
        case reconnect
        /// Resume the same session only if the server still holds it; otherwise the server answers
        /// ``ServerMessage/sessionUnknown(session:)`` (LiveKit's quick reconnection).
        case resume
    }

    /// Whether this continues an existing session rather than starting one.
    public var isReconnect: Bool { kind != .join }

    public init(
        userID: String,
        session: SessionID,
        token: String? = nil,
        userStatusNotify: Bool = false,
        maxMemberCount: Int? = nil,
        kind: Kind = .join,
        hidden: Bool = false,
        attempt: UInt32 = 0,
        answerBy: RuntimeInstant? = nil,
        sentAt: RuntimeInstant? = nil
    ) {
        self.userID = userID
        self.session = session
        self.token = token
        self.userStatusNotify = userStatusNotify
        self.maxMemberCount = maxMemberCount
        self.kind = kind
        self.hidden = hidden
        self.attempt = attempt
        self.answerByBits = Self.bits(answerBy)
        self.sentAtBits = Self.bits(sentAt)
    }
}
