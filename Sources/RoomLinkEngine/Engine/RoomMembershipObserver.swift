/// A member of a room joining or leaving, as its server's room saw it: what a server's webhooks report.
public enum MembershipChange: Sendable, Hashable {
    /// A new session of `userID` became a member (not a reconnection of the same session); `audience` when it
    /// joined hidden from its peers (an Agora audience member).
    case joined(userID: String, session: SessionID, audience: Bool = false)
    /// The member stayed and became hidden from its peers (`audience`, an Agora broadcaster switching to audience)
    /// or visible again.
    case roleChanged(userID: String, session: SessionID, audience: Bool)
    /// The session of `userID` left: it logged out (`quit`), timed out or was replaced or removed (`dropped`; for a
    /// kick or a newer login of the same user, `kicked` says which).
    case left(userID: String, session: SessionID, reason: DepartureReason, kicked: KickReason?)
}

/// Hears every change of the membership of a server's rooms (``RoomServer/init(group:transport:timings:auth:tokens:policy:cluster:epoch:membershipObserver:expectedRoomSize:)``):
/// LiveKit's webhooks, for one. Called on the room's loop, in the room's order; it must not block.
public protocol RoomMembershipObserver: AnyObject, Sendable {
    /// `change` happened in `roomID`, whose current life is `roomSessionID`, at `now` (the room's clock).
    func membershipChanged(
        _ change: MembershipChange,
        inRoom roomID: String,
        roomSessionID: String,
        at now: RuntimeInstant
    )
}
