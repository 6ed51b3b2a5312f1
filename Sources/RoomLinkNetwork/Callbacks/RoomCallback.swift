public import RoomLinkEngine

/// Whose room callbacks a server sends (`roomlink serve --callback URL`): each vendor's cloud tells the app's own
/// backend about its rooms in its own format, and delivers them by its own rules (``CallbackDeliveryRules``).
public enum CallbackVendor: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Agora's Notifications service (NCS): channel events 101–112, signed with HMAC-SHA1 and HMAC-SHA256.
    case agora
    /// ZEGO's server callbacks `room_login` and `room_logout`, signed with SHA-1 of the sorted secret, timestamp and
    /// nonce.
    case zego
    /// LiveKit's webhooks: `room_started`, `participant_joined`, `participant_left`, `room_finished`.
    case livekit

    /// The vendor whose callbacks a server of `dialect` sends.
    public init(_ dialect: DialectName) {
        switch dialect {
        case .agora: self = .agora
        case .zego: self = .zego
        case .livekit: self = .livekit
        }
    }

    public var description: String { rawValue }
}

/// One change of a room's membership, as a server's callbacks tell it: the vendor-neutral fact that each vendor's
/// format (``CallbackFormat``) writes in its own words. Times are Unix milliseconds on the server's clock.
public struct RoomCallback: Sendable, Hashable {
    /// What happened.
    public enum Event: String, Sendable, Hashable, CaseIterable {
        /// The room's first member arrived: the room (this life of it, ``RoomCallback/roomSession``) began.
        case roomCreated = "create"
        /// A new session of ``RoomCallback/userID`` became a member.
        case joined = "join"
        /// The session of ``RoomCallback/userID`` left, for ``RoomCallback/reason``.
        case left = "leave"
        /// The room's last member left: this life of the room ended.
        case roomDestroyed = "destroy"
        /// The member stayed and switched role: to the audience (hidden from its peers, ``RoomCallback/audience``) or
        /// back.
        case roleChanged = "role"
    }

    /// Why a member left, as the room saw it.
    public enum LeaveReason: String, Sendable, Hashable, CaseIterable {
        /// It logged out.
        case quit
        /// The server stopped hearing from it.
        case timeout
        /// The business server removed it.
        case kicked
        /// The same user logged in again (another device, or a reconnection that came as a new session).
        case replaced
        /// Its token expired and was not renewed.
        case token

        /// The reason of a departure the room reported (`DepartureReason`, `KickReason`).
        public init(_ departure: DepartureReason, kicked: KickReason?) {
            switch (departure, kicked) {
            case (.quit, _): self = .quit
            case (_, .admin): self = .kicked
            case (_, .duplicateLogin): self = .replaced
            case (_, .tokenExpired): self = .token
            case (.dropped, nil), (.becomeAudience, nil): self = .timeout
            }
        }
    }

    /// The server's number of the callback: emission order, from 1.
    public var id: UInt64
    public var event: Event
    public var roomID: String
    /// This life of the room (ZEGO's `room_seq`, LiveKit's room SID).
    public var roomSession: String
    /// The member, for ``Event/joined``, ``Event/left`` and ``Event/roleChanged``; empty for the room's own events.
    public var userID: String
    /// The member's session.
    public var session: String
    /// Why it left, for ``Event/left``.
    public var reason: LeaveReason?
    /// When it happened.
    public var atMs: Int64
    /// When the member joined (its ``Event/joined`` time), for ``Event/joined`` and ``Event/left``.
    public var joinedAtMs: Int64
    /// The member's events so far, this one included: increases with every event of the same user (Agora's
    /// `clientSeq`).
    public var userSequence: UInt64
    /// The room's membership changes so far, this one included (ZEGO's `user_update_seq`).
    public var roomSequence: UInt64
    /// Members of the room just after the change.
    public var members: Int
    /// Whether the member is in the audience (hidden from its peers; an Agora audience member): as it joined, as it
    /// left, or what it switched to.
    public var audience: Bool
    /// The user's changes in this room so far, this one included: what names the callback across runs (a session's
    /// ID is drawn at random each run; this is not).
    public var ordinal: UInt32

    public init(
        id: UInt64,
        event: Event,
        roomID: String,
        roomSession: String,
        userID: String = "",
        session: String = "",
        reason: LeaveReason? = nil,
        atMs: Int64,
        joinedAtMs: Int64 = 0,
        userSequence: UInt64 = 0,
        roomSequence: UInt64 = 0,
        members: Int,
        ordinal: UInt32 = 0,
        audience: Bool = false
    ) {
        self.id = id
        self.event = event
        self.roomID = roomID
        self.roomSession = roomSession
        self.userID = userID
        self.session = session
        self.reason = reason
        self.atMs = atMs
        self.joinedAtMs = joinedAtMs
        self.userSequence = userSequence
        self.roomSequence = roomSequence
        self.members = members
        self.ordinal = ordinal
        self.audience = audience
    }

    /// What names the callback across runs whatever order the rooms' threads emit in: its event, room, user and
    /// the user's change number there (the room's for the room's own events) — what the seeded disorder draws from.
    var identity: String {
        "\(event.rawValue)\u{1F}\(roomID)\u{1F}\(userID)\u{1F}\(ordinal)"
    }
}
