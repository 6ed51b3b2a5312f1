/// Where a served node keeps the presence it shares with other nodes (RoomLinkRedis' `RedisPresence`): what a
/// ``ServedNode`` waits for at start and releases last at its end.
public protocol NodePresence: AnyObject, Sendable {
    /// The node's name in its cluster.
    var nodeID: String { get }
    /// Waits, at most `limit`, for the store's first connections and the node's registration, and says how they
    /// stand.
    func awaitFirstConnections(within limit: Duration) async -> NodePresenceReadiness
    /// Closes the connections to the store (after the server said goodbye to its clients, which released them).
    func shutdown() async
    /// One line of what the node did with the store, for the end of its run.
    var summary: String { get }
}

/// How a node's presence store stands at start.
public enum NodePresenceReadiness: Sendable, Hashable {
    /// Reached, and the node's ID registered.
    case reached
    /// Not reached yet: the node serves, answering logins busy until it is.
    case notReachedYet
    /// Another live node of the cluster uses this node's ID.
    case nodeIDInUse
}

/// One served node's life, in order — what `roomlink serve` is, as a library type: ``start(listen:admin:adminToken:presenceWait:)``
/// listens, opens the admin API and waits for the presence store; ``run(until:whenStopping:)`` serves until told to
/// stop, then shuts down in order — a goodbye to every client (which releases their presence), the admin API, then
/// the store — and returns the server's final statistics.
///
/// ```swift
/// let node = ServedNode(server: NetworkServer(group: group, configuration: configuration), presence: nil)
/// let addresses = try await node.start(listen: SocketAddress(host: "127.0.0.1", port: 7000))
/// let (signal, statistics) = await node.run(until: { await TerminationSignal.next() })
/// ```
///
/// A start that fails shuts down what it had started.
public final class ServedNode: Sendable {
    /// Why a node did not start.
    public enum StartFailure: Error, Sendable, CustomStringConvertible {
        /// The server could not listen.
        case listen(NetworkError)
        /// The admin API could not open.
        case admin(NetworkError)
        /// Another live node of the cluster uses this node's ID.
        case nodeIDInUse(String)

        public var description: String {
            switch self {
            case .listen(let error): error.description
            case .admin(let error): "--admin: \(error.description)"
            case .nodeIDInUse(let id): "--node-id \(id): another live node of this cluster uses this ID"
            }
        }
    }

    /// Where a started node listens.
    public struct Addresses: Sendable, Hashable {
        /// The server's address.
        public var server: SocketAddress
        /// The admin API's address, when it is open.
        public var admin: SocketAddress?
        /// Whether the presence store was reached at start (`true` without one).
        public var presenceReached: Bool
    }

    /// The server the node runs.
    public let server: NetworkServer
    /// The presence the node shares with other nodes, if it is one of a cluster.
    public let presence: (any NodePresence)?

    /// A node of `server`, sharing `presence` (the one the server's configuration names as its cluster).
    public init(server: NetworkServer, presence: (any NodePresence)?) {
        self.server = server
        self.presence = presence
    }

    /// Listens on `listen`, opens the admin API on `admin` (with `adminToken`), and waits, at most `presenceWait`,
    /// for the presence store. Returns the addresses bound.
    ///
    /// - Throws: ``StartFailure``, having shut down what had started.
    public func start(
        listen: SocketAddress,
        admin: SocketAddress? = nil,
        adminToken: String? = nil,
        presenceWait: Duration = .seconds(1)
    ) async throws(StartFailure) -> Addresses {
        var addresses: Addresses
        do {
            addresses = Addresses(server: try await server.listen(on: listen), admin: nil, presenceReached: true)
        } catch {
            await stop()
            throw .listen(error)
        }
        if let admin {
            do {
                addresses.admin = try await server.startAdmin(on: admin, token: adminToken)
            } catch {
                await stop()
                throw .admin(error)
            }
        }
        guard let presence else { return addresses }
        switch await presence.awaitFirstConnections(within: presenceWait) {
        case .reached: break
        case .notReachedYet: addresses.presenceReached = false
        case .nodeIDInUse:
            await stop()
            throw .nodeIDInUse(presence.nodeID)
        }
        return addresses
    }

    /// Serves until `stop` returns, then shuts down in order: `whenStopping` hears the reason while the connections
    /// are still open; every client gets a goodbye (releasing its presence) and the admin API closes; then the
    /// presence store. Returns `stop`'s reason and the server's final statistics.
    @discardableResult
    public func run<Reason: Sendable>(
        until stop: () async -> Reason,
        whenStopping: (Reason) -> Void = { _ in }
    ) async -> (reason: Reason, statistics: NetworkServerStatistics) {
        let reason = await server.run(until: stop, whenStopping: whenStopping)
        await presence?.shutdown()
        return (reason, server.statistics)
    }

    /// The ordered shutdown, without serving: the server, then the store.
    private func stop() async {
        await server.shutdown()
        await presence?.shutdown()
    }
}
