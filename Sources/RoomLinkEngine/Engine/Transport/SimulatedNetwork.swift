import Synchronization

/// RoomLink's simulated transport: every message crosses a ``NetworkModel`` (seeded latency, jitter and loss) and a
/// link state per client, and is delivered as a timer on the receiver's loop.
///
/// Change a client's link with ``setLink(_:for:)``: `down` refuses its messages and tells it at once, `blackhole`
/// loses them silently (only missed heartbeats reveal it), `up` restores it and tells it. Cut a room off with
/// ``setPartitioned(_:room:)``: every message between the room's server and its clients is lost until it heals, and
/// only silence reveals it. Timers, not threads, carry the latency, so the same network runs in virtual and in real
/// time.
///
/// A message's fate is drawn from the seed, its two endpoints, its direction and its send time, with no state per
/// client: the same scenario and seed give the same fates in virtual time. Safe to use from any loop; a lock guards
/// only the link states that are not `up`.
///
/// Given the loops it serves (``init(conditions:seed:batchingOn:)``, for the real clock), a network with no jitter
/// carries the messages between a client and a room on the same loop in one `DelayLine` per loop instead of a
/// timer each: every such message takes the same time, so they arrive in the order sent, and one FIFO and one timer
/// carry them all with no allocation per message.
public final class SimulatedNetwork: ClientTransport, ServerTransport, NetworkFaults {
    private let model: NetworkModel
    private let links = LockedBox<[ObjectIdentifier: LinkState]>([:])
    /// How many links are not up: while none is, sending needs no lock (the common case).
    private let linksNotUp = Atomic<Int>(0)
    /// The rooms cut off from their clients, and how many (read without the lock while none is).
    private let partitioned = LockedBox<Set<String>>([])
    private let partitionCount = Atomic<Int>(0)
    private let delivered = StripedCounter()
    private let directory = LockedBox<(any RoomDirectory)?>(nil)
    /// One line per loop given at creation (none with jitter): same-loop messages in flight.
    private let lines: [DelayLine<InFlight>]

    /// Creates a network with `conditions`, drawing every message's fate from `seed`.
    ///
    /// With `loops` and no jitter, messages between a client and a room that share one of those loops travel in that
    /// loop's `DelayLine` (sent on the loop's thread; others take a timer each). Same arrival times; only the order
    /// of arrivals due at one instant may differ from timers', so pass loops on the real clock, where that order is
    /// the clock's anyway, and none for a virtual-time run that must replay a recorded order.
    public init(conditions: NetworkConditions = .init(), seed: UInt64 = 0, batchingOn loops: [any RuntimeLoop] = []) {
        model = NetworkModel(conditions: conditions, seed: seed)
        let latency = conditions.latency
        lines =
            conditions.jitter == .zero
            ? loops.map { loop in
                DelayLine(loop: loop, delay: latency, prefetch: { prefetchCacheLines(at: $0, lines: 4) }) {
                    $0.deliver()
                }
            }
            : []
    }

    /// The conditions every message meets.
    public var conditions: NetworkConditions { model.conditions }

    /// Messages sent into the network that it delivers (or will), both directions.
    public var deliveredCount: Int { delivered.total }

    /// Connects the network to the servers it carries messages to. A ``RoomServer`` does this when it is created
    /// with this network. The network keeps the server alive (clients hold the network, so a server nobody else
    /// names stays up while its clients run); the server holds the network weakly, so there is no cycle.
    public func serve(_ rooms: any RoomDirectory) {
        directory.withLock { $0 = rooms }
    }

    /// The link state of `client`.
    public func link(of client: any ClientEndpoint) -> LinkState {
        guard linksNotUp.load(ordering: .acquiring) > 0 else { return .up }
        return links.withLock { $0[ObjectIdentifier(client)] ?? .up }
    }

    /// Sets the link of `client` and tells the client (at once when called on its loop, otherwise as soon as its
    /// loop runs). Setting the state it already has does nothing.
    public func setLink(_ state: LinkState, for client: any ClientEndpoint) {
        let changed = links.withLock { links -> Bool in
            let key = ObjectIdentifier(client)
            guard (links[key] ?? .up) != state else { return false }
            links[key] = state == .up ? nil : state
            linksNotUp.store(links.count, ordering: .releasing)
            return true
        }
        guard changed else { return }
        client.loop.runSoon { client.linkChanged(to: state) }
    }

    /// Whether `roomID` is cut off from its clients.
    public func isPartitioned(_ roomID: String) -> Bool {
        guard partitionCount.load(ordering: .acquiring) > 0 else { return false }
        return partitioned.withLock { $0.contains(roomID) }
    }

    /// Cuts `roomID` off from every client (`true`) or heals it (`false`): while cut off, every message between the
    /// room's server and a client is lost in both directions, and new logins to it go unanswered. Neither side is
    /// told — a partition looks like silence — except that the room's current members see their data for the room
    /// stop or resume (``RouteObserver/routeChanged(toRoom:reachable:)``), which dialects that watch their media
    /// (Agora) notice after their detection time. Setting the state the room already has does nothing.
    public func setPartitioned(_ cutOff: Bool, room roomID: String) {
        let changed = partitioned.withLock { rooms -> Bool in
            let changed = cutOff ? rooms.insert(roomID).inserted : rooms.remove(roomID) != nil
            partitionCount.store(rooms.count, ordering: .releasing)
            return changed
        }
        guard changed, let room = directory.withLock({ $0 })?.room(roomID) else { return }
        // The members' data stops or resumes; each client's own loop hears of it.
        room.withMemberChannels { channels in
            for case let channel as Channel in channels {
                guard let client = channel.client as? any RouteObserver else { continue }
                client.loop.runSoon { client.routeChanged(toRoom: roomID, reachable: !cutOff) }
            }
        }
    }

    /// Opens `client`'s channel to the room `roomID` of the attached server; `nil` when no server is attached (or it
    /// is gone), as if the network had no route to it. The channel pairs the two ends, so a message on it needs no
    /// lookup, and keeps the room's hint of where its member sits.
    public func open(toRoom roomID: String, for client: any ClientEndpoint) -> (any RoomChannel)? {
        guard let room = directory.withLock({ $0 })?.room(roomID) else { return nil }
        return Channel(client: client, room: room)
    }

    public func send(_ message: ClientMessage, on channel: any RoomChannel) -> SendOutcome {
        guard let channel = channel as? Channel else { preconditionFailure("a channel this network did not open") }
        let transit: Transit
        if case .connectionResumed = message {
            // The data flows again: an edge of a continuous stream, not one packet that loss could take.
            guard link(of: channel.client) == .up else { return .refused }
            guard !isPartitioned(channel.room.roomID) else { return .sent }
            transit = .delivered(after: model.conditions.latency)
        } else {
            transit = model.transit(link: link(of: channel.client), key: key(channel, upstream: true))
            if case .delivered = transit, isPartitioned(channel.room.roomID) { return .sent }  // lost on the way
        }
        switch transit {
        case .refused: return .refused
        case .lost: return .sent
        case .delivered(let delay):
            toRoom(.message(message), on: channel, after: delay)
            return .sent
        }
    }

    public func closed(_ channel: any RoomChannel, session: SessionID) {
        guard let channel = channel as? Channel else { preconditionFailure("a channel this network did not open") }
        // The server sees the socket close (or the data stop): nothing the dead link must carry.
        toRoom(.closed(session), on: channel, after: model.conditions.latency)
    }

    public func send(_ message: ServerMessage, on channel: any ClientChannel, from room: any RoomEndpoint) {
        guard let channel = channel as? Channel else { preconditionFailure("a channel this network did not open") }
        // Everything a reply needs is on the channel, which the room has just read: the client itself is not
        // touched until its message arrives (a million clients' objects are cold).
        let client = channel.client
        let transit = model.transit(link: link(of: client), key: key(channel, upstream: false))
        guard case .delivered(let delay) = transit, !isPartitioned(room.roomID) else { return }
        let clientLoop = channel.clientLoop
        delivered.increment(by: clientLoop)
        if let line = line(from: channel.roomLoop, to: clientLoop, after: delay),
            line.add(.toClient(message, roomID: room.roomID, client: client), prefetching: Self.address(of: client))
        {
            return
        }
        _ = try? clientLoop.schedule(
            after: delay,
            handler: ToClient(message: message, roomID: room.roomID, client: client)
        )
    }

    /// Carries `upstream` on `channel` to its room, arriving after `delay`.
    private func toRoom(_ upstream: Upstream, on channel: Channel, after delay: Duration) {
        let roomLoop = channel.roomLoop
        delivered.increment(by: roomLoop)
        if let line = line(from: channel.clientLoop, to: roomLoop, after: delay),
            line.add(.toRoom(upstream, channel: channel), prefetching: Self.address(of: channel))
        {
            return
        }
        _ = try? roomLoop.schedule(after: delay, handler: ToRoom(upstream: upstream, channel: channel))
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
        UnsafeRawPointer(bitPattern: UInt(bitPattern: ObjectIdentifier(object)))
    }

    /// One client's channel to one room: both ends and their loops, the part of their messages' fate key they fix,
    /// and the room's hint of where the client's member sits (the in-process shortcut a wire does not carry). The
    /// loops and the key are copied here so that a message touches the channel and its receiver, never its sender's
    /// object as well.
    private final class Channel: RoomChannel, ClientChannel {
        let client: any ClientEndpoint
        let room: any RoomEndpoint
        let clientLoop: any RuntimeLoop
        let roomLoop: any RuntimeLoop
        /// The endpoints' part of every fate key (``SimulatedNetwork/key(_:upstream:)``).
        let pairKey: UInt64
        private let hint = Atomic<Int32>(-1)

        init(client: any ClientEndpoint, room: any RoomEndpoint) {
            self.client = client
            self.room = room
            self.clientLoop = client.loop
            self.roomLoop = room.loop
            self.pairKey = client.endpointHash &* 0x9E37_79B9_7F4A_7C15 ^ room.roomHash
        }

        var memberHint: Int32 { hint.load(ordering: .relaxed) }
        func setMemberHint(_ slot: Int32) { hint.store(slot, ordering: .relaxed) }

        func deliver(_ upstream: Upstream) {
            switch upstream {
            case .message(let message): room.deliver(message, on: self)
            case .closed(let session): room.connectionClosed(userID: client.userID, session: session)
            }
        }
    }

    /// What crosses a channel towards its room: a message, or the server's view of the connection closing.
    private enum Upstream {
        case message(ClientMessage)
        case closed(SessionID)
    }

    /// A message in a `DelayLine`.
    private enum InFlight {
        case toRoom(Upstream, channel: Channel)
        case toClient(ServerMessage, roomID: String, client: any ClientEndpoint)

        func deliver() {
            switch self {
            case .toRoom(let upstream, let channel): channel.deliver(upstream)
            case .toClient(let message, let roomID, let client): client.deliver(message, from: roomID)
            }
        }
    }

    /// Identifies a message for its fate: endpoints, direction, and the sender's clock.
    private func key(_ channel: Channel, upstream: Bool) -> UInt64 {
        let time = UInt64(bitPattern: (upstream ? channel.clientLoop : channel.roomLoop).now.nanoseconds)
        return channel.pairKey &+ time &* 0xBF58_476D_1CE4_E5B9 ^ (upstream ? 0 : 0x94D0_49BB_1331_11EB)
    }

    /// A message on its way to a room: one allocation that is both the timer's handler and the message.
    private final class ToRoom: TimerHandler {
        let upstream: Upstream
        let channel: Channel

        init(upstream: Upstream, channel: Channel) {
            self.upstream = upstream
            self.channel = channel
        }

        func timerFired(_ timer: TimerHandle) { channel.deliver(upstream) }
    }

    /// A message on its way to a client.
    private final class ToClient: TimerHandler {
        let message: ServerMessage
        let roomID: String
        let client: any ClientEndpoint

        init(message: ServerMessage, roomID: String, client: any ClientEndpoint) {
            self.message = message
            self.roomID = roomID
            self.client = client
        }

        func timerFired(_ timer: TimerHandle) { client.deliver(message, from: roomID) }
    }
}

/// A count that several loops add to at once: one atomic per stripe, each in its own allocation, picked by the
/// adding loop, so that two loops counting every message do not pass one cache line back and forth.
private final class StripedCounter: Sendable {
    private final class Stripe: Sendable {
        let value = Atomic<Int>(0)
        /// Pads the object past a 64-byte cache line, so that two stripes never share one.
        let padding: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)
    }

    private let stripes = (0..<8).map { _ in Stripe() }

    /// Adds one on behalf of `loop` (its address picks the stripe).
    func increment(by loop: any RuntimeLoop) {
        let stripe = Int(truncatingIfNeeded: UInt(bitPattern: ObjectIdentifier(loop)) >> 6) & 7
        stripes[stripe].value.wrappingAdd(1, ordering: .relaxed)
    }

    var total: Int { stripes.reduce(0) { $0 + $1.value.load(ordering: .relaxed) } }
}
