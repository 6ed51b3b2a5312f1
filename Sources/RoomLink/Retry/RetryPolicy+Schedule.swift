#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension RetryPolicy {
    /// How random an exponential backoff is (AWS's "Exponential Backoff And Jitter").
    public enum Jitter: String, Sendable, Hashable, CaseIterable {
        /// Exactly `min(cap, base × multiplier^k)`.
        case none
        /// Uniform in `[0, d]` for the capped exponential delay `d`: spreads a herd the most.
        case full
        /// Uniform in `[d/2, d]`: never retries sooner than half the backoff.
        case equal
    }

    /// The delays between attempts. Attempt 1 (the first reconnection) comes at once for the computed schedules;
    /// a fixed schedule states every delay itself.
    public struct Schedule: Sendable, Hashable {
        private enum Kind: Sendable, Hashable {
            case exponential(base: Int64, cap: Int64, multiplier: Double, jitter: Jitter)
            case decorrelated(base: Int64, cap: Int64)
            case fixed(delays: [Int64], jitter: Int64, jitterFromAttempt: Int)
        }

        private let kind: Kind

        /// Exponential backoff: attempt `n ≥ 2` waits `min(cap, base × multiplier^(n−2))`, jittered.
        public static func exponential(
            base: Duration,
            cap: Duration,
            multiplier: Double = 2,
            jitter: Jitter
        )
            -> Schedule
        {
            Schedule(
                kind: .exponential(
                    base: base.nanosecondsClamped,
                    cap: cap.nanosecondsClamped,
                    multiplier: multiplier,
                    jitter: jitter
                )
            )
        }

        /// Decorrelated jitter (AWS): attempt `n ≥ 2` waits `min(cap, uniform(base, previous × 3))`, starting from
        /// `previous = base`.
        public static func decorrelatedJitter(base: Duration, cap: Duration) -> Schedule {
            Schedule(kind: .decorrelated(base: base.nanosecondsClamped, cap: cap.nanosecondsClamped))
        }

        /// Fixed delays: attempt `n` waits `delays[n−1]` (the last one repeats), plus `uniform(0, jitter)` from
        /// attempt `jitterFromAttempt` on. LiveKit's client-sdk-js default is
        /// `.fixed([0, 0.3, 1.2, 2.7, 4.8, 7, 7, 7, 7, 7] s, jitter: 1 s, jitterFromAttempt: 3)` with 10 attempts.
        public static func fixed(
            _ delays: [Duration],
            jitter: Duration = .zero,
            jitterFromAttempt: Int = 1
        )
            -> Schedule
        {
            Schedule(
                kind: .fixed(
                    delays: delays.map(\.nanosecondsClamped),
                    jitter: jitter.nanosecondsClamped,
                    jitterFromAttempt: jitterFromAttempt
                )
            )
        }

        func validate() throws(RoomLinkError) {
            switch kind {
            case .exponential(let base, let cap, let multiplier, _):
                try Self.validate(base: base, cap: cap)
                guard multiplier.isFinite, multiplier >= 1 else {
                    throw .invalidArgument("retry.multiplier", "a number of at least 1", got: "\(multiplier)")
                }
            case .decorrelated(let base, let cap):
                try Self.validate(base: base, cap: cap)
            case .fixed(let delays, let jitter, let jitterFromAttempt):
                guard !delays.isEmpty else { throw .invalidArgument("retry.delays", "at least one delay", got: "[]") }
                if let negative = delays.first(where: { $0 < 0 }) {
                    throw .invalidArgument(
                        "retry.delays",
                        "durations of zero or more",
                        got: "\(Duration.nanoseconds(negative))"
                    )
                }
                guard jitter >= 0 else {
                    throw .invalidArgument(
                        "retry.jitter",
                        "a duration of zero or more",
                        got: "\(Duration.nanoseconds(jitter))"
                    )
                }
                guard jitterFromAttempt >= 1 else {
                    throw .invalidArgument("retry.jitterFromAttempt", "at least 1", got: "\(jitterFromAttempt)")
                }
            }
        }

        private static func validate(base: Int64, cap: Int64) throws(RoomLinkError) {
            guard base > 0 else {
                throw .invalidArgument("retry.base", "a positive duration", got: "\(Duration.nanoseconds(base))")
            }
            guard cap >= base else {
                throw .invalidArgument(
                    "retry.cap",
                    "a duration of at least the base (\(Duration.nanoseconds(base)))",
                    got: "\(Duration.nanoseconds(cap))"
                )
            }
        }

        /// Where decorrelated jitter starts.
        var baseNanoseconds: Int64 {
            switch kind {
            case .exponential(let base, _, _, _), .decorrelated(let base, _): base
            case .fixed: 0
            }
        }

        /// The delay before attempt `attempt` (1-based).
        func delay(beforeAttempt attempt: Int, previous: inout Int64, random: inout SeededRandom) -> Duration {
            switch kind {
            case .exponential(let base, let cap, let multiplier, let jitter):
                guard attempt >= 2 else { return .zero }
                let raw = min(Double(cap), Double(base) * pow(multiplier, Double(attempt - 2)))
                let capped = Int64(raw)
                switch jitter {
                case .none: return .nanoseconds(capped)
                case .full: return .nanoseconds(Int64.random(in: 0...capped, using: &random))
                case .equal:
                    return .nanoseconds(capped / 2 + Int64.random(in: 0...(capped - capped / 2), using: &random))
                }
            case .decorrelated(let base, let cap):
                guard attempt >= 2 else { return .zero }
                let upper = max(base, min(cap, previous.multipliedReportingOverflow(by: 3).partialValue))
                let next = min(cap, Int64.random(in: base...upper, using: &random))
                previous = next
                return .nanoseconds(next)
            case .fixed(let delays, let jitter, let jitterFromAttempt):
                let fixed = delays[min(attempt, delays.count) - 1]
                guard jitter > 0, attempt >= jitterFromAttempt else { return .nanoseconds(fixed) }
                return .nanoseconds(fixed + Int64.random(in: 0...jitter, using: &random))
            }
        }
    }
}
