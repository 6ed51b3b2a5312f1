/// The state of one client's network link (contract §1, the `networkDown`, `networkUp` and `blackhole` actions).
public enum LinkState: Sendable, Hashable, CustomStringConvertible {
    /// Messages travel with the network's latency, jitter and loss.
    case up
    /// The connection is closed and the client knows at once: sending fails, nothing arrives.
    case down
    /// Messages are silently lost in both directions; the client learns only from missed heartbeats.
    case blackhole

    public var description: String {
        switch self {
        case .up: "up"
        case .down: "down"
        case .blackhole: "blackhole"
        }
    }
}
