public import RoomLinkEngine
@_spi(RoomLinkInternals) public import RoomLinkRuntime
import Synchronization

/// RoomLink's simulated transport: every message crosses a `NetworkModel` (seeded latency, jitter and loss) and a
/// link state per client, and is delivered as a timer on the receiver's loop.
///
/// Change a client's link with ``setLink(_:for:)``: `down` refuses its messages and tells it at once, `blackhole`
/// loses them silently (only missed heartbeats reveal it), `up` restores it and tells it. Cut a room off with
/// ``setPartitioned(_:room:)``: every message between the room's server and its clients is lost until it heals, and
/// only silence reveals it. Timers, not threads, carry the latency, so the same network runs in virtual and in real
/// time.
///
/// A message's fate is drawn from the seed, its two endpoints, its direction and its send time, with no state per
/// client: the same scenario and seed give the same fates in virtual time. Safe to use from any loop: a client's link
/// state is kept in the client (an atomic byte of every `RoomClient`).
///
/// It carries the engine's own clients and rooms (`RoomClient`, `ServerRoom`), reaching them through the seam the
/// engine defines for a network in its process; a client of another kind is refused.
///
/// Given the loops it serves (``init(conditions:seed:batchingOn:)``), a network with no jitter carries the messages
/// between a client and a room on the same loop in one FIFO per loop instead of a timer each: every such message
/// takes the same time, so they arrive in the order sent. On the real clock that is a `DelayLine` (one FIFO and one
/// timer carry them all, with no allocation per message); in a simulation, a `SimulationLane`, whose messages
/// arrive in exactly the order their timers would have — the same event log, without a timer each.
public final class SimulatedNetwork: ClientTransport, ServerTransport, NetworkFaults, InProcessTransport {
    /// What carries the messages, both ways; the server's rooms answer through it (``Carrier``).
    let carrier: Carrier
    private let directory = LockedBox<(any RoomDirectory)?>(nil)

    /// Creates a network with `conditions`, drawing every message's fate from `seed`.
    ///
    /// With `loops` and no jitter, messages between a client and a room that share one of those loops travel in that
    /// loop's FIFO (sent on the loop's thread; others take a timer each). Same arrival times. On a real loop (a
    /// `DelayLine`) the order of arrivals due at one instant may differ from timers' — that order is the clock's
    /// anyway; on a simulation (a `SimulationLane`, when the latency is at least its minimum) it is the timers'
    /// exactly, so a virtual-time run replays the same log either way.
    public init(conditions: NetworkConditions = .init(), seed: UInt64 = 0, batchingOn loops: [any RuntimeLoop] = []) {
        carrier = Carrier(conditions: conditions, seed: seed, batchingOn: loops)
    }

    /// The conditions every message meets.
    public var conditions: NetworkConditions { carrier.model.conditions }

    /// Messages sent into the network that it delivers (or will), both directions.
    public var deliveredCount: Int { carrier.delivered.total }

    /// Connects the network to the servers it carries messages to. A `RoomServer` does this when it is created
    /// with this network. The network keeps the server alive (clients hold the network, so a server nobody else
    /// names stays up while its clients run); the server holds the network weakly, so there is no cycle.
    public func serve(_ rooms: any RoomDirectory) {
        directory.withLock { $0 = rooms }
    }

    /// The link state of `client`.
    public func link(of client: any ClientEndpoint) -> LinkState {
        guard let client = client as? any InProcessClient else {
            return carrier.paths.link(of: ObjectIdentifier(client))
        }
        return carrier.paths.link(of: client)
    }

    /// Sets the link of `client` and tells the client (at once when called on its loop, otherwise as soon as its
    /// loop runs). Setting the state it already has does nothing.
    public func setLink(_ state: LinkState, for client: any ClientEndpoint) {
        let changed =
            if let client = client as? any InProcessClient {
                carrier.paths.setLink(state, for: client)
            } else {
                carrier.paths.setLink(state, for: ObjectIdentifier(client))
            }
        guard changed else { return }
        // Directly on the client's loop, without the closure `runSoon` would allocate: a storm takes millions of
        // links at one instant, from the simulation's own thread.
        let loop = client.loop
        if loop.isInServiceThread {
            client.linkChanged(to: state)
        } else {
            loop.runSoon { client.linkChanged(to: state) }
        }
    }

    /// Whether `roomID` is cut off from its clients.
    public func isPartitioned(_ roomID: String) -> Bool {
        carrier.paths.isPartitioned(roomID)
    }

    /// Cuts `roomID` off from every client (`true`) or heals it (`false`): while cut off, every message between the
    /// room's server and a client is lost in both directions, and new logins to it go unanswered. Neither side is
    /// told — a partition looks like silence — except that the room's current members see their data for the room
    /// stop or resume (`RouteObserver.routeChanged(toRoom:reachable:)`), which dialects that watch their media
    /// (Agora) notice after their detection time. Setting the state the room already has does nothing.
    public func setPartitioned(_ cutOff: Bool, room roomID: String) {
        guard carrier.paths.setPartitioned(cutOff, room: roomID), let room = directory.withLock({ $0 })?.room(roomID)
        else {
            return
        }
        // The members' data stops or resumes; each client's own loop hears of it.
        room.withMemberChannels { channels in
            for channel in channels {
                guard let client = channel as? any RouteObserver else { continue }
                client.loop.runSoon { client.routeChanged(toRoom: roomID, reachable: !cutOff) }
            }
        }
    }

    /// Opens `client`'s channel to the room `roomID` of the attached server; `nil` when no server is attached (or it
    /// is gone), as if the network had no route to it. In one process a channel needs no object of its own: the
    /// channel to a room is the room, and the room's channel to a client is the client (each side holds only the
    /// other's channel protocol), so a message touches nothing but its two ends.
    public func open(toRoom roomID: String, for client: any ClientEndpoint) -> (any RoomChannel)? {
        directory.withLock { $0 }?.room(roomID)
    }

    /// Sends `message` from `client`, which must be one of the engine's clients (a `RoomClient`, whose own sends come
    /// through the engine's in-process seam with no cast); any other client's messages are refused, as are those on a
    /// channel this network did not open.
    public func send(
        _ message: ClientMessage,
        on channel: any RoomChannel,
        from client: any ClientEndpoint
    )
        -> SendOutcome
    {
        guard let client = client as? any InProcessClient else { return .refused }
        return carrier.send(message, on: channel, from: client)
    }

    public func closed(_ channel: any RoomChannel, session: SessionID, from client: any ClientEndpoint) {
        guard let client = client as? any InProcessClient else { return }
        carrier.closed(channel, session: session, from: client)
    }

    /// An in-process channel gives nothing up: a client's attempts to its room travel the same network.
    public func abandon(_ channel: any RoomChannel, from client: any ClientEndpoint) {}

    package func send(
        _ message: ClientMessage,
        on channel: any RoomChannel,
        from client: any InProcessClient
    )
        -> SendOutcome
    {
        carrier.send(message, on: channel, from: client)
    }

    package func closed(_ channel: any RoomChannel, session: SessionID, from client: any InProcessClient) {
        carrier.closed(channel, session: session, from: client)
    }

    /// A room's answer to a client that is its own channel travels this network.
    package func carry(_ message: ServerMessage, from room: any RoomEndpoint, to client: any InProcessClient) {
        carrier.send(message, to: client, from: room)
    }
}

extension SimulatedNetwork {
    /// The part of a network that carries messages, both ways: the model, the links and partitions, the lanes.
    ///
    /// The network keeps its server alive (``serve(_:)``); the carrier keeps no server.
    final class Carrier: Sendable {
        let model: NetworkModel
        /// Links not up and rooms cut off (read without a lock while there are none).
        let paths = PathStates()
        let delivered = StripedCounter()
        /// One line per real loop given at creation (none with jitter): same-loop messages in flight.
        private let lines: [DelayLine<InFlight>]
        /// The lane of the simulation given at creation, if any (none with jitter): messages in flight there. Every
        /// message then takes the network's latency, the lane's delay.
        private let lane: SimulationLane<InFlight>?
        /// The identity of the lane's simulation: a message rides the lane when both its ends run there (compared by
        /// identity, read from each end without a retain of its loop — the loops were retained and released a dozen
        /// times a message).
        private let laneLoop: ObjectIdentifier?
        /// The lane's simulation, whose clock a message sent from it is keyed on (``key(_:_:upstream:)``): read through
        /// the sender's `loop`, the simulation was retained and released on every message.
        private let laneSimulation: SimulationRuntime?
        /// With jitter: when the last message each way of each client is due, so that a client's messages keep their
        /// order each way as a connection's do (``inOrder(_:client:upstream:sentAt:)``). Without jitter every message
        /// takes the same time, and keeps its order with no table.
        private let arrivals: LockedBox<[ArrivalKey: RuntimeInstant]>?

        private struct ArrivalKey: Hashable {
            let client: ObjectIdentifier
            let upstream: Bool
        }

        init(conditions: NetworkConditions, seed: UInt64, batchingOn loops: [any RuntimeLoop]) {
            model = NetworkModel(conditions: conditions, seed: seed)
            let latency = conditions.latency
            let batching = conditions.jitter == .zero ? loops : []
            lines = batching.filter { !($0 is SimulationRuntime) }.map { loop in
                DelayLine(loop: loop, delay: latency, prefetch: { prefetchCacheLines(at: $0, lines: 4) }) {
                    $0.deliver()
                }
            }
            lane = batching.lazy.compactMap { $0 as? SimulationRuntime }.first.flatMap { simulation in
                SimulationLane(
                    on: simulation,
                    delay: latency,
                    prefetches: true,
                    prefetchAhead: Carrier.prefetchMember
                ) { message in
                    message.deliver()
                    return false
                }
            }
            laneLoop = lane.map { ObjectIdentifier($0.loop) }
            laneSimulation = lane == nil ? nil : batching.lazy.compactMap { $0 as? SimulationRuntime }.first
            arrivals = conditions.jitter > .zero ? LockedBox([:]) : nil
        }

        /// The delay of a message `delay` would bring at `sentAt + delay`, made no shorter than the time to the
        /// arrival of the last message `client` sent or was sent the same way: one client's messages travel one
        /// connection each way, which delivers them in the order they were sent, however their times vary.
        private func inOrder(
            _ delay: Duration,
            client: any InProcessClient,
            upstream: Bool,
            sentAt now: RuntimeInstant
        ) -> Duration {
            guard let arrivals else { return delay }
            let key = ArrivalKey(client: ObjectIdentifier(client), upstream: upstream)
            let due = arrivals.withLock { arrivals in
                let due = max(now.advanced(by: delay), arrivals[key] ?? now)
                arrivals[key] = due
                return due
            }
            return now.duration(to: due)
        }

        /// The lane, when a message between endpoints on these loops rides it.
        @inline(__always)
        private func lane(between first: ObjectIdentifier, and second: ObjectIdentifier) -> SimulationLane<InFlight>? {
            guard let lane, first == laneLoop, second == first else { return nil }
            return lane
        }

        func link(of client: any InProcessClient) -> LinkState {
            paths.link(of: client)
        }

        func isPartitioned(_ roomID: String) -> Bool {
            paths.isPartitioned(roomID)
        }

        func send(
            _ message: ClientMessage,
            on channel: any RoomChannel,
            from client: any InProcessClient
        )
            -> SendOutcome
        {
            let link = link(of: client)
            // A link that is down refuses every message before the room is touched: a storm's retries go nowhere,
            // and their rooms (at scale, in no cache) are not loaded for them.
            if link == .down { return .refused }
            guard let room = RoomEnd(channel) else { return .refused }
            let transit: Transit
            if case .connectionResumed = message {
                // The data flows again: an edge of a continuous stream, not one packet that loss could take.
                guard link == .up else { return .refused }
                guard !isPartitioned(room.endpoint.roomID) else { return .sent }
                transit = .delivered(after: model.conditions.latency)
            } else {
                transit = model.transit(link: link, key: key(client, room, upstream: true))
                if case .delivered = transit, isPartitioned(room.endpoint.roomID) { return .sent }  // lost on the way
            }
            switch transit {
            case .refused: return .refused
            case .lost: return .sent
            case .delivered(let delay):
                let ordered = inOrder(delay, client: client, upstream: true, sentAt: client.loop.now)
                toRoom(.message(message), from: client, to: room, after: ordered)
                return .sent
            }
        }

        func closed(_ channel: any RoomChannel, session: SessionID, from client: any InProcessClient) {
            guard let room = RoomEnd(channel) else { return }
            // The server sees the socket close (or the data stop): nothing the dead link must carry — but after what
            // the connection carried before it.
            let delay = inOrder(model.conditions.latency, client: client, upstream: true, sentAt: client.loop.now)
            toRoom(.closed(session), from: client, to: room, after: delay)
        }

        /// Carries `message` from `room` to `client`, which is its own channel.
        @inline(__always)
        func send(_ message: ServerMessage, to client: any InProcessClient, from endpoint: any RoomEndpoint) {
            let room = RoomEnd(endpoint)
            let transit = model.transit(link: link(of: client), key: key(client, room, upstream: false))
            guard case .delivered(let drawn) = transit, !isPartitioned(endpoint.roomID) else { return }
            let delay = inOrder(drawn, client: client, upstream: false, sentAt: endpoint.loop.now)
            let clientLoop = client.loopIdentity
            delivered.increment(byLoop: clientLoop)
            let roomID = endpoint.roomID
            if let lane = lane(between: clientLoop, and: room.loop),
                lane.add(.toClient(message, roomID: roomID, client: client), prefetching: Self.address(of: client))
            {
                return
            }
            if !lines.isEmpty, let line = line(from: endpoint.loop, to: client.loop, after: delay),
                line.add(.toClient(message, roomID: roomID, client: client), prefetching: Self.address(of: client))
            {
                return
            }
            _ = try? client.loop.schedule(
                after: delay,
                handler: ToClient(message: message, roomID: roomID, client: client)
            )
        }

        /// What the lane needs, two messages before `upstream` arrives, to have its room start loading the sender's
        /// member record (``prefetchMember(_:_:)``): the sender's member hint plus one, for a heartbeat to a
        /// `ServerRoom` from a client that keeps one; 0 otherwise. Read as the client sends, while its lines are hot.
        private static func memberAhead(
            _ upstream: Upstream,
            from client: any InProcessClient,
            to room: RoomEnd
        ) -> UInt {
            guard case .message(.heartbeat) = upstream, room.isServerRoom else { return 0 }
            let slot = client.memberHint
            return slot >= 0 ? UInt(slot) &+ 1 : 0
        }

        /// A lane's `prefetchAhead`: the heartbeat's room (a `ServerRoom`: ``memberAhead(_:from:to:)`` gave a word
        /// for no other) starts loading the record of the member at the slot `ahead` names. The room's record, user ID
        /// and table counts were most of its time at a million clients (`perf annotate`): the room's address is known
        /// to the lane, the record's only to the room.
        private static func prefetchMember(_ room: UnsafeRawPointer, _ ahead: UInt) {
            // The lane holds the message, and the message its room (`UnretainedReference`'s owner): the room is alive.
            UnretainedReference<ServerRoom>(at: room).withObject {
                $0.prefetchMember(atSlot: Int32(truncatingIfNeeded: ahead &- 1))
            }
        }

        /// One end of a message at a room: the room, and what the network reads of it on every message. A channel this
        /// network opened is the room itself; the engine's rooms (`ServerRoom`, a final class: its cast compares one
        /// pointer) give their loop's identity without a retain of the loop.
        struct RoomEnd {
            let endpoint: any RoomEndpoint
            let loop: ObjectIdentifier
            let isServerRoom: Bool

            @inline(__always)
            init(_ room: any RoomEndpoint) {
                if let room = room as? ServerRoom {
                    self.init(room)
                } else {
                    self.init(endpoint: room, loop: ObjectIdentifier(room.loop), isServerRoom: false)
                }
            }

            @inline(__always)
            init(_ room: ServerRoom) {
                self.init(endpoint: room, loop: room.loopIdentity, isServerRoom: true)
            }

            @inline(__always)
            private init(endpoint: any RoomEndpoint, loop: ObjectIdentifier, isServerRoom: Bool) {
                self.endpoint = endpoint
                self.loop = loop
                self.isServerRoom = isServerRoom
            }

            /// The room `channel` leads to, or `nil` for a channel this network did not open.
            @inline(__always)
            init?(_ channel: any RoomChannel) {
                if let room = channel as? ServerRoom {
                    self.init(room)
                } else if let room = channel as? any RoomEndpoint {
                    self.init(room)
                } else {
                    return nil
                }
            }
        }

        /// Carries `upstream` from `client` to `room`, arriving after `delay`.
        private func toRoom(
            _ upstream: Upstream,
            from client: any InProcessClient,
            to end: RoomEnd,
            after delay: Duration
        ) {
            let room = end.endpoint
            let roomLoop = end.loop
            delivered.increment(byLoop: roomLoop)
            // The client too: the room reads its member hint and answers it.
            if let lane = lane(between: roomLoop, and: client.loopIdentity),
                lane.add(
                    .toRoom(upstream, client: client, room: room),
                    prefetching: Self.address(of: room),
                    and: Self.address(of: client),
                    secondBytes: LaneFootprint.clientAnswered,
                    ahead: Self.memberAhead(upstream, from: client, to: end)
                )
            {
                return
            }
            if !lines.isEmpty, let line = line(from: client.loop, to: room.loop, after: delay),
                line.add(.toRoom(upstream, client: client, room: room), prefetching: Self.address(of: room))
            {
                return
            }
            _ = try? room.loop.schedule(after: delay, handler: ToRoom(upstream: upstream, client: client, room: room))
        }

        /// The line that carries a message taking `delay` from `sender`'s loop to `receiver`'s, if they are one loop with
        /// a line of that delay (the line itself checks that it is called on the loop).
        private func line(
            from sender: any RuntimeLoop,
            to receiver: any RuntimeLoop,
            after delay: Duration
        )
            -> DelayLine<InFlight>?
        {
            guard !lines.isEmpty, sender === receiver else { return nil }
            for line in lines where line.loop === receiver {
                return line.delay == delay ? line : nil
            }
            return nil
        }

        /// Where `object` lives, for its line to prefetch before delivering to it (read without retaining it: a
        /// retain would itself wait for the cold object).
        private static func address(of object: AnyObject) -> UnsafeRawPointer? {
            prefetchAddress(of: object)
        }

        /// What crosses a channel towards its room: a message, or the server's view of the connection closing.
        private enum Upstream {
            case message(ClientMessage)
            case closed(SessionID)

            func deliver(from client: any InProcessClient, to room: any RoomEndpoint) {
                // The client is its own channel.
                switch self {
                case .message(let message): room.deliver(message, on: client)
                case .closed(let session): room.connectionClosed(userID: client.userID, session: session, on: client)
                }
            }
        }

        /// A message in a `DelayLine`.
        private enum InFlight {
            case toRoom(Upstream, client: any InProcessClient, room: any RoomEndpoint)
            case toClient(ServerMessage, roomID: String, client: any InProcessClient)

            func deliver() {
                switch self {
                case .toRoom(let upstream, let client, let room): upstream.deliver(from: client, to: room)
                case .toClient(let message, let roomID, let client): client.deliver(message, from: roomID)
                }
            }
        }

        /// Identifies a message for its fate: endpoints, direction, and the sender's clock.
        private func key(_ client: any InProcessClient, _ room: RoomEnd, upstream: Bool) -> UInt64 {
            let sender = upstream ? client.loopIdentity : room.loop
            let nanoseconds =
                if let laneSimulation, sender == laneLoop {
                    laneSimulation.now.nanoseconds
                } else {
                    (upstream ? client.loop : room.endpoint.loop).now.nanoseconds
                }
            let time = UInt64(bitPattern: nanoseconds)
            let roomHash = room.endpoint.roomHash
            return client.endpointHash &* 0x9E37_79B9_7F4A_7C15 ^ roomHash &+ time &* 0xBF58_476D_1CE4_E5B9
                ^ (upstream ? 0 : 0x94D0_49BB_1331_11EB)
        }

        /// A message on its way to a room: one allocation that is both the timer's handler and the message.
        private final class ToRoom: TimerHandler {
            let upstream: Upstream
            let client: any InProcessClient
            let room: any RoomEndpoint

            init(upstream: Upstream, client: any InProcessClient, room: any RoomEndpoint) {
                self.upstream = upstream
                self.client = client
                self.room = room
            }

            func timerFired(_ timer: TimerHandle) { upstream.deliver(from: client, to: room) }
        }

        /// A message on its way to a client.
        private final class ToClient: TimerHandler {
            let message: ServerMessage
            let roomID: String
            let client: any InProcessClient

            init(message: ServerMessage, roomID: String, client: any InProcessClient) {
                self.message = message
                self.roomID = roomID
                self.client = client
            }

            func timerFired(_ timer: TimerHandle) { client.deliver(message, from: roomID) }
        }
    }
}

/// A count that several loops add to at once: one atomic per stripe, each in its own allocation, picked by the
/// adding loop, so that two loops counting every message do not pass one cache line back and forth.
final class StripedCounter: Sendable {
    private final class Stripe: Sendable {
        let value = Atomic<Int>(0)
        /// Pads the object past a 64-byte cache line, so that two stripes never share one.
        let padding: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)
    }

    private let stripes = (0..<8).map { _ in Stripe() }

    /// Adds one on behalf of the loop `loop` names (its address picks the stripe).
    func increment(byLoop loop: ObjectIdentifier) {
        let stripe = Int(truncatingIfNeeded: UInt(bitPattern: loop) >> 6) & 7
        stripes[stripe].value.wrappingAdd(1, ordering: .relaxed)
    }

    var total: Int { stripes.reduce(0) { $0 + $1.value.load(ordering: .relaxed) } }
}
