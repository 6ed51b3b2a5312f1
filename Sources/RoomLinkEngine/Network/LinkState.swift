/// The state of one client's network link (contract §1, the `networkDown`, `networkUp` and `blackhole` actions).
public enum LinkState: Sendable, Hashable, CustomStringConvertible {
    /// Messages travel with the network's latency, jitter and loss.
    case up
    /// The connection is closed and the client knows at once: sending fails, nothing arrives.
    case down
    /// Messages are silently lost in both directions; the client learns only from missed heartbeats.
    case blackhole

    /// The state as a byte, for a client to keep in an atomic (``InProcessClient/keptLinkState``): `up` is 0.
    var byte: UInt8 {
        switch self {
        case .up: 0
        case .down: 1
        case .blackhole: 2
        }
    }

    /// The state ``byte`` gave.
    init(byte: UInt8) {
        switch byte {
        case 1: self = .down
        case 2: self = .blackhole
        default: self = .up
        }
    }

    public var description: String {
        switch self {
        case .up: "up"
        case .down: "down"
        case .blackhole: "blackhole"
        }
    }
}
