/// What happened to one room's connection, in the engine's own words. A dialect turns each transition into its
/// vendor's callbacks (``RoomDialect/report(_:room:into:)``); the engine never speaks a vendor's vocabulary.
public enum RoomTransition: Sendable, Equatable {
    /// A join was accepted locally: its first attempt is on its way.
    case joining
    /// The first join succeeded. `roomSessionID` identifies the room's current life on the server.
    case joined(roomSessionID: String)
    /// The connection of a joined room was lost: a reconnection episode begins.
    case lost(LossCause)
    /// The connection is still lost a dialect-defined time after ``lost(_:)`` (Agora's `lost`, 10 s after
    /// `interrupted`); the client keeps trying.
    case stillLost
    /// A reconnection episode starts attempts in `mode` — at its start, and when it switches to a full
    /// reconnection (dialects with reconnect modes only).
    case reconnectMode(ReconnectMode)
    /// A full reconnection begins: the client forgets the session and with it every remote peer it knew.
    case peersCleared([String])
    /// The app gave a new token while the client was reconnecting; the next attempt uses it.
    case tokenRenewedWhileReconnecting
    /// The reconnection succeeded (`mode` is `.quick` for dialects without modes).
    case rejoined(ReconnectMode)
    /// Peers joined or left (for a departure, why).
    case peersChanged(PresenceChange, users: [String], reason: DepartureReason?)
    /// The episode ran out of time or attempts; the room is given up.
    case gaveUp(from: RoomConnection.Phase)
    /// The server refused the login or reconnection; the room ends.
    case rejected(LoginRejection, from: RoomConnection.Phase)
    /// The server removed the session; the room ends.
    case kicked(KickReason, from: RoomConnection.Phase)
    /// The app left the room.
    case left(from: RoomConnection.Phase)
    /// The session's token expires in `remaining` unless renewed.
    case tokenWillExpire(remaining: Duration)
}

/// How a client learned that its connection was lost.
public enum LossCause: String, Sendable, Hashable, CaseIterable {
    /// The connection closed (the operating system reported the network down).
    case closed
    /// Nothing arrived from the server for too long (a blackhole).
    case silent
    /// The server no longer knows the session (it timed the member out while the client was still connected).
    case sessionGone
    /// The device's network changed (a new IP address): the client reconnects over the new one.
    case addressChanged
    /// The app configured a proxy: the client reconnects through it.
    case proxyChanged
    /// The server asked the client to reconnect.
    case serverRequest
}

/// How a reconnection attempt reconnects (LiveKit's `ReconnectMode`).
public enum ReconnectMode: String, Sendable, Hashable, CaseIterable {
    /// Resume the same session: the server keeps the member and peers see nothing.
    case quick
    /// A new session: the server replaces the member, so peers see it leave and join again.
    case full
}
