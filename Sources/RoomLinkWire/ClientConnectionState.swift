public import RoomLinkRuntime

/// The rules of one client's connection to its server, as a value: which rooms ride on it, whether it is up, whether
/// the server's data has stopped, and whether a room's silence condemns it. The socket code (`RoomLinkNetwork`'s
/// client connection) tells it what happened and when, and carries out what it answers; tests drive it alone, in
/// virtual time, with no socket (as `RoomClientState` is the client's and `ServerRoomState` the room's).
public struct ClientConnectionState: Sendable {
    /// Where the connection stands.
    public enum Phase: Sendable, Hashable {
        /// Dialed, not yet connected.
        case connecting
        /// Connected.
        case open
        /// Closed, by either side, or never opened.
        case closed
    }

    /// What to do about a room's silence (``abandon(room:at:pathCarries:)``).
    public enum Verdict: Sendable, Hashable {
        /// Keep the connection: something arrived on it since the room's last message left, so it is alive and
        /// only the room's path is silent.
        case keep
        /// Close it; `others`, the other rooms riding on it, are told it closed under them. `held`: the client's
        /// path carries nothing now (a black hole), so the close is lost on it too — the socket stays open, deaf
        /// and mute, until the path carries again, as a FIN sent into a real black hole reaches the server only
        /// with TCP's retransmission after it lifts.
        case close(others: [String], held: Bool)
    }

    public private(set) var phase = Phase.connecting
    /// The rooms whose channels ride on the connection.
    public private(set) var rooms: Set<String> = []
    /// How often the server's data flows, once its hello said (a dialect whose media flows continuously).
    public private(set) var mediaInterval: Duration?
    /// When a frame last reached the client, and when each room's last message left.
    private var lastReceived: RuntimeInstant?
    private var lastSent: [String: RuntimeInstant] = [:]
    /// Since when the server's data has not arrived, once ``watch(at:)`` said so.
    private var silentSince: RuntimeInstant?

    /// A connection being dialed.
    public init() {}

    /// `room`'s channel rides on the connection.
    public mutating func add(room: String) {
        rooms.insert(room)
    }

    /// The connection came up.
    public mutating func connected() {
        if phase == .connecting { phase = .open }
    }

    /// The server's hello arrived: it says how often its data flows.
    public mutating func hello(mediaInterval: Duration?) {
        self.mediaInterval = mediaInterval.flatMap { $0 > .zero ? $0 : nil }
    }

    /// A message of `room` left at `now` (into a black hole, perhaps: as far as the client can tell, it left).
    public mutating func sent(room: String, at now: RuntimeInstant) {
        lastSent[room] = now
    }

    /// A frame reached the client at `now`. Returns the rooms to tell the data flows again, when it had stopped.
    public mutating func received(at now: RuntimeInstant) -> [String] {
        lastReceived = now
        guard silentSince != nil else { return [] }
        silentSince = nil
        return rooms.sorted()
    }

    /// The periodic watch of the server's data, at `now`: a server whose data flows sends something every media
    /// interval to a connection with a logged-in room (a keep-alive at least every one and a half), so three
    /// intervals of nothing is a silent path. Returns since when it has been silent and the rooms to tell, once per
    /// silence.
    public mutating func watch(at now: RuntimeInstant) -> (since: RuntimeInstant, rooms: [String])? {
        guard phase == .open, silentSince == nil, let interval = mediaInterval, let last = lastReceived,
            last.duration(to: now) >= interval * 3
        else { return nil }
        silentSince = last
        return (last, rooms.sorted())
    }

    /// The client gave up on the connection for `room` (an unanswered login or heartbeat, or stopped data) at `now`:
    /// keep it when a frame arrived since the room's last message left, and close it otherwise — held until the
    /// path carries again when it carries nothing now (`pathCarries` false).
    public mutating func abandon(room: String, at now: RuntimeInstant, pathCarries: Bool = true) -> Verdict {
        guard phase != .closed else { return .keep }
        if let received = lastReceived, let sent = lastSent[room], received > sent { return .keep }
        phase = .closed
        return .close(others: rooms.subtracting([room]).sorted(), held: !pathCarries)
    }

    /// The connection closed (or could not be opened).
    public mutating func close() {
        phase = .closed
    }
}
