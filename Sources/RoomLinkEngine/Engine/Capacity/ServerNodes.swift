/// The simulated server's nodes (contract §9), shared by its rooms: each node's ``ServerNode`` behind its own lock, for
/// rooms on any loop. A room finds its node once, when it is created (``ServerPolicy/node(of:)``).
public final class ServerNodes: Sendable {
    public let policy: ServerPolicy
    private let nodes: [LockedBox<ServerNode>]

    /// Nodes with `policy`'s capacity, whose logins cost `loginProcessing` unless the capacity says otherwise.
    public init(policy: ServerPolicy, loginProcessing: Duration) {
        self.policy = policy
        nodes = (0..<max(1, policy.nodes)).map { _ in
            LockedBox(ServerNode(policy: policy, loginProcessing: loginProcessing))
        }
    }

    /// The node serving `roomID`.
    func node(of roomID: String) -> LockedBox<ServerNode> {
        nodes[policy.node(of: roomID)]
    }

    /// Sets the instant from which every node counts its seconds (the scenario's start).
    public func start(at origin: RuntimeInstant) {
        for node in nodes { node.withLock { $0.start(at: origin) } }
    }

    /// What each node went through so far, by node index.
    public var statistics: [ServerNodeStatistics] {
        nodes.map { node in node.withLock { $0.statistics } }
    }
}
