/// What a server needs of a transport: clients' messages routed to its rooms, and word when a client's connection
/// closes.
///
/// A ``RoomServer`` hands the transport its rooms (``serve(_:)``). The transport then calls each room, on the room's
/// loop, with what its clients send (``RoomEndpoint/deliver(_:on:)``) and when a connection carrying one of its
/// sessions closes (``RoomEndpoint/connectionClosed(userID:session:on:)``), and the room answers on the channel the
/// message came on (``ClientChannel/send(_:from:)``): the transport's own object, so no reply is looked up.
public protocol ServerTransport: AnyObject, Sendable {
    /// Routes what clients send to the rooms of `rooms` from now on. A transport may keep `rooms` alive (clients
    /// hold the transport, so a server nobody else names stays up while its clients run).
    func serve(_ rooms: any RoomDirectory)
}

/// One client's channel to a room, as the room's server sees it: the transport's handle for answering the client —
/// over a socket, the server's connection. The room keeps it with the member who logged in on it, and answers on it.
public protocol ClientChannel: AnyObject, Sendable {
    /// Sends `message` from `room` to the client at the other end (a room calls it on its loop). Messages on a
    /// channel whose connection is down are lost.
    func send(_ message: ServerMessage, from room: any RoomEndpoint)
    /// Where the room last found this channel's member in its table (−1: unknown): a hint that spares the room a
    /// lookup by user ID on every heartbeat, checked before it is trusted. A transport may keep none (−1, the
    /// default): the in-process network's channels are its clients, which keep the hint of their latest room.
    var memberHint: Int32 { get }
    /// Remembers where the room found this channel's member (see ``memberHint``). Called on the room's loop.
    func setMemberHint(_ slot: Int32)
}

extension ClientChannel {
    public var memberHint: Int32 { -1 }
    public func setMemberHint(_ slot: Int32) {}
}

/// The server side of one room, as a transport sees it.
public protocol RoomEndpoint: RoomChannel {
    var roomID: String { get }
    /// A stable hash of ``roomID`` (FNV-1a), computed once.
    var roomHash: UInt64 { get }
    /// The loop the room runs on; deliveries are made there.
    var loop: any RuntimeLoop { get }
    /// Handles `message`, which arrived on `channel`. Called on ``loop``'s thread.
    func deliver(_ message: ClientMessage, on channel: any ClientChannel)
    /// The connection `channel` closed while it carried `session` of `userID` (or, for a dialect whose media flows
    /// continuously, its data stopped): the member's heartbeat timeout runs from now, and it stays a member
    /// meanwhile. Raised by the transport, as a server's network stack notices a socket close. Called on ``loop``'s
    /// thread.
    ///
    /// Only the channel the member last logged in or resumed on counts: a connection the client gave up on can
    /// close long after a newer one took its member over (its close held in a black hole, and let go when the path
    /// carries again), and that late close leaves the member as it is.
    func connectionClosed(userID: String, session: SessionID, on channel: any ClientChannel)
    /// The data of `session` of `userID` flows again on `channel` after the transport had said it stopped (a
    /// dialect whose media flows continuously): the member is heard, if `channel` is still the one that carries it.
    /// A session the room no longer holds is told so on `channel`, as a heartbeat of it would be. Called on
    /// ``loop``'s thread.
    ///
    /// Unlike the client's own ``ClientMessage/connectionResumed(userID:session:)``, which moves the member to the
    /// channel it arrives on, this is the transport's observation of one connection: data a client wrote before it
    /// gave that connection up, delivered late, must not take its member back from a newer connection.
    func dataResumed(userID: String, session: SessionID, on channel: any ClientChannel)
    /// Calls `body` with the channels of the room's current members, in the order they joined, on ``loop``'s thread
    /// as soon as it runs (a network that cuts the room off tells their clients).
    func withMemberChannels(_ body: @escaping @Sendable ([any ClientChannel]) -> Void)
}

/// Finds, or opens, the server side of a room by its ID.
public protocol RoomDirectory: AnyObject, Sendable {
    /// The room called `roomID`, created on first use.
    func room(_ roomID: String) -> any RoomEndpoint
}
