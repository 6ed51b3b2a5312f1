import Foundation

/// How long an outage lasts, for each user it strikes (a timeline entry's `"for"`): fixed, uniform in a range, or
/// exponential with a mean — drawn per user from the scenario's seed, so a run stays reproducible.
public enum OutageLength: Sendable, Hashable {
    case fixed(Duration)
    /// Uniform in `lower...upper`.
    case uniform(Duration, Duration)
    /// Exponential with this mean (memoryless: most outages short, a few long).
    case exponential(mean: Duration)

    /// One draw.
    public func draw(using random: inout SeededRandom) -> Duration {
        switch self {
        case .fixed(let length):
            return length
        case .uniform(let lower, let upper):
            let low = lower.nanosecondsClamped
            return .nanoseconds(Int64.random(in: low...max(low, upper.nanosecondsClamped), using: &random))
        case .exponential(let mean):
            // Inverse transform; 1 − u is in (0, 1], so the logarithm is finite.
            let u = Double.random(in: 0..<1, using: &random)
            // The tail is unbounded; a draw past the longest scenario means "for the rest of the run".
            let draw = -log(1 - u) * Double(mean.nanosecondsClamped)
            return .nanoseconds(Int64(min(draw, Double(ScenarioLimits.maximumDuration.nanosecondsClamped))))
        }
    }

    /// The text a scenario writes for it: `"30s"`, `{"uniform": ["10s", "1m"]}`, `{"exponential": "30s"}`.
    var jsonText: String {
        switch self {
        case .fixed(let length): "\"\(length.roomLinkText)\""
        case .uniform(let lower, let upper): "{\"uniform\": [\"\(lower.roomLinkText)\", \"\(upper.roomLinkText)\"]}"
        case .exponential(let mean): "{\"exponential\": \"\(mean.roomLinkText)\"}"
        }
    }
}
