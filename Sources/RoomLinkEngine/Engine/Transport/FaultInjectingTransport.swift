import RoomLinkRuntime
import Synchronization

/// Faults on the path between clients and their server, wrapped around any client transport: link changes
/// (down, black hole, up), rooms cut off, and latency with jitter — what a scenario's `network` and timeline do to a
/// run against a real server. The transport it wraps carries no fault code of its own: wrap a socket transport, or
/// your own, and the scenario's faults apply to it.
///
/// ```swift
/// let faulty = FaultInjectingTransport(wrapping: tcp, latency: .milliseconds(40), jitter: .milliseconds(10))
/// let alice = ZegoClient(id: "alice", loop: loop, environment: .init(transport: faulty))
/// faulty.setLink(.blackhole, for: alice)  // her frames are lost both ways; nobody is told
/// ```
///
/// The wrapped transport sees, instead of each client, a stand-in (a ``ClientPath``) that delivers to the client
/// what crosses the path, after the path's delay. What each fault does:
///
/// - `down`: the client hears at once (``ClientEndpoint/linkChanged(to:)``), its connections are dropped
///   (``ClientTransport/drop(_:)``, so a server hears them close), and its sends and opens are refused until `up`.
/// - `blackhole`, and a room cut off: frames are lost both ways and nobody is told. A transport that applies its
///   clients' paths at the socket (``PathAwareTransport``) is handed every message and asks the path per frame, so that
///   its own view — what left, what arrived, whether the server's data stopped — is the one a real silent path gives
///   it; for any other transport the messages are dropped here.
/// - Latency and jitter: each message waits, each way, the latency plus a draw of the jitter (seeded per client), and
///   messages keep their order; a message still on its way when the link goes down or black is lost with it.
public final class FaultInjectingTransport: ClientTransport, NetworkFaults, Sendable {
    /// The transport the clients' messages go through.
    public let base: any ClientTransport

    public var sessionSalt: UInt64 { base.sessionSalt }
    /// Added to every message each way.
    public let latency: Duration
    /// Up to this much more, drawn per message (messages keep their order).
    public let jitter: Duration
    /// Seeds the jitter (each client draws from its own stream of it).
    public let seed: UInt64
    private let pathAware: Bool
    private let paths = PathStates()
    private let stands = LockedBox<[ObjectIdentifier: ClientStandIn]>([:])
    private let carried = CarriedCount()

    /// Wraps `base`; with no latency and no fault, every message goes straight through.
    public init(
        wrapping base: any ClientTransport,
        latency: Duration = .zero,
        jitter: Duration = .zero,
        seed: UInt64 = 0
    ) {
        self.base = base
        self.latency = max(latency, .zero)
        self.jitter = max(jitter, .zero)
        self.seed = seed
        self.pathAware = base is any PathAwareTransport
    }

    // MARK: - ClientTransport

    public func open(toRoom roomID: String, for client: any ClientEndpoint) -> (any RoomChannel)? {
        guard paths.link(of: ObjectIdentifier(client)) != .down else { return nil }
        let standIn = standIn(for: client)
        standIn.rooms.insert(roomID)
        guard let inner = base.open(toRoom: roomID, for: standIn) else { return nil }
        return Channel(room: roomID, inner: inner, standIn: standIn)
    }

    public func send(
        _ message: ClientMessage,
        on channel: any RoomChannel,
        from client: any ClientEndpoint
    )
        -> SendOutcome
    {
        guard let channel = channel as? Channel else { return .refused }
        let standIn = channel.standIn
        guard paths.link(of: standIn.key) != .down else { return .refused }
        let crosses = standIn.carries(room: channel.room)
        // Lost on the path: as far as the client can tell, it left. A path-aware transport is handed it anyway, and
        // drops it at its socket after noting that it left.
        guard crosses || pathAware else { return .sent }
        if crosses { carried.add(1) }
        guard let due = standIn.outgoingDue() else { return base.send(message, on: channel.inner, from: standIn) }
        _ = try? standIn.loop.schedule(at: due) { [base, paths] in
            // A message still on its way when the link went down is lost with it.
            guard paths.link(of: standIn.key) != .down else { return }
            _ = base.send(message, on: channel.inner, from: standIn)
        }
        return .sent
    }

    public func closed(_ channel: any RoomChannel, session: SessionID, from client: any ClientEndpoint) {
        guard let channel = channel as? Channel else { return }
        base.closed(channel.inner, session: session, from: channel.standIn)
    }

    public func abandon(_ channel: any RoomChannel, from client: any ClientEndpoint) {
        guard let channel = channel as? Channel else { return }
        base.abandon(channel.inner, from: channel.standIn)
    }

    public func drop(_ client: any ClientEndpoint) {
        if let standIn = stands.withLock({ $0[ObjectIdentifier(client)] }) { base.drop(standIn) }
    }

    /// One room's channel: the wrapped transport's, and the client's stand-in it was opened for.
    final class Channel: RoomChannel {
        let room: String
        let inner: any RoomChannel
        let standIn: ClientStandIn

        init(room: String, inner: any RoomChannel, standIn: ClientStandIn) {
            self.room = room
            self.inner = inner
            self.standIn = standIn
        }
    }

    // MARK: - NetworkFaults

    public func link(of client: any ClientEndpoint) -> LinkState {
        paths.link(of: ObjectIdentifier(client))
    }

    /// Sets the link of `client` and tells it, on its loop; `down` also drops its connections there.
    public func setLink(_ state: LinkState, for client: any ClientEndpoint) {
        guard paths.setLink(state, for: ObjectIdentifier(client)) else { return }
        client.loop.runSoon { [self] in
            if state == .down { drop(client) }
            client.linkChanged(to: state)
        }
    }

    public func isPartitioned(_ roomID: String) -> Bool {
        paths.isPartitioned(roomID)
    }

    /// Cuts `roomID` off from its clients (`true`) or heals it: its messages are lost both ways, and the clients that
    /// opened a channel to it and watch their data (``RouteObserver``) see it stop or resume.
    public func setPartitioned(_ cutOff: Bool, room roomID: String) {
        guard paths.setPartitioned(cutOff, room: roomID) else { return }
        for standIn in stands.withLock({ Array($0.values) }) {
            standIn.loop.runSoon {
                guard standIn.rooms.contains(roomID), let client = standIn.client as? any RouteObserver else { return }
                client.routeChanged(toRoom: roomID, reachable: !cutOff)
            }
        }
    }

    /// Messages that crossed the path so far, both ways.
    public var deliveredCount: Int { carried.value }

    // MARK: - Stand-ins

    private func standIn(for client: any ClientEndpoint) -> ClientStandIn {
        let key = ObjectIdentifier(client)
        return stands.withLock { stands in
            if let standIn = stands[key] { return standIn }
            let standIn = ClientStandIn(client: client, path: path, seed: seed)
            stands[key] = standIn
            return standIn
        }
    }

    /// What every stand-in shares: the paths' states, the delays, the count of what crossed.
    private var path: ClientStandIn.Path { .init(states: paths, latency: latency, jitter: jitter, carried: carried) }
}

/// A client on the far side of a path: what a transport wrapped by ``FaultInjectingTransport`` is handed instead of
/// the client. A transport that applies paths at the socket (``PathAwareTransport``) asks it, per frame, whether the
/// frame crosses; a frame that does not was lost on the wire — the socket neither writes it nor counts it as read.
public protocol ClientPath: ClientEndpoint {
    /// Whether frames of `room` — or, for `nil`, frames that belong to no room (a hello's answer, a keep-alive) —
    /// cross the path now.
    func carries(room: String?) -> Bool
}

/// A transport that applies its clients' paths at the socket: handed a ``ClientPath`` as the client, it asks it per
/// frame and drops what does not cross, both ways (a socket transport adopts it; see ``FaultInjectingTransport``).
public protocol PathAwareTransport: ClientTransport {}

/// The stand-in for one client: delivers to the client what crosses the path, after the path's delay, in order.
final class ClientStandIn: ClientPath, @unchecked Sendable {
    // Safe: `rooms`, `random` and the due instants are touched on `loop`'s thread only — the client calls its
    // transport from its actor, which runs there, the wrapped transport delivers there, and the partition's walk hops
    // there. The `let`s are immutable and Sendable.

    let key: ObjectIdentifier
    let endpointID: String
    let endpointHash: UInt64
    let userID: String
    let loop: any RuntimeLoop
    weak var client: (any ClientEndpoint)?
    private let path: Path
    /// The rooms the client opened a channel to.
    var rooms: Set<String> = []
    private var random: SeededRandom
    /// With latency: when the last delayed message each way is due, so that messages keep their order.
    private var lastOutgoingDue = RuntimeInstant.zero
    private var lastIncomingDue = RuntimeInstant.zero

    /// What the stand-ins of one fault injector share (not the injector itself: a stand-in outlives no one it points to).
    struct Path: Sendable {
        let states: PathStates
        let latency: Duration
        let jitter: Duration
        let carried: CarriedCount
    }

    init(client: any ClientEndpoint, path: Path, seed: UInt64) {
        key = ObjectIdentifier(client)
        endpointID = client.endpointID
        endpointHash = client.endpointHash
        userID = client.userID
        loop = client.loop
        self.client = client
        self.path = path
        random = SeededRandom(seed: seed, stream: client.endpointHash)
    }

    func carries(room: String?) -> Bool {
        path.states.link(of: key) == .up && !(room.map(path.states.isPartitioned) ?? false)
    }

    /// The delay for one message: the latency plus a draw of the jitter.
    private func delay() -> Duration {
        guard path.jitter > .zero else { return path.latency }
        let jitter = path.jitter.components
        let nanoseconds = jitter.seconds * 1_000_000_000 + jitter.attoseconds / 1_000_000_000
        return path.latency + .nanoseconds(Int64.random(in: 0...max(0, nanoseconds), using: &random))
    }

    /// When an outgoing message is due, or `nil` for at once (no latency).
    func outgoingDue() -> RuntimeInstant? {
        let delay = delay()
        guard delay > .zero else { return nil }
        lastOutgoingDue = max(loop.now.advanced(by: delay), lastOutgoingDue)
        return lastOutgoingDue
    }

    func deliver(_ message: ServerMessage, from room: String) {
        guard carries(room: room) else { return }
        path.carried.add(1)
        let delay = delay()
        guard delay > .zero else {
            client?.deliver(message, from: room)
            return
        }
        lastIncomingDue = max(loop.now.advanced(by: delay), lastIncomingDue)
        _ = try? loop.schedule(at: lastIncomingDue) { [self] in
            // A message still on its way when the link went down or black is lost with it.
            guard carries(room: room) else { return }
            client?.deliver(message, from: room)
        }
    }

    /// The path's own changes reach the client from the fault injector; the wrapped transport has none to tell.
    func linkChanged(to state: LinkState) {}

    func connectionChanged(_ event: ConnectionEvent, room: String) {
        // Behind the messages still on their way: the client hears of the connection in the order the socket did.
        guard lastIncomingDue > loop.now else {
            client?.connectionChanged(event, room: room)
            return
        }
        _ = try? loop.schedule(at: lastIncomingDue) { [self] in client?.connectionChanged(event, room: room) }
    }
}

/// A count any thread may add to.
final class CarriedCount: Sendable {
    private let atomic = Atomic<Int>(0)
    var value: Int { atomic.load(ordering: .relaxed) }
    func add(_ amount: Int) { atomic.add(amount, ordering: .relaxed) }
}
