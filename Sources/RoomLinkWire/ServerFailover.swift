/// Which of a cluster's servers each client's next connection goes to, as a value: a client starts on the server
/// its routing picks, and moves to the next one (round the list) whenever a connection fails or drops, so that a
/// node that went away is left for the others. The socket transport keeps one, behind its lock, and asks it at
/// every dial; tests drive it alone.
public struct ServerFailover<Client: Hashable & Sendable>: Sendable {
    /// How many servers there are.
    public let count: Int
    /// The server each client that moved on goes to next; a client not here goes where its routing picks.
    private var next: [Client: Int] = [:]

    /// Failover over `count` servers (at least one).
    public init(count: Int) {
        precondition(count > 0, "failover needs a server")
        self.count = count
    }

    /// The server `client`'s next connection goes to: where it moved on to, or else `routed` (its routing's pick).
    public func server(for client: Client, routed: Int) -> Int {
        next[client] ?? routed
    }

    /// `client`'s connection to server `index` failed or dropped: its next one goes to the next server. With one
    /// server there is nowhere else to go, and nothing is kept.
    public mutating func moveOn(_ client: Client, from index: Int) {
        guard count > 1 else { return }
        next[client] = (index + 1) % count
    }
}
