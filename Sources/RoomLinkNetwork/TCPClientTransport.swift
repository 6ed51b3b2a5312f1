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
/// It injects no fault itself: wrap it in a `FaultInjectingTransport` for a scenario's link changes, partitions,
/// latency and jitter. It applies the paths such a wrapper hands it at the socket (`PathAwareTransport`): a frame that
/// does not cross the client's path is neither written nor counted as read, so that the connection's own watch sees
/// what a real silent path would show it.
public final class TCPClientTransport: ClientTransport, PathAwareTransport, Sendable {
    /// How the transport's connections behave.
    public struct Configuration: Sendable {
        /// Local addresses the connections leave from (IP literals), spread over by client: past one address's
        /// ephemeral ports (28,000 per server address here), a load generator needs several. Empty: the system's
        /// choice. Each is bound with `IP_BIND_ADDRESS_NO_PORT`, so the port is picked at connect.
        public var sourceAddresses: [String]
        /// Told of every connection attempt, handshake, failure, login answer and heartbeat round trip.
        public var observer: (any ConnectionObserver)?
        /// Which of several servers a client's new connection goes to: picked by the client's ID (the default) or by
        /// the room it opens for.
        public var routing: ServerRouting
        /// TLS on every connection (`--server tls://HOST:PORT`), verified as the configuration says; `nil` for
        /// plain TCP.
        public var tls: TLSClientConfiguration?

        public init(
            sourceAddresses: [String] = [],
            observer: (any ConnectionObserver)? = nil,
            routing: ServerRouting = .byClient,
            tls: TLSClientConfiguration? = nil
        ) {
            self.sourceAddresses = sourceAddresses
            self.observer = observer
            self.routing = routing
            self.tls = tls
        }
    }

    /// The first of ``servers``.
    public var server: SocketAddress { servers[0] }
    /// The servers a client may connect to: the nodes of one cluster (`roomlink serve --redis`). A client starts on
    /// one picked by its ID (so that clients spread over them), or by its room (``ServerRouting``), and moves to the
    /// next whenever its connection fails or drops; its dialect's retry policy paces the attempts, whichever server
    /// they go to.
    public let servers: [SocketAddress]
    public let dialect: DialectName
    /// Random for each transport: the server outlives the run, and must not take this run's sessions for an
    /// earlier run's (`ClientTransport.sessionSalt`).
    public let sessionSalt: UInt64
    public let configuration: Configuration
    private let addresses: [ResolvedAddress]
    private let sources: [ResolvedAddress]
    /// The server each client uses now (an index into `addresses`), once it has moved from the one its ID picked.
    private let failover: LockedBox<ServerFailover<ObjectIdentifier>>
    private let connections = LockedBox<[ObjectIdentifier: ClientConnection]>([:])
    /// Connections given up into a black hole, whose sockets close once their path carries again.
    private let parked = LockedBox<[ObjectIdentifier: ClientConnection]>([:])
    private let frames = Atomic<Int>(0)
    /// The TLS context every connection's session comes from, with ``Configuration/tls``.
    let tls: TLSContext?

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
    ///   ``NetworkError/misuse(_:)`` for an empty list; ``NetworkError/tls(_:)`` when TLS cannot be set up (its
    ///   authorities unreadable).
    public init(
        servers: [SocketAddress],
        dialect: DialectName,
        configuration: Configuration = .init()
    ) throws(NetworkError) {
        guard !servers.isEmpty else { throw .misuse("a client transport needs at least one server") }
        sessionSalt = UInt64.random(in: 1...UInt64.max)
        self.servers = servers
        self.dialect = dialect
        // A write to a socket its peer closed raises SIGPIPE, which would end the process; the write's error is
        // handled instead.
        signal(SIGPIPE, SIG_IGN)
        self.configuration = configuration
        var addresses: [ResolvedAddress] = []
        for server in servers { addresses.append(try server.resolved()) }
        self.addresses = addresses
        failover = LockedBox(ServerFailover(count: addresses.count))
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
        do {
            tls = try configuration.tls.map { configuration throws(TLSError) in try TLSContext(client: configuration) }
        } catch {
            throw .tls(error)
        }
    }

    /// The name a connection to server `index` asks for and checks the certificate against.
    func serverName(of index: Int) -> String {
        configuration.tls?.serverName ?? servers[index].host
    }

    // MARK: - ClientTransport

    public func open(toRoom roomID: String, for client: any ClientEndpoint) -> (any RoomChannel)? {
        guard let connection = connection(for: client, room: roomID) else { return nil }
        return Channel(room: roomID, connection: connection)
    }

    /// The client's live connection, opened if it has none, carrying `room`.
    private func connection(for client: any ClientEndpoint, room: String) -> ClientConnection? {
        guard let loop = client.loop as? LibeventLoop else { return nil }
        let key = ObjectIdentifier(client)
        let connection =
            connections.withLock { $0[key] }
            ?? {
                let connection = ClientConnection(client: client, room: room, loop: loop, transport: self)
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
        if !channel.connection.isLive {
            // Closed under the client (a reset, a goodbye, a dropped link): the room's next message opens a new
            // connection — unless its path carries nothing now: a dial into a black hole reaches nobody, and as far
            // as the client can tell its message left.
            if let path = channel.connection.path, !path.carries(room: nil) { return .sent }
            guard let connection = connection(for: client, room: channel.room) else { return .refused }
            channel.connection = connection
        }
        let connection = channel.connection
        // Lost on the client's path (a fault injector's black hole or partition): it left, as far as the client can
        // tell, and never reaches the socket.
        guard connection.path?.carries(room: channel.room) ?? true else {
            connection.sent(room: channel.room)
            return .sent
        }
        if configuration.observer != nil { connection.sending(message, room: channel.room) }
        connection.send(ClientFrame.room(channel.room, message).encoded(at: client.loop.now), room: channel.room)
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

    /// Closes `client`'s connection without telling it (its link went down); the server sees the socket close.
    public func drop(_ client: any ClientEndpoint) {
        let key = ObjectIdentifier(client)
        guard let connection = connections.withLock({ $0[key] }) else { return }
        if connection.loop.isInServiceThread {
            connection.close()
        } else {
            connection.loop.execute { connection.close() }
        }
    }

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
        // And those given up into a black hole, still waiting for their path.
        for connection in parked.withLock({ Array($0.values) }) {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                connection.loop.execute {
                    connection.freeSocket()
                    done.resume()
                }
            }
        }
    }

    // MARK: - For the connections

    func countFrame() {
        frames.add(1, ordering: .relaxed)
    }

    /// The server a new connection of `client` opening for `room` goes to, and its index.
    func address(for client: any ClientEndpoint, room: String) -> (ResolvedAddress, Int) {
        let routed = configuration.routing.server(clientHash: client.endpointHash, room: room, count: addresses.count)
        let index = failover.withLock { $0.server(for: ObjectIdentifier(client), routed: routed) }
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
        failover.withLock { $0.moveOn(key, from: index) }
    }

    func park(_ connection: ClientConnection) {
        parked.withLock { $0[ObjectIdentifier(connection)] = connection }
    }

    func unpark(_ connection: ClientConnection) {
        parked.withLock { $0[ObjectIdentifier(connection)] = nil }
    }

    func forget(_ connection: ClientConnection) {
        connections.withLock { connections in
            if connections[connection.key] === connection { connections[connection.key] = nil }
        }
    }
}
