import RoomLink
import RoomLinkTestSupport
import Testing

@Suite(.hangLimit(minutes: 10))
struct RetryPolicyTests {
    /// The first `count` delays of `policy` with elapsed time taken as the sum of the delays so far.
    static func delays(_ policy: RetryPolicy, seed: UInt64 = 1, count: Int) -> [Duration?] {
        var iterator = policy.makeIterator(random: SeededRandom(seed: seed))
        var elapsed = Duration.zero
        return (0..<count).map { _ in
            let delay = iterator.next(elapsed: elapsed)
            elapsed += delay ?? .zero
            return delay
        }
    }

    static let base = Duration.seconds(1)
    static let cap = Duration.seconds(30)

    /// The capped exponential delay before attempt `n` (n ≥ 2) for base 1 s, ×2, cap 30 s.
    static func exponential(_ n: Int) -> Duration { n - 2 >= 5 ? cap : min(cap, base * (1 << (n - 2))) }

    @Test(arguments: RetryPolicy.Jitter.allCases)
    func theFirstAttemptIsNeverDelayed(jitter: RetryPolicy.Jitter) throws {
        let policy = try RetryPolicy(schedule: .exponential(base: Self.base, cap: Self.cap, jitter: jitter))
        #expect(Self.delays(policy, count: 1) == [.zero])
        let decorrelated = try RetryPolicy(schedule: .decorrelatedJitter(base: Self.base, cap: Self.cap))
        #expect(Self.delays(decorrelated, count: 1) == [.zero])
    }

    @Test
    func exponentialWithoutJitterDoublesUpToTheCap() throws {
        let policy = try RetryPolicy(schedule: .exponential(base: Self.base, cap: Self.cap, jitter: .none))
        let expected: [Duration] = [0, 1, 2, 4, 8, 16, 30, 30].map { .seconds($0) }
        #expect(Self.delays(policy, count: 8) == expected)
    }

    @Test
    func fullJitterStaysWithinZeroAndTheBackoff() throws {
        let policy = try RetryPolicy(schedule: .exponential(base: Self.base, cap: Self.cap, jitter: .full))
        let delays = Self.delays(policy, count: 200).map { $0! }
        for (i, delay) in delays.enumerated().dropFirst() {
            #expect(delay >= .zero && delay <= Self.exponential(i + 1), "attempt \(i + 1): \(delay)")
        }
        #expect(Set(delays.dropFirst(7)).count > 100, "full jitter should spread capped delays")
    }

    @Test
    func equalJitterStaysWithinHalfAndAllOfTheBackoff() throws {
        let policy = try RetryPolicy(schedule: .exponential(base: Self.base, cap: Self.cap, jitter: .equal))
        for (i, delay) in Self.delays(policy, count: 200).map({ $0! }).enumerated().dropFirst() {
            let backoff = Self.exponential(i + 1)
            #expect(delay >= backoff / 2 && delay <= backoff, "attempt \(i + 1): \(delay)")
        }
    }

    @Test
    func decorrelatedJitterGrowsFromThePreviousDelayWithinBaseAndCap() throws {
        let policy = try RetryPolicy(schedule: .decorrelatedJitter(base: Self.base, cap: Self.cap))
        var previous = Self.base
        for delay in Self.delays(policy, count: 200).map({ $0! }).dropFirst() {
            #expect(delay >= Self.base && delay <= min(Self.cap, previous * 3), "\(delay) after \(previous)")
            previous = delay
        }
    }

    /// AWS's decorrelated jitter is `min(cap, uniform(base, previous × 3))`: the cap applies to the draw, so a steady
    /// share of delays land exactly on it. Checked against that formula written out here, on its own seeded random
    /// source (SplitMix64), over 200,000 draws each: the share on the cap and the mean agree.
    @Test
    func decorrelatedJitterLandsOnTheCapAsOftenAsAWSsFormulaPredicts() throws {
        let base = Duration.seconds(1)
        let cap = Duration.seconds(10)
        let draws = 200_000
        let policy = try RetryPolicy(schedule: .decorrelatedJitter(base: base, cap: cap))
        let ours = Self.delays(policy, seed: 3, count: draws + 1).dropFirst().map { $0!.seconds }

        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        func uniform() -> Double {  // SplitMix64 → [0, 1)
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Double((z ^ (z >> 31)) >> 11) / Double(1 << 53)
        }
        var previous = 1.0
        let reference = (0..<draws).map { _ in
            let upper = previous * 3
            previous = min(10, 1 + uniform() * (upper - 1))
            return previous
        }

        func onCap(_ delays: [Double]) -> Double { Double(delays.filter { $0 == 10 }.count) / Double(delays.count) }
        func mean(_ delays: [Double]) -> Double { delays.reduce(0, +) / Double(delays.count) }
        #expect(onCap(reference) > 0.4, "the formula itself puts many delays on the cap: \(onCap(reference))")
        #expect(abs(onCap(ours) - onCap(reference)) < 0.01, "on the cap: ours \(onCap(ours)), AWS \(onCap(reference))")
        #expect(abs(mean(ours) - mean(reference)) < 0.1, "mean: ours \(mean(ours)) s, AWS \(mean(reference)) s")
    }

    /// A huge previous delay saturates when tripled instead of wrapping to a negative range.
    @Test
    func decorrelatedJitterWithAHugeCapNeverTraps() throws {
        let policy = try RetryPolicy(
            schedule: .decorrelatedJitter(base: .seconds(1), cap: .seconds(24 * 3_600 * 365 * 100))
        )
        for delay in Self.delays(policy, count: 200).dropFirst() {
            #expect(delay! >= .seconds(1))
        }
    }

    @Test
    func aFixedScheduleJittersFromItsChosenAttemptAndStopsAfterMaxAttempts() throws {
        // LiveKit client-sdk-js: 10 attempts, U[0, 1 s] jitter from the third.
        let seconds: [Double] = [0, 0.3, 1.2, 2.7, 4.8, 7, 7, 7, 7, 7]
        let policy = try RetryPolicy(
            schedule: .fixed(
                seconds.map { .milliseconds(Int64($0 * 1_000)) },
                jitter: .seconds(1),
                jitterFromAttempt: 3
            ),
            maxAttempts: 10
        )
        let delays = Self.delays(policy, count: 11)
        #expect(delays[0] == .zero && delays[1] == .milliseconds(300))
        for attempt in 3...10 {
            let fixed = Duration.milliseconds(Int64(seconds[attempt - 1] * 1_000))
            let delay = try #require(delays[attempt - 1])
            #expect(delay >= fixed && delay <= fixed + .seconds(1), "attempt \(attempt): \(delay)")
        }
        #expect(delays[10] == nil, "no eleventh attempt")
    }

    @Test
    func maxElapsedGivesUpRatherThanStartAnAttemptAtOrPastTheLimit() throws {
        let policy = try RetryPolicy(
            schedule: .exponential(base: Self.base, cap: Self.cap, jitter: .none),
            maxElapsed: .seconds(20 * 60)
        )
        var iterator = policy.makeIterator(random: SeededRandom(seed: 1))
        #expect(iterator.next(elapsed: .seconds(1_000)) == .zero)
        #expect(iterator.next(elapsed: .seconds(1_198)) == .seconds(1))  // attempt at 1,199 s
        #expect(iterator.next(elapsed: .seconds(1_198)) == nil)  // 2 s more would reach 1,200 s
        #expect(RetryPolicy.zegoDefault.maxElapsed == .seconds(20 * 60))
    }

    @Test
    func theSameSeedGivesTheSameDelaysAndAnotherSeedOthers() throws {
        let policy = RetryPolicy.zegoDefault
        #expect(Self.delays(policy, seed: 7, count: 30) == Self.delays(policy, seed: 7, count: 30))
        #expect(Self.delays(policy, seed: 7, count: 30) != Self.delays(policy, seed: 8, count: 30))
    }

    @Test
    func invalidParametersAreRejectedNamingTheField() {
        let cases: [(String, () throws -> RetryPolicy)] = [
            ("retry.base", { try RetryPolicy(schedule: .exponential(base: .zero, cap: .seconds(1), jitter: .full)) }),
            ("retry.cap", { try RetryPolicy(schedule: .decorrelatedJitter(base: .seconds(2), cap: .seconds(1))) }),
            (
                "retry.multiplier",
                {
                    try RetryPolicy(
                        schedule: .exponential(base: .seconds(1), cap: .seconds(2), multiplier: 0.5, jitter: .none)
                    )
                }
            ),
            ("retry.delays", { try RetryPolicy(schedule: .fixed([])) }),
            ("retry.delays", { try RetryPolicy(schedule: .fixed([.seconds(-1)])) }),
            ("retry.jitter", { try RetryPolicy(schedule: .fixed([.seconds(1)], jitter: .seconds(-1))) }),
            ("retry.maxAttempts", { try RetryPolicy(schedule: .fixed([.seconds(1)]), maxAttempts: 0) }),
            ("retry.maxElapsed", { try RetryPolicy(schedule: .fixed([.seconds(1)]), maxElapsed: .zero) }),
        ]
        for (field, make) in cases {
            let error = #expect(throws: RoomLinkError.self) { try make() }
            #expect(error?.message.hasPrefix(field + ":") == true, "\(field): \(String(describing: error?.message))")
        }
    }
}
