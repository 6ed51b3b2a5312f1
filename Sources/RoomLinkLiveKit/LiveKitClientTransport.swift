public import RoomLinkEngine
@_spi(RoomLinkInternals) import RoomLinkLibevent
public import RoomLinkNetwork
import RoomLinkRuntime
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// RoomLink's clients speaking LiveKit's signalling protocol: each client's room is a WebSocket to a LiveKit server's
/// `/rtc` (`roomlink serve --protocol livekit`, or livekit-server itself), carrying binary protobuf `SignalRequest`s
/// and `SignalResponse`s, with an access token the transport mints from an API key and secret — so that a storm of
/// thousands of signalling clients can hit any LiveKit-protocol server (`roomlink run|load --protocol livekit`).
///
/// ```swift
/// let transport = try LiveKitClientTransport(
///     servers: [SocketAddress(parsing: "127.0.0.1:7880")],
///     apiKey: "devkey",
///     secret: "secret"
/// )
/// let alice = LiveKitClient(id: "alice", loop: group.loop(for: "alice"), environment: .init(transport: transport))
/// ```
///
/// A login dials (a join, or a resume that names the participant's sid), a heartbeat is a `ping_req`, a logout a
/// `leave`; the server's `leave` is a kick, a reconnect request or a refused join by its action and reason
/// (its rules are a value, docs/livekit.md). No peer connection is made: a real LiveKit server removes a participant
/// whose peer connection has not connected a minute after its join, and the client hears that as a kick.
///
/// It injects no fault itself (wrap it in a `FaultInjectingTransport`, which drops what a black hole loses before it
/// reaches the socket). Clients must run on a `LibeventLoopGroup`'s loops.
public final class LiveKitClientTransport: ClientTransport, Sendable {
    /// How the transport's connections behave.
    public struct Configuration: Sendable {
        /// Local addresses the connections leave from (IP literals), spread over by client; empty: the system's
        /// choice.
        public var sourceAddresses: [String]
        /// Told of every connection attempt, handshake, failure, login answer and heartbeat round trip.
        public var observer: (any ConnectionObserver)?
        /// How long the minted access tokens are valid.
        public var tokenLifetime: Duration
        /// Which of several servers a room's connection goes to: picked by the client's ID (the default) or by the
        /// room, so that each room's participants meet on one node.
        public var routing: ServerRouting
        /// TLS on every connection (`wss://`), verified as the configuration says; `nil` for `ws://`.
        public var tls: TLSClientConfiguration?

        public init(
            sourceAddresses: [String] = [],
            observer: (any ConnectionObserver)? = nil,
            tokenLifetime: Duration = .seconds(6 * 3600),
            routing: ServerRouting = .byClient,
            tls: TLSClientConfiguration? = nil
        ) {
            self.sourceAddresses = sourceAddresses
            self.observer = observer
            self.tokenLifetime = tokenLifetime
            self.routing = routing
            self.tls = tls
        }
    }

    /// The servers a client may connect to; a client starts on one picked by its ID (or by its room:
    /// ``Configuration/routing``) and moves to the next when a connection fails.
    public let servers: [SocketAddress]
    /// The API key the clients' tokens name (`iss`).
    public let apiKey: String
    /// The API key's secret, which signs them.
    private let secret: String
    public let configuration: Configuration
    /// Random for each transport: the server outlives the run (`ClientTransport.sessionSalt`).
    public let sessionSalt: UInt64
    private let addresses: [ResolvedAddress]
    private let sources: [ResolvedAddress]
    private let chosen = LockedBox<[ObjectIdentifier: Int]>([:])
    /// Every live connection, by client, then by room.
    private let connections = LockedBox<[ObjectIdentifier: [String: LiveKitClientConnection]]>([:])
    private let frames = Atomic<Int>(0)
    /// The TLS context of every connection, with ``Configuration/tls`` (`wss://`).
    let tls: TLSContext?

    /// A transport to the LiveKit servers `servers` (one, or the nodes of one cluster), whose tokens `apiKey`'s
    /// `secret` signs.
    ///
    /// - Throws: `NetworkError.invalidAddress` when a server or a source address does not resolve;
    ///   `NetworkError.misuse` for an empty list; `NetworkError.tls` when TLS cannot be set up.
    public init(
        servers: [SocketAddress],
        apiKey: String,
        secret: String,
        configuration: Configuration = .init()
    )
        throws(NetworkError)
    {
        guard !servers.isEmpty else { throw .misuse("a client transport needs at least one server") }
        self.servers = servers
        self.apiKey = apiKey
        self.secret = secret
        self.configuration = configuration
        sessionSalt = UInt64.random(in: 1...UInt64.max)
        // A write to a socket its peer closed raises SIGPIPE; the write's error is handled instead.
        signal(SIGPIPE, SIG_IGN)
        var addresses: [ResolvedAddress] = []
        for server in servers { addresses.append(try server.resolved()) }
        self.addresses = addresses
        var sources: [ResolvedAddress] = []
        for source in configuration.sourceAddresses {
            let resolved = try SocketAddress(host: source, port: 0).resolved()
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

    // MARK: - ClientTransport

    /// A room's channel: nothing is dialled until its login.
    public func open(toRoom roomID: String, for client: any ClientEndpoint) -> (any RoomChannel)? {
        guard client.loop is LibeventLoop else { return nil }
        return Channel(room: roomID, identity: client.userID)
    }

    public func send(
        _ message: ClientMessage,
        on channel: any RoomChannel,
        from client: any ClientEndpoint
    )
        -> SendOutcome
    {
        guard let channel = channel as? Channel, let loop = client.loop as? LibeventLoop else { return .refused }
        if case .login(let login) = message {
            // Each login is a dial: the connection before it, if any, is given up (the server hears it close).
            channel.connection?.close()
            let connection = LiveKitClientConnection(
                client: client,
                channel: channel,
                login: login,
                loop: loop,
                transport: self
            )
            channel.connection = connection
            if connection.isLive {
                connections.withLock { $0[ObjectIdentifier(client), default: [:]][channel.room] = connection }
            }
            return .sent
        }
        guard let connection = channel.connection, connection.isLive else {
            // Nothing to close or to leave; anything else finds no connection, and the client knows at once.
            if case .logout = message { return .sent }
            return .refused
        }
        return connection.send(message) ? .sent : .refused
    }

    /// Closes the room's connection: its login or heartbeat went unanswered (one connection per room, so no other
    /// room keeps it alive).
    public func abandon(_ channel: any RoomChannel, from client: any ClientEndpoint) {
        (channel as? Channel)?.connection?.close()
    }

    /// Nothing to do: the server hears a connection close from its own socket.
    public func closed(_ channel: any RoomChannel, session: SessionID, from client: any ClientEndpoint) {}

    /// Closes `client`'s connections without telling it (its link went down); the server sees the sockets close.
    public func drop(_ client: any ClientEndpoint) {
        let live = connections.withLock { Array(($0[ObjectIdentifier(client)] ?? [:]).values) }
        for connection in live {
            if connection.loop.isInServiceThread {
                connection.close()
            } else {
                connection.loop.execute { connection.close() }
            }
        }
    }

    /// Frames sent and received so far (WebSocket messages, both ways).
    public var deliveredCount: Int { frames.load(ordering: .relaxed) }

    /// Closes every connection, each on its client's loop (shut the clients down first), and waits until they are
    /// closed. Call it before the clients' loop group shuts down.
    public func close() async {
        let live = connections.withLock { $0.values.flatMap(\.values) }
        for connection in live {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                connection.loop.execute {
                    connection.close()
                    done.resume()
                }
            }
        }
    }

    /// One room's channel of one client: the room's signalling state, which outlives each connection, and the
    /// connection now.
    final class Channel: RoomChannel, @unchecked Sendable {
        // Safe: `state` and `connection` are touched on the client's loop only (the client calls its transport from
        // its actor, which runs there; the connection's callbacks run there).
        let room: String
        var state: LiveKitClientState
        var connection: LiveKitClientConnection?

        init(room: String, identity: String) {
            self.room = room
            state = LiveKitClientState(identity: identity, room: room)
        }
    }

    // MARK: - For the connections

    var observer: (any ConnectionObserver)? { configuration.observer }

    func countFrame() {
        frames.add(1, ordering: .relaxed)
    }

    /// An access token for the channel's participant in its room, valid from a minute ago (clocks differ) for the
    /// configured lifetime.
    func token(for state: LiveKitClientState, hidden: Bool) -> String {
        let now = LiveKitClientConnection.wallMillis() / 1000
        return LiveKitAccessToken(
            apiKey: apiKey,
            identity: state.identity,
            notBefore: now - 60,
            expires: now + Int64(configuration.tokenLifetime.components.seconds),
            video: .init(roomJoin: true, room: state.room, hidden: hidden ? true : nil)
        ).signed(with: secret)
    }

    /// The server a new connection of `client` for `room` goes to, its index, and its `Host`.
    func address(for client: any ClientEndpoint, room: String) -> (ResolvedAddress, Int, String) {
        let index =
            chosen.withLock { $0[ObjectIdentifier(client)] }
            ?? configuration.routing.server(clientHash: client.endpointHash, room: room, count: addresses.count)
        return (addresses[index], index, servers[index].description)
    }

    /// The local address a connection leaves from, if the transport has source addresses.
    func source(spread: UInt64) -> ResolvedAddress? {
        sources.isEmpty ? nil : sources[Int(((spread &* 0x9E37_79B9_7F4A_7C15) >> 32) % UInt64(sources.count))]
    }

    /// A connection to server `index` failed or dropped: the client's next one goes to the next server.
    func moveOn(_ key: ObjectIdentifier, from index: Int) {
        guard addresses.count > 1 else { return }
        chosen.withLock { $0[key] = (index + 1) % addresses.count }
    }

    func forget(_ connection: LiveKitClientConnection) {
        let (client, room) = (connection.clientKey, connection.channel.room)
        connections.withLock { connections in
            guard connections[client]?[room] === connection else { return }
            connections[client]?[room] = nil
            if connections[client]?.isEmpty == true { connections[client] = nil }
        }
    }
}
