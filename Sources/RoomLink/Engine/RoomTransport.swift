/// Carries messages between clients and the servers of their rooms.
///
/// RoomLink's first transport is ``SimulatedNetwork`` (latency, jitter, loss and per-client outages); a real network
/// transport implements the same protocol. A transport delivers each message by calling the receiver's `deliver`
/// on the receiver's own loop, so that an actor pinned there handles it with no further hop.
public protocol RoomTransport: AnyObject, Sendable {
    /// The server of `roomID` as this transport reaches it, or `nil` when it cannot reach one (a client then
    /// treats its attempts as refused). A client resolves it once per login and sends to it.
    func room(_ roomID: String) -> (any RoomEndpoint)?

    /// Sends `message` from `client` to the server of `room`.
    ///
    /// - Returns: ``SendOutcome/refused`` when the client's connection is down (the client knows at once);
    ///   otherwise ``SendOutcome/sent``, whether or not the message arrives.
    func send(_ message: ClientMessage, from client: any ClientEndpoint, to room: any RoomEndpoint) -> SendOutcome

    /// Sends `message` from the server of `room` to `client`. Messages to a client whose connection is down are lost.
    func send(_ message: ServerMessage, from room: any RoomEndpoint, to client: any ClientEndpoint)

    /// Messages the transport has delivered, or will (both directions): a run's message count.
    var deliveredCount: Int { get }

    /// Routes what clients send to the rooms of `rooms` from now on: the server side of the transport, which a
    /// ``RoomServer`` calls when it is created with this transport. A transport may keep `rooms` alive (clients
    /// hold the transport, so a server nobody else names stays up while its clients run).
    func serve(_ rooms: any RoomDirectory)
}

/// The faults a transport can inject: what scenarios and load tests do to the path between clients and servers.
/// Only a transport that controls the path adopts it — ``SimulatedNetwork``, and a proxy in front of a real
/// server — and a scenario's outages and partitions need one.
public protocol NetworkFaults: AnyObject, Sendable {
    /// The link state of `client`.
    func link(of client: any ClientEndpoint) -> LinkState
    /// Sets the link of `client` and tells the client (``ClientEndpoint/linkChanged(to:)``) as soon as its loop
    /// runs. `down` refuses its messages, `blackhole` loses them silently, `up` restores them. Setting the state it
    /// already has does nothing.
    func setLink(_ state: LinkState, for client: any ClientEndpoint)
    /// Whether `roomID` is cut off from its clients.
    func isPartitioned(_ roomID: String) -> Bool
    /// Cuts `roomID` off from every client (`true`) or heals it (`false`): messages both ways are lost, and only
    /// silence reveals it. Setting the state the room already has does nothing.
    func setPartitioned(_ cutOff: Bool, room roomID: String)
}

/// Whether a transport took a message.
public enum SendOutcome: Sendable, Hashable {
    /// The message left; it may still be lost on the way.
    case sent
    /// The sender's connection is down.
    case refused
}

/// A client as a transport sees it: where to deliver server messages and link changes.
public protocol ClientEndpoint: AnyObject, Sendable {
    /// The client's network identity.
    var endpointID: String { get }
    /// A stable hash of ``endpointID`` (FNV-1a), computed once: a simulated network keys message fates on it.
    var endpointHash: UInt64 { get }
    /// The loop the client runs on; deliveries are made there.
    var loop: any RuntimeLoop { get }
    /// Handles a message from the server of `room`. Called on ``loop``'s thread.
    func deliver(_ message: ServerMessage, from room: String)
    /// Handles a change of the client's own link (the operating system tells the SDK at once, except that a
    /// blackhole looks like an up link). Called on ``loop``'s thread.
    func linkChanged(to state: LinkState)
    /// The path to the server of `room` was cut (`reachable` false) or restored, while the client's own link stayed
    /// up (a room partition): nothing tells the client, but the data it receives for the room stops or resumes.
    /// Called on ``loop``'s thread.
    func routeChanged(toRoom room: String, reachable: Bool)
}

extension ClientEndpoint {
    /// A client that watches only its heartbeats needs nothing: silence reveals a partition.
    public func routeChanged(toRoom room: String, reachable: Bool) {}
}

/// The server side of one room, as a transport sees it.
public protocol RoomEndpoint: AnyObject, Sendable {
    var roomID: String { get }
    /// A stable hash of ``roomID`` (FNV-1a), computed once.
    var roomHash: UInt64 { get }
    /// The loop the room runs on; deliveries are made there.
    var loop: any RuntimeLoop { get }
    /// Handles a message from `client`. Called on ``loop``'s thread.
    func deliver(_ message: ClientMessage, from client: any ClientEndpoint)
    /// The room was cut off from its clients (`reachable` false) or healed: it tells its members' clients through
    /// ``ClientEndpoint/routeChanged(toRoom:reachable:)``. Called on ``loop``'s thread.
    func routeChanged(reachable: Bool)
}

extension RoomEndpoint {
    /// A room that keeps no clients of its members tells nobody (their heartbeats will find the partition).
    public func routeChanged(reachable: Bool) {}
}

/// Finds, or opens, the server side of a room by its ID.
public protocol RoomDirectory: AnyObject, Sendable {
    /// The room called `roomID`, created on first use.
    func room(_ roomID: String) -> any RoomEndpoint
}
