/// The reconnection policies people compare, as presets (`"retry": {"preset": …}` in a scenario).
///
/// RoomLink's first attempt of an episode is never delayed (contract §5); a library whose first retry waits (Phoenix,
/// Socket.IO) has its delays apply from the second attempt.
extension RetryPolicy {
    /// Agora's default: retry until 20 minutes after `interrupted` (contract §3), at once and then with exponential
    /// backoff from 1 s, doubling, capped at 10 s, equal jitter. Agora documents the limit, not the intervals.
    public static let agoraDefault = try! RetryPolicy(
        schedule: .exponential(base: .seconds(1), cap: .seconds(10), multiplier: 2, jitter: .equal),
        maxElapsed: .seconds(20 * 60)
    )

    /// LiveKit client-sdk-js `DefaultReconnectPolicy`: 10 attempts after 0, 0.3, 1.2, 2.7, 4.8, 7, 7, 7, 7, 7 s,
    /// plus `uniform(0, 1 s)` from the third attempt; then give up.
    public static let liveKitJS = try! RetryPolicy(
        schedule: .fixed(
            [0, 300, 1200, 2700, 4800, 7000, 7000, 7000, 7000, 7000].map { .milliseconds($0) },
            jitter: .seconds(1),
            jitterFromAttempt: 3
        ),
        maxAttempts: 10
    )

    /// LiveKit Swift SDK: 10 attempts, delays on an ease-out-circ curve from 0.3 s to 7 s, plus up to 10 %
    /// jitter (`computeReconnectDelay`).
    public static let liveKitSwift = try! RetryPolicy(
        schedule: .easeOutCirc(base: .milliseconds(300), cap: .seconds(7), steps: 10, jitterFraction: 0.1),
        maxAttempts: 10
    )

    /// LiveKit Rust SDK: 10 attempts, exponential from 0.3 s doubling with full jitter, capped at 7 s.
    public static let liveKitRust = try! RetryPolicy(
        schedule: .exponential(base: .milliseconds(300), cap: .seconds(7), multiplier: 2, jitter: .full),
        maxAttempts: 10
    )

    /// Phoenix.js `reconnectAfterMs`: 10, 50, 100, 150, 200, 250, 500 ms, 1, 2 s, then 5 s for ever; no jitter.
    public static let phoenix = try! RetryPolicy(
        schedule: .fixed([0, 10, 50, 100, 150, 200, 250, 500, 1000, 2000, 5000].map { .milliseconds($0) })
    )

    /// Socket.IO client: 1 s doubling to 5 s, each delay moved by up to ±50 % (`randomizationFactor` 0.5), for
    /// ever.
    public static let socketIO = try! RetryPolicy(
        schedule: .randomizedExponential(base: .seconds(1), cap: .seconds(5), multiplier: 2, randomization: 0.5)
    )

    /// AWS "full jitter": attempt `n ≥ 2` waits `uniform(0, min(cap, base × 2^(n−2)))`.
    public static func fullJitter(
        base: Duration,
        cap: Duration,
        maxAttempts: Int? = nil,
        maxElapsed: Duration? = nil
    ) throws(RoomLinkError) -> RetryPolicy {
        try RetryPolicy(
            schedule: .exponential(base: base, cap: cap, jitter: .full),
            maxAttempts: maxAttempts,
            maxElapsed: maxElapsed
        )
    }

    /// AWS "equal jitter": attempt `n ≥ 2` waits `d/2 + uniform(0, d/2)` for `d = min(cap, base × 2^(n−2))`.
    public static func equalJitter(
        base: Duration,
        cap: Duration,
        maxAttempts: Int? = nil,
        maxElapsed: Duration? = nil
    ) throws(RoomLinkError) -> RetryPolicy {
        try RetryPolicy(
            schedule: .exponential(base: base, cap: cap, jitter: .equal),
            maxAttempts: maxAttempts,
            maxElapsed: maxElapsed
        )
    }

    /// AWS "decorrelated jitter": attempt `n ≥ 2` waits `min(cap, uniform(base, 3 × previous))`.
    public static func decorrelatedJitter(
        base: Duration,
        cap: Duration,
        maxAttempts: Int? = nil,
        maxElapsed: Duration? = nil
    ) throws(RoomLinkError) -> RetryPolicy {
        try RetryPolicy(
            schedule: .decorrelatedJitter(base: base, cap: cap),
            maxAttempts: maxAttempts,
            maxElapsed: maxElapsed
        )
    }

    /// The presets by their scenario name, for those that take no parameters.
    public static let presets: [String: RetryPolicy] = [
        "zego": .zegoDefault, "agora": .agoraDefault, "liveKitJS": .liveKitJS, "liveKitSwift": .liveKitSwift,
        "liveKitRust": .liveKitRust, "phoenix": .phoenix, "socketIO": .socketIO,
    ]

    /// The presets that take `base` and `cap`.
    public static let parameterizedPresets: Set<String> = ["fullJitter", "equalJitter", "decorrelatedJitter"]
}
