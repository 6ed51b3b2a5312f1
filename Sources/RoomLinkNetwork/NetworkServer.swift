public import Logging
public import RoomLinkEngine
public import RoomLinkLibevent
import RoomLinkRuntime
import RoomLinkWire

#if canImport(Glibc)
import Glibc
#endif

/// RoomLink's server on a real network: the same room actors and server state machines as in one process, reached
/// by clients over TCP in RoomLink's wire protocol (`docs/protocol.md`), on the libevent loops that run the rooms.
///
/// ```swift
/// let server = NetworkServer(group: group, configuration: .init(dialect: .zego))
/// let address = try await server.listen(on: SocketAddress(host: "127.0.0.1", port: 0))
/// // … clients connect to `address` …
/// await server.shutdown()  // goodbye to every client, then close
/// ```
///
/// A process that only serves hands its lifecycle to ``run(until:whenStopping:)``: it returns after the graceful
/// shutdown that SIGTERM or SIGINT asks for (``TerminationSignal``).
///
/// Each loop accepts connections on the one port (`SO_REUSEPORT`), or the first loop accepts and hands them to the
/// loops in turn (``AcceptMode``). A new connection waits (peeking) for its hello and first login, and is then served
/// on the loop of that login's room (``Configuration/servesOnRoomLoop``), so that its frames and the room's answers
/// cross no thread; a frame for a room on another loop hops there. Rooms are placed as `RoomServer` places them.
/// Shut the server down before its loop group. Creating a server ignores SIGPIPE in the process (a write to a closed
/// socket fails instead).
public final class NetworkServer: Sendable {
    /// The rooms: kick users, expire tokens, read members.
    public let rooms: RoomServer
    /// The room callbacks the server sends to the app's backend, if any.
    public let callbacks: RoomCallbacks?
    public let configuration: Configuration
    package let transport: TCPServerTransport
    let group: LibeventLoopGroup
    private let address = LockedBox<SocketAddress?>(nil)
    private let admin = LockedBox<AdminServer?>(nil)

    /// How a network server runs.
    public struct Configuration: Sendable {
        /// The dialect the server speaks: a client's hello must name it (or none).
        public var dialect: DialectName
        /// The server's timings; the dialect's by default.
        public var timings: ServerTimings
        /// The heartbeat interval the server tells clients in its hello (`nil` for a dialect without heartbeats);
        /// the dialect's by default.
        public var heartbeatInterval: Duration?
        /// The valid tokens of each user ID; without a table, tokens are not checked (a renewal needs one not empty).
        public var auth: AuthTable?
        /// Signed tokens checked as a vendor's cloud checks them (`RoomLinkTokens`' verifiers: `serve --app-id …
        /// --app-certificate …` or `--server-secret …`), in place of ``auth``. A token's expiry is read in Unix time on
        /// the server's clock: the wall clock when the server starts, running on at the loops' time scale.
        public var tokenVerifier: (any TokenVerifier)?
        /// Capacity and admission control, as the simulated server's (contract §9).
        public var policy: ServerPolicy
        /// How long a new connection may take to log in before it is closed.
        public var loginTimeout: Duration
        /// How many bytes may wait for a client to read before the server closes its connection.
        public var maximumOutputBuffer: Int
        /// How many rooms one connection may log in to.
        public var maximumRoomsPerConnection: Int
        /// For a dialect whose media flows continuously (Agora): how often clients send media frames; three intervals
        /// without one is the member's data stopping. The dialect's by default (500 ms for Agora, `nil` otherwise).
        public var mediaInterval: Duration?
        /// The kernel's send buffer for each connection (`SO_SNDBUF`), when set; the system's (autotuned) otherwise.
        /// Smaller holds less memory per slow client.
        public var socketSendBuffer: Int?
        /// How long a closing connection has to write its goodbye.
        public var closeGrace: Duration
        /// The listen backlog (the kernel caps it at `net.core.somaxconn`).
        public var backlog: Int32
        public var acceptMode: AcceptMode
        /// Whether a new connection waits (peeking) for its first login, to be served on the loop of that login's
        /// room: its frames and the room's answers then cross no thread. On by default; off, a connection is served
        /// where it was accepted (``AcceptMode``), and a frame for a room on another loop hops there.
        public var servesOnRoomLoop: Bool
        /// Where connections' closes and the server's troubles are logged.
        public var logger: Logger
        /// The cluster the server is one node of (`roomlink serve --redis`: `RedisPresence`), if any.
        public var cluster: (any RoomCluster)?
        /// TLS on every connection the server accepts, and on its admin API (`serve --tls-cert --tls-key`); `nil`
        /// for plain TCP. A certificate or key that cannot be read makes ``NetworkServer/listen(on:)`` throw.
        public var tls: TLSServerConfiguration?

        public init(
            dialect: DialectName,
            timings: ServerTimings? = nil,
            heartbeatInterval: Duration?? = nil,
            auth: AuthTable? = nil,
            policy: ServerPolicy = .unlimited,
            loginTimeout: Duration = .seconds(10),
            maximumOutputBuffer: Int = 256 * 1024,
            maximumRoomsPerConnection: Int = 64,
            closeGrace: Duration = .seconds(2),
            backlog: Int32 = 4096,
            acceptMode: AcceptMode = .reusePort,
            logger: Logger = Logger(label: "roomlink.serve")
        ) {
            self.dialect = dialect
            let engine = dialect.engineTimings()
            self.timings = timings ?? engine.server
            self.heartbeatInterval = heartbeatInterval ?? engine.heartbeatInterval
            self.mediaInterval = self.timings.continuousData ? .milliseconds(500) : nil
            self.auth = auth
            self.policy = policy
            self.loginTimeout = loginTimeout
            self.maximumOutputBuffer = maximumOutputBuffer
            self.maximumRoomsPerConnection = maximumRoomsPerConnection
            self.closeGrace = closeGrace
            self.backlog = backlog
            self.acceptMode = acceptMode
            self.servesOnRoomLoop = true
            self.logger = logger
        }
    }

    /// How connections reach the loops.
    public enum AcceptMode: String, Sendable, CaseIterable {
        /// A listener per loop on one port (`SO_REUSEPORT`): the kernel spreads connections over the loops.
        case reusePort
        /// One listener on the first loop, which hands each connection to the next loop in turn.
        case handOff
    }

    /// Creates a server on `group`'s loops; it listens once ``listen(on:)`` is called.
    public convenience init(group: LibeventLoopGroup, configuration: Configuration) {
        self.init(group: group, configuration: configuration, served: nil)
    }

    /// Creates a server on `group`'s loops whose rooms' membership changes go to the app's backend as `callbacks`
    /// (`roomlink serve --callback URL`).
    public convenience init(group: LibeventLoopGroup, configuration: Configuration, callbacks: RoomCallbacks) {
        self.init(group: group, configuration: configuration, served: nil, membershipObserver: callbacks)
    }

    /// A server whose clients speak `served` (another wire protocol than RoomLink's own, which `nil` is), whose rooms'
    /// membership `membershipObserver` hears.
    package init(
        group: LibeventLoopGroup,
        configuration: Configuration,
        served: (any ServedProtocol)?,
        membershipObserver: (any RoomMembershipObserver)? = nil
    ) {
        self.configuration = configuration
        self.group = group
        callbacks = membershipObserver as? RoomCallbacks
        // A write to a socket its peer closed raises SIGPIPE, which would end the process; the write's error is
        // handled instead.
        signal(SIGPIPE, SIG_IGN)
        let hello = ServerHello(
            dialect: configuration.dialect,
            heartbeatInterval: configuration.heartbeatInterval ?? .zero,
            heartbeatTimeout: configuration.timings.heartbeatTimeout,
            mediaInterval: configuration.mediaInterval
        )
        transport = TCPServerTransport(group: group, configuration: configuration, hello: hello, served: served)
        rooms = RoomServer(
            group: group,
            transport: transport,
            timings: configuration.timings,
            auth: configuration.auth,
            tokens: configuration.tokenVerifier.map { verifier in
                let wall = Int64(time(nil))
                return VerifiedTokens(verifier: verifier, unixTimeAtZero: wall - group.now.nanoseconds / 1_000_000_000)
            },
            policy: configuration.policy,
            cluster: configuration.cluster,
            // A process of its own: its rooms' lives (room_session_id) are not an earlier process's.
            epoch: UInt64.random(in: 1...(1 << 48)),
            membershipObserver: membershipObserver
        )
        rooms.nodes?.start(at: group.now)
    }

    /// Starts accepting connections on `address` (port 0: one the system picks), and returns the address bound.
    ///
    /// - Throws: ``NetworkError`` when the address does not resolve, cannot be bound, or the server already listens.
    @discardableResult
    public func listen(on address: SocketAddress) async throws(NetworkError) -> SocketAddress {
        guard self.address.withLock({ $0 == nil }) else { throw .misuse("the server is already listening") }
        let bound = try await transport.listen(on: address)
        self.address.withLock { $0 = bound }
        return bound
    }

    /// The address the server listens on, once it does.
    public var localAddress: SocketAddress? { address.withLock { $0 } }

    /// What the server has done so far.
    public var statistics: NetworkServerStatistics { transport.statistics }

    /// Opens the admin API on HTTP at `address` (see `docs/protocol.md`, "Admin API"): kicks, token expiry,
    /// reconnect requests, members, `/healthz` and `/metrics`. With a `token`, every path but `/healthz` needs
    /// `Authorization: Bearer <token>`; without one, `address` must be on loopback. Returns the address bound.
    ///
    /// - Throws: ``NetworkError`` when the address cannot be bound, needs a token, or an admin API is already open.
    @discardableResult
    public func startAdmin(on address: SocketAddress, token: String?) async throws(NetworkError) -> SocketAddress {
        guard admin.withLock({ $0 == nil }) else { throw .misuse("the admin API is already open") }
        // Never plain HTTP in place of the TLS the configuration asks for.
        if let error = transport.tlsError { throw .tls(error) }
        let (server, bound) = try await AdminServer.start(
            on: group.eventLoops[0],
            at: address,
            token: token,
            server: self,
            metrics: ServerMetrics(server: self, group: group)
        )
        admin.withLock { $0 = server }
        return bound
    }

    /// Stops accepting, says goodbye (`serverShutdown`) to every client, and waits until each goodbye is written or
    /// the close grace has passed; closes the admin API. Call it before shutting the loop group down.
    public func shutdown() async {
        await transport.close()
        if let admin = admin.withLock({ $0 }) { await admin.stop() }
        admin.withLock { $0 = nil }
    }

    /// Serves until `stop` returns, then shuts down gracefully — goodbye to every client, the admin API closed — and
    /// returns what `stop` returned, so that a process's lifecycle is one call. `whenStopping` hears the reason first,
    /// while the connections are still open (to say how many get a goodbye). Listen first.
    ///
    /// ```swift
    /// try await server.listen(on: address)
    /// let reason = await server.run(until: { await TerminationSignal.next() })  // "SIGTERM"
    /// ```
    ///
    /// A `stop` that honours cancellation makes cancelling the calling task a graceful shutdown too.
    @discardableResult
    public func run<Reason: Sendable>(
        until stop: () async -> Reason,
        whenStopping: (Reason) -> Void = { _ in }
    ) async -> Reason {
        let reason = await stop()
        whenStopping(reason)
        await shutdown()
        return reason
    }

    /// Stops at once, as a killed process does: closes the listeners and every connection without a goodbye (clients
    /// see their connections drop), and the admin API. For tests and drills of a node's death.
    public func abandon() async {
        await transport.close(abandoning: true)
        if let admin = admin.withLock({ $0 }) { await admin.stop() }
        admin.withLock { $0 = nil }
    }
}
