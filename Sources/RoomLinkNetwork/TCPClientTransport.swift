public import RoomLinkEngine
import RoomLinkLibevent
import RoomLinkRuntime
import RoomLinkWire
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Clients over real sockets: each client keeps one TCP connection to `roomlink serve` (or a ``NetworkServer``) and
/// multiplexes its rooms over it, as an SDK does; the connection opens at the client's first login and again after
/// it closed.
///
/// ```swift
/// let transport = try TCPClientTransport(server: SocketAddress(parsing: "127.0.0.1:7000"), dialect: .zego)
/// let alice = ZegoClient(id: "alice", loop: group.loop(for: "alice"), environment: .init(transport: transport))
/// await alice.loginRoom("room-1")
/// ```
///
/// The client notices a lost connection as a real SDK does: an end of stream or a reset at once (its rooms
/// reconnect), silence by missed heartbeat acks. Clients must run on a `LibeventLoopGroup`'s loops.
///
/// It is also the path's fault injector (`NetworkFaults`), at the client's socket: `down` closes the client's
/// connection and refuses new ones until `up`; `blackhole` keeps it open and drops every frame both ways (the server
/// hears silence); a partitioned room's frames are dropped both ways; ``Configuration/latency`` and
/// ``Configuration/jitter`` delay frames at the client's socket, in order.
public final class TCPClientTransport: ClientTransport, NetworkFaults, Sendable {
    /// How the transport's connections behave.
    public struct Configuration: Sendable {
        /// Added to every frame each way, at the client's socket.
        public var latency: Duration
        /// Up to this much more, drawn per frame (frames keep their order).
        public var jitter: Duration
        /// Seeds the jitter.
        public var seed: UInt64
        /// Local addresses the connections leave from (IP literals), spread over by client: past one address's
        /// ephemeral ports (28,000 per server address here), a load generator needs several. Empty: the system's
        /// choice. Each is bound with `IP_BIND_ADDRESS_NO_PORT`, so the port is picked at connect.
        public var sourceAddresses: [String]
        /// Told of every connection attempt, handshake, failure, login answer and heartbeat round trip.
        public var observer: (any ConnectionObserver)?

        public init(
            latency: Duration = .zero,
            jitter: Duration = .zero,
            seed: UInt64 = 0,
            sourceAddresses: [String] = [],
            observer: (any ConnectionObserver)? = nil
        ) {
            self.latency = latency
            self.jitter = jitter
            self.seed = seed
            self.sourceAddresses = sourceAddresses
            self.observer = observer
        }
    }

    /// The first of ``servers``.
    public var server: SocketAddress { servers[0] }
    /// The servers a client may connect to: the nodes of one cluster (`roomlink serve --redis`). A client starts on
    /// one picked by its ID (so that clients spread over them) and moves to the next whenever its connection fails
    /// or drops; its dialect's retry policy paces the attempts, whichever server they go to.
    public let servers: [SocketAddress]
    public let dialect: DialectName
    public let configuration: Configuration
    private let addresses: [ResolvedAddress]
    private let sources: [ResolvedAddress]
    /// The server each client uses now (an index into `addresses`), once it has moved from the one its ID picked.
    private let chosen = LockedBox<[ObjectIdentifier: Int]>([:])
    private let connections = LockedBox<[ObjectIdentifier: ClientConnection]>([:])
    private let paths = PathStates()
    private let frames = Atomic<Int>(0)

    /// A transport to `server` for clients of `dialect`.
    ///
    /// - Throws: ``NetworkError/invalidAddress(_:reason:)`` when `server` does not resolve.
    public convenience init(
        server: SocketAddress,
        dialect: DialectName,
        configuration: Configuration = .init()
    ) throws(NetworkError) {
        try self.init(servers: [server], dialect: dialect, configuration: configuration)
    }

    /// A transport to the nodes `servers` of one cluster, for clients of `dialect`.
    ///
    /// - Throws: ``NetworkError/invalidAddress(_:reason:)`` when a server or a source address does not resolve;
    ///   ``NetworkError/misuse(_:)`` for an empty list.
    public init(
        servers: [SocketAddress],
        dialect: DialectName,
        configuration: Configuration = .init()
    ) throws(NetworkError) {
        guard !servers.isEmpty else { throw .misuse("a client transport needs at least one server") }
        self.servers = servers
        self.dialect = dialect
        // A write to a socket its peer closed raises SIGPIPE, which would end the process; the write's error is
        // handled instead.
        signal(SIGPIPE, SIG_IGN)
        self.configuration = configuration
        var addresses: [ResolvedAddress] = []
        for server in servers { addresses.append(try server.resolved()) }
        self.addresses = addresses
        var sources: [ResolvedAddress] = []
        for source in configuration.sourceAddresses {
            let address = SocketAddress(host: source, port: 0)
            let resolved = try address.resolved()
            guard resolved.family == addresses[0].family else {
                throw .invalidAddress(source, reason: "a source address must be of the servers' family (IPv4 or IPv6)")
            }
            sources.append(resolved)
        }
        self.sources = sources
    }

    // MARK: - ClientTransport

    public func open(toRoom roomID: String, for client: any ClientEndpoint) -> (any RoomChannel)? {
        guard let connection = connection(for: client, room: roomID) else { return nil }
        return Channel(room: roomID, connection: connection)
    }

    /// The client's live connection, opened if it has none, carrying `room`; `nil` while its link is down.
    private func connection(for client: any ClientEndpoint, room: String) -> ClientConnection? {
        guard link(of: client) != .down, let loop = client.loop as? LibeventLoop else { return nil }
        let key = ObjectIdentifier(client)
        let connection =
            connections.withLock { $0[key] }
            ?? {
                let connection = ClientConnection(client: client, loop: loop, transport: self)
                if connection.isLive { connections.withLock { $0[key] = connection } }
                return connection
            }()
        guard connection.isLive else { return nil }
        connection.add(room: room)
        return connection
    }

    public func send(
        _ message: ClientMessage,
        on channel: any RoomChannel,
        from client: any ClientEndpoint
    )
        -> SendOutcome
    {
        guard let channel = channel as? Channel else { return .refused }
        switch link(of: client) {
        case .down: return .refused
        case .blackhole:
            channel.connection.sent(room: channel.room)  // it left, as far as the client can tell
            return .sent
        case .up: break
        }
        if !channel.connection.isLive {
            // Closed under the client while its link was down (the client heard of the link, not of this socket):
            // the room's next message opens a new connection.
            guard let connection = connection(for: client, room: channel.room) else { return .refused }
            channel.connection = connection
        }
        if isPartitioned(channel.room) { return .sent }
        if configuration.observer != nil { channel.connection.sending(message, room: channel.room) }
        channel.connection.send(
            ClientFrame.room(channel.room, message).encoded(at: client.loop.now),
            room: channel.room
        )
        return .sent
    }

    /// Closes the connection carrying `channel` unless something arrived on it since the room's last message left;
    /// the next message of the room dials a new one.
    public func abandon(_ channel: any RoomChannel, from client: any ClientEndpoint) {
        guard let channel = channel as? Channel else { return }
        channel.connection.abandon(room: channel.room)
    }

    /// Nothing to do: over TCP the server hears a connection close from its own socket.
    public func closed(_ channel: any RoomChannel, session: SessionID, from client: any ClientEndpoint) {}

    /// One room's channel: the room's name and the client's connection that carries it.
    final class Channel: RoomChannel, @unchecked Sendable {
        // Safe: `connection` is read and replaced in `send`, on the client's loop only (a client calls its transport
        // from its actor, which runs there).
        let room: String
        var connection: ClientConnection

        init(room: String, connection: ClientConnection) {
            self.room = room
            self.connection = connection
        }
    }

    // MARK: - NetworkFaults

    public func link(of client: any ClientEndpoint) -> LinkState {
        paths.link(of: ObjectIdentifier(client))
    }

    /// Sets the link of `client` and tells it, on its loop. `down` also closes its connection there (the server sees
    /// the socket close).
    public func setLink(_ state: LinkState, for client: any ClientEndpoint) {
        let key = ObjectIdentifier(client)
        guard paths.setLink(state, for: key) else { return }
        client.loop.runSoon { [self] in
            if state == .down, let connection = connections.withLock({ $0[key] }) { connection.close() }
            client.linkChanged(to: state)
        }
    }

    public func isPartitioned(_ roomID: String) -> Bool {
        paths.isPartitioned(roomID)
    }

    /// Cuts `roomID` off from its clients (`true`) or heals it: its frames are dropped both ways at the clients'
    /// sockets, and the clients connected to it that watch their data (`RouteObserver`) see it stop or resume.
    public func setPartitioned(_ cutOff: Bool, room roomID: String) {
        guard paths.setPartitioned(cutOff, room: roomID) else { return }
        for connection in connections.withLock({ Array($0.values) }) {
            connection.loop.execute {
                guard connection.rooms.contains(roomID), let client = connection.observer else { return }
                client.routeChanged(toRoom: roomID, reachable: !cutOff)
            }
        }
    }

    /// Frames sent and received by every connection so far.
    public var deliveredCount: Int { frames.load(ordering: .relaxed) }

    /// Closes every connection, each on its client's loop, without telling the clients (shut them down first), and
    /// waits until they are closed. Call it before the clients' loop group shuts down: a connection lives on its
    /// client's loop.
    public func close() async {
        for connection in connections.withLock({ Array($0.values) }) {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                connection.loop.execute {
                    connection.close()
                    done.resume()
                }
            }
        }
    }

    // MARK: - For the connections

    func countFrame() {
        frames.add(1, ordering: .relaxed)
    }

    /// Whether frames of `room` cross the client's path now (its link is up and the room is not cut off).
    func carries(from key: ObjectIdentifier, room: String) -> Bool {
        paths.link(of: key) == .up && !paths.isPartitioned(room)
    }

    /// Whether frames that belong to no room (a hello's answer, a keep-alive) cross the client's path now.
    func carries(from key: ObjectIdentifier) -> Bool {
        paths.link(of: key) == .up
    }

    /// The delay for one frame: the latency plus a draw of the jitter.
    func delay(using random: inout SeededRandom) -> Duration {
        let jitter = configuration.jitter
        guard jitter > .zero else { return configuration.latency }
        let nanoseconds = jitter.components.seconds * 1_000_000_000 + jitter.components.attoseconds / 1_000_000_000
        return configuration.latency + .nanoseconds(Int64.random(in: 0...max(0, nanoseconds), using: &random))
    }

    /// The server a new connection of the client `key` goes to, and its index.
    func address(for key: ObjectIdentifier, spread: UInt64) -> (ResolvedAddress, Int) {
        let index = chosen.withLock { $0[key] } ?? Int(spread % UInt64(addresses.count))
        return (addresses[index], index)
    }

    /// The local address a connection of a client leaves from, if the transport has source addresses.
    func source(spread: UInt64) -> ResolvedAddress? {
        // Mixed again (Fibonacci hashing), so that the servers' pick and this one do not go together.
        sources.isEmpty ? nil : sources[Int(((spread &* 0x9E37_79B9_7F4A_7C15) >> 32) % UInt64(sources.count))]
    }

    var observer: (any ConnectionObserver)? { configuration.observer }

    /// The client's connection to server `index` failed or dropped: its next one goes to the next server.
    func moveOn(_ key: ObjectIdentifier, from index: Int) {
        guard addresses.count > 1 else { return }
        chosen.withLock { $0[key] = (index + 1) % addresses.count }
    }

    func forget(_ connection: ClientConnection) {
        connections.withLock { connections in
            if connections[connection.key] === connection { connections[connection.key] = nil }
        }
    }
}
