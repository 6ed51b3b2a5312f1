/// A `roomlink serve` — or several nodes of one cluster — that a scenario plays against over TCP.
public struct TCPServerTarget: Sendable {
    /// The server's addresses; each client starts on one and moves to the next when its connection fails.
    public var servers: [SocketAddress]
    /// The server's admin API, where the scenario's kicks, reconnect requests and token expiries go; without it a
    /// scenario that has any is refused by the server's side.
    public var admin: SocketAddress?
    /// The admin API's bearer token.
    public var adminToken: String?
    /// Local addresses the clients' connections leave from, spread over by client (to open more connections than
    /// one address's ephemeral ports allow); empty: the kernel's choice.
    public var sourceAddresses: [String]
    /// Which of ``servers`` each client's connection goes to: by client (the default) or by room.
    public var routing: ServerRouting
    /// Makes the clients' transport, told of every connection by the observer it is given, when the server speaks
    /// another protocol than RoomLink's own (LiveKit's signalling: `roomlink run --protocol livekit`); `nil`: a
    /// `TCPClientTransport` to ``servers``.
    public var makeTransport: (@Sendable (any ConnectionObserver) throws(RoomLinkError) -> any ClientTransport)?
    /// TLS on the clients' connections (`--server tls://HOST:PORT`) and on the admin API's; `nil` for plain TCP.
    public var tls: TLSClientConfiguration?

    public init(
        servers: [SocketAddress],
        admin: SocketAddress? = nil,
        adminToken: String? = nil,
        sourceAddresses: [String] = [],
        routing: ServerRouting = .byClient,
        tls: TLSClientConfiguration? = nil,
        makeTransport: (@Sendable (any ConnectionObserver) throws(RoomLinkError) -> any ClientTransport)? = nil
    ) {
        self.servers = servers
        self.admin = admin
        self.adminToken = adminToken
        self.sourceAddresses = sourceAddresses
        self.routing = routing
        self.tls = tls
        self.makeTransport = makeTransport
    }

    /// Checks that `scenario` can play against this target: what it does from the server's side (kicks, reconnect
    /// requests, token expiries) needs the admin API.
    ///
    /// - Throws: `RoomLinkError` (field `admin`) naming the first such entry when there is no ``admin``.
    public func check(_ scenario: Scenario) throws(RoomLinkError) {
        guard admin == nil else { return }
        for entry in scenario.timeline {
            let action: String
            switch entry.action {
            case .kick: action = "kick"
            case .expireToken: action = "expireToken"
            case .requestReconnect: action = "requestReconnect"
            default: continue
            }
            throw RoomLinkError(
                code: .invalidInput,
                field: "admin",
                message: "the scenario's \(action) at \(entry.at.roomLinkText) acts from the server's side: it needs "
                    + "the server's admin API"
            )
        }
    }
}

/// A remote server without an admin API: nothing in the scenario calls it (``TCPServerTarget/check(_:)``).
private final class NoAdministration: RoomAdministration {
    func kickOut(roomID: String, userIDs: [String]) {}
    func requestReconnect(roomID: String, userIDs: [String]) {}
    func expireToken(userID: String, inRooms roomIDs: [String]?) {}
}

extension ScenarioRunner {
    /// Points the run at `target` over TCP, on `group`'s loops (`roomlink run --server` and `load --server` do this):
    /// the clients get a `TCPClientTransport` (or the target's own transport) wrapped in a ``FaultInjectingTransport`` that carries the scenario's
    /// latency and jitter and plays its outages on the real sockets, the server-side actions go to the admin API, and the report gets the
    /// connections' statistics (`connections`).
    ///
    /// - Throws: `RoomLinkError` (field `server`) when the run's clients need more connections than this process's
    ///   open-file limit allows (split the population over processes: ``slice``), or when a source address is not
    ///   one; what ``TCPServerTarget/check(_:)`` throws.
    public mutating func playAgainst(_ target: TCPServerTarget, on group: LibeventLoopGroup) throws(RoomLinkError) {
        try target.check(scenario)
        let population = scenario.population?.clients ?? 0
        let needed = (slice.map { (population + $0.count - 1) / $0.count } ?? population) + scenario.users.count
        let possible = OpenFileLimit.connections(loops: group.loops.count)
        guard needed <= possible else {
            throw RoomLinkError(
                code: .invalidInput,
                field: "server",
                message: "server: \(needed) clients need \(needed) connections, and this process may open \(possible) "
                    + "(its open-file limit); split the population over several processes"
            )
        }
        // The population's first login window is the fill; heartbeats after it are the steady state's.
        let windows = scenario.timeline.compactMap { entry -> (start: Duration, end: Duration)? in
            guard case .population(_, let over, _) = entry.target, case .login = entry.action else { return nil }
            return (entry.at, entry.at + over)
        }
        let connections = ConnectionStatistics(
            fillEnds: windows.min { $0.start < $1.start }?.end,
            timerLateness: { group.timerLatenessTally }
        )
        let transport: any ClientTransport
        if let makeTransport = target.makeTransport {
            transport = try makeTransport(connections)
        } else {
            do {
                transport = try TCPClientTransport(
                    servers: target.servers,
                    dialect: scenario.dialect,
                    configuration: .init(
                        sourceAddresses: target.sourceAddresses,
                        observer: connections,
                        routing: target.routing,
                        tls: target.tls
                    )
                )
            } catch {
                throw RoomLinkError(code: .invalidInput, field: "server", message: "server: \(error.description)")
            }
        }
        let administration: any RoomAdministration
        do {
            administration =
                try target.admin.map { address throws(NetworkError) in
                    // Over HTTPS when the server's listeners are TLS (one certificate serves both).
                    if let tls = target.tls {
                        return try AdminClient(
                            address: address,
                            token: target.adminToken,
                            loop: group.eventLoops[0],
                            tls: tls
                        )
                    }
                    return AdminClient(address: address, token: target.adminToken, loop: group.eventLoops[0])
                } ?? NoAdministration()
        } catch {
            throw RoomLinkError(code: .invalidInput, field: "admin", message: "admin: \(error.description)")
        }
        // The scenario's faults, latency and jitter wrap the sockets; the path is the same for every share.
        let network = FaultInjectingTransport(
            wrapping: transport,
            latency: scenario.network.latency,
            jitter: scenario.network.jitter,
            seed: scenario.seed
        )
        remote = RemoteServer(network: { _ in network }, administration: administration, connections: connections)
    }
}
