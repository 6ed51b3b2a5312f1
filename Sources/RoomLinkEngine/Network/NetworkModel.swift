/// What happens to one message on a simulated network.
public enum Transit: Sendable, Hashable {
    /// It arrives after `delay`.
    case delivered(after: Duration)
    /// It is lost on the way; neither side is told.
    case lost
    /// The sender's or receiver's connection is down, and the sender knows at once.
    case refused
}

/// A network's conditions: latency, jitter and loss for every message, and a link state per client.
///
/// A value confined to whoever owns it (one per run in virtual time, or one per loop in real time). Every
/// random draw comes from a `SeededRandom` stream per sending client, so the fate of a client's messages does not
/// depend on how other clients' messages interleave — in virtual time the same seed gives the same network.
public struct NetworkModel: Sendable {
    /// The conditions every message sees.
    public var conditions: NetworkConditions
    private var links: [String: LinkState] = [:]
    private var streams: [String: SeededRandom] = [:]
    private let seed: UInt64

    /// Creates a network where every link is up.
    public init(conditions: NetworkConditions, seed: UInt64) {
        self.conditions = conditions
        self.seed = seed
    }

    /// The link state of `client` (up unless set).
    public func link(of client: String) -> LinkState {
        links[client] ?? .up
    }

    /// Sets the link state of `client`.
    public mutating func setLink(_ state: LinkState, for client: String) {
        links[client] = state == .up ? nil : state
    }

    /// Decides the fate of one message on a link in state `link`, drawing from a generator seeded by `key` alone.
    ///
    /// No state is kept: a message identified by the same `key` (its endpoints, direction and send time) always
    /// meets the same fate, so a virtual-time run is reproducible however messages interleave, and a transport
    /// needs no per-client random stream.
    public func transit(link: LinkState, key: @autoclosure () -> UInt64) -> Transit {
        switch link {
        case .down: return .refused
        case .blackhole: return .lost
        case .up: break
        }
        let jitter = conditions.jitter.nanosecondsClamped
        guard conditions.loss > 0 || jitter > 0 else { return .delivered(after: conditions.latency) }
        // Two SplitMix64 outputs of (seed, key): no generator to set up per message (this runs for every heartbeat).
        // The key is read only here: with neither loss nor jitter (a load test's usual network) no message pays
        // for it (its sender's clock and identity).
        let first = Self.mix(seed ^ key())
        if conditions.loss > 0, Double(first >> 11) * 0x1p-53 < conditions.loss { return .lost }
        guard jitter > 0 else { return .delivered(after: conditions.latency) }
        let second = Self.mix(first)
        // Uniform in [0, jitter]: the high half of a 64×64-bit product (bias below 2^-40 for any jitter in ns).
        let extra = Int64(second.multipliedFullWidth(by: UInt64(jitter) + 1).high)
        return .delivered(after: conditions.latency + .nanoseconds(extra))
    }

    /// SplitMix64's finaliser of `value + golden ratio`.
    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Decides the fate of one message between `client` and the server, in either direction.
    ///
    /// A `down` link refuses it; a `blackhole` loses it; otherwise it is lost with probability `loss`, or
    /// delivered after `latency` plus a uniform jitter in `[0, jitter]`.
    public mutating func transit(for client: String) -> Transit {
        switch link(of: client) {
        case .down: return .refused
        case .blackhole: return .lost
        case .up: break
        }
        var random = streams[client] ?? SeededRandom(seed: seed, stream: StableHash.fnv1a(client))
        defer { streams[client] = random }
        if conditions.loss > 0, Double.random(in: 0..<1, using: &random) < conditions.loss { return .lost }
        let jitter = conditions.jitter.nanosecondsClamped
        let extra = jitter > 0 ? Int64.random(in: 0...jitter, using: &random) : 0
        return .delivered(after: conditions.latency + .nanoseconds(extra))
    }
}
