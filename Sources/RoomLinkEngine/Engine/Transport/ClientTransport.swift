/// What a client needs of a transport: a channel to the server of each of its rooms, to send on and to close.
///
/// A transport of your own implements four requirements: ``open(toRoom:for:)``, ``send(_:on:from:)``,
/// ``closed(_:session:from:)`` and ``abandon(_:from:)``; ``drop(_:)`` and ``sessionSalt`` have defaults. <doc:Embedding>
/// shows a complete one, over a socket, against `roomlink serve`.
///
/// A client opens a room's channel at its first login attempt to the room, sends every message for the room on it,
/// and hears back through its ``ClientEndpoint``: the server's messages (``ClientEndpoint/deliver(_:from:)``) and
/// its own link's changes (``ClientEndpoint/linkChanged(to:)``). What a channel is belongs to the transport: the
/// in-process simulated network (`SimulatedNetwork`) pairs the client with the room's actor; a socket transport multiplexes a client's
/// rooms over one connection, as an SDK does. The client never learns which server object answers it.
public protocol ClientTransport: AnyObject, Sendable {
    /// Opens `client`'s channel to the server of `roomID`, or returns `nil` when the transport cannot reach one (the
    /// client then treats its attempts as refused, and tries to open it again at the next).
    func open(toRoom roomID: String, for client: any ClientEndpoint) -> (any RoomChannel)?

    /// Sends `message` from `client` on `channel` (one the transport opened for it).
    ///
    /// - Returns: ``SendOutcome/refused`` when the client's connection is down (the client knows at once);
    ///   otherwise ``SendOutcome/sent``, whether or not the message arrives.
    func send(_ message: ClientMessage, on channel: any RoomChannel, from client: any ClientEndpoint) -> SendOutcome

    /// The connection carrying `session` of `client` on `channel` closed under the client (its link went down), or — for a
    /// dialect whose media flows continuously — its data stopped. The server's side of the transport raises it to
    /// the room (``RoomEndpoint/connectionClosed(userID:session:on:)``) as a server hears a socket close: whatever the
    /// link's state, since no message has to cross it.
    func closed(_ channel: any RoomChannel, session: SessionID, from client: any ClientEndpoint)

    /// `client` gave up on the connection carrying `channel`: a login or heartbeat for the channel's room went
    /// unanswered for its timeout, or its data stopped. A socket transport closes that connection — unless something
    /// arrived on it since the room's last message left, which shows the connection alive and only the room's path
    /// silent — so that the client's next attempt dials a new one, as an SDK's does, and the server hears the old
    /// one close.
    func abandon(_ channel: any RoomChannel, from client: any ClientEndpoint)

    /// Closes `client`'s connections without telling it: its link went down, which it hears of from whoever took the
    /// link down (``NetworkFaults``). A server hears them close; the client's next message opens a new one. The
    /// default does nothing: an in-process channel has no connection to close.
    func drop(_ client: any ClientEndpoint)

    /// Mixed into every session ID its clients make (``RoomClientState/init(clientID:userID:seed:sessionSalt:)``):
    /// 0 in one process, where a run is its seed's alone; a transport to a server that outlives the run picks one,
    /// so that a second run of one scenario against it does not present the first run's sessions — which the server
    /// may still hold, or remember removed.
    var sessionSalt: UInt64 { get }
}

extension ClientTransport {
    public func drop(_ client: any ClientEndpoint) {}
    public var sessionSalt: UInt64 { 0 }
}

/// A client's channel to the server of one room, as its ``ClientTransport`` opened it: opaque to the client, which
/// only hands it back to the transport. (In one process the channel can be the room itself, as the simulated
/// network's is: ``RoomEndpoint`` refines this protocol.)
public protocol RoomChannel: AnyObject, Sendable {}

/// Whether a transport took a message.
public enum SendOutcome: Sendable, Hashable {
    /// The message left; it may still be lost on the way.
    case sent
    /// The sender's connection is down.
    case refused
}

/// A client as a transport sees it: where to deliver server messages and link changes. It is not the server's
/// channel to the client — over a socket that is the server's connection — except in one process, where a client can
/// be its own channel as the server sees it, as the simulated network's clients are. The engine's ``RoomClient``
/// implements it; a transport calls it.
public protocol ClientEndpoint: AnyObject, Sendable {
    /// The client's network identity.
    var endpointID: String { get }
    /// A stable hash of ``endpointID`` (FNV-1a), computed once: a simulated network keys message fates on it.
    var endpointHash: UInt64 { get }
    /// The identity the client logs in with: the user its connections carry.
    var userID: String { get }
    /// The loop the client runs on; deliveries are made there.
    var loop: any RuntimeLoop { get }
    /// Handles a message from the server of `room`. Called on ``loop``'s thread.
    func deliver(_ message: ServerMessage, from room: String)
    /// Handles a change of the client's own link (the operating system tells the SDK at once, except that a
    /// blackhole looks like an up link). Called on ``loop``'s thread.
    func linkChanged(to state: LinkState)
    /// Handles what the transport learned about the connection carrying the client's channel to `room`: it came up,
    /// closed under the client, or could not be opened. Called on ``loop``'s thread.
    func connectionChanged(_ event: ConnectionEvent, room: String)
}

/// What a client's transport learns about the connection carrying one room's channel. A socket transport raises
/// them as its socket connects, reaches its end or is reset, or fails to connect; the simulated network, whose
/// channels open at once and whose failures are link changes (``ClientEndpoint/linkChanged(to:)``), raises none.
public enum ConnectionEvent: Sendable, Hashable {
    /// The connection is up.
    case connected
    /// The connection closed under the client, for `cause`: the room's connection is lost (a joined room reconnects
    /// at once; an attempt in flight has failed), and the next attempt opens a new channel.
    case closed(ConnectionCloseCause)
    /// The connection could not be opened (refused, unreachable, timed out): the attempt waiting on it has failed,
    /// and the next one opens a new channel.
    case refused
    /// Nothing has arrived on the connection since `since`, longer than the server's data interval allows (a
    /// black hole the socket cannot see): a dialect that watches its data (Agora) declares the room lost
    /// its detection time after `since`, unless the data comes back first. Others ignore it; their heartbeats
    /// notice.
    case dataStopped(since: RuntimeInstant)
    /// Data arrives on the connection again after ``dataStopped(since:)``.
    case dataResumed
}

/// Why a connection closed under its client.
public enum ConnectionCloseCause: String, Sendable, Hashable, CaseIterable {
    /// The server closed it in order (end of stream).
    case endOfStream
    /// It was reset (RST), or a read or write failed.
    case reset
    /// The client gave up on it: another of its rooms went unanswered on it for that room's timeout
    /// (``ClientTransport/abandon(_:from:)``).
    case abandoned
    /// The server closed it for a protocol error: a frame it could not accept.
    case protocolError
    /// The server is shutting down.
    case serverShutdown
}

/// A client that notices when the path to one of its rooms is cut while its own link stays up (a room partition,
/// ``NetworkFaults/setPartitioned(_:room:)``): nothing tells the client, but the data it receives for the room stops
/// or resumes — which a dialect that watches its media (Agora) notices. A client that watches only its heartbeats
/// need not adopt it: silence reveals a partition.
public protocol RouteObserver: ClientEndpoint {
    /// The path to the server of `room` was cut (`reachable` false) or restored. Called on ``ClientEndpoint/loop``'s
    /// thread.
    func routeChanged(toRoom room: String, reachable: Bool)
}
