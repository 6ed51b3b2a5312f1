import RoomLink
import RoomLinkRuntime
import RoomLinkTestSupport
import Testing

/// Each preset's delays against its library's definition, with fixed seeds.
@Suite(.hangLimit(minutes: 10))
struct RetryPresetTests {
    /// The delays of one episode (attempt 1 first) until the policy stops or `limit` attempts.
    static func delays(_ policy: RetryPolicy, seed: UInt64 = 1, limit: Int = 40) -> [Duration] {
        var iterator = policy.makeIterator(random: SeededRandom(seed: seed))
        var delays: [Duration] = []
        while delays.count < limit, let delay = iterator.next(elapsed: .zero) { delays.append(delay) }
        return delays
    }

    static func ms(_ values: Double...) -> [Duration] { values.map { .nanoseconds(Int64($0 * 1_000_000)) } }

    @Test(arguments: [UInt64(1), 2, 3])
    func liveKitJSIsTheDefaultReconnectPolicyWithJitterFromTheThirdAttempt(seed: UInt64) {
        let delays = Self.delays(.liveKitJS, seed: seed)
        #expect(delays.count == 10, "ten attempts, then null")
        #expect(Array(delays.prefix(2)) == Self.ms(0, 300))
        let base = [1200.0, 2700, 4800, 7000, 7000, 7000, 7000, 7000]
        for (delay, fixed) in zip(delays.dropFirst(2), base) {
            #expect(delay >= .milliseconds(Int64(fixed)) && delay <= .milliseconds(Int64(fixed) + 1000))
        }
        #expect(Set(delays.dropFirst(2).map { $0.milliseconds.truncatingRemainder(dividingBy: 100) }).count > 1)
    }

    @Test
    func liveKitSwiftEasesOutOnACircleFromThreeHundredMillisecondsToSevenSeconds() {
        let delays = Self.delays(.liveKitSwift, seed: 4)
        #expect(delays.count == 10)
        #expect(delays[0] == .zero)
        for (index, delay) in delays.enumerated().dropFirst() {
            let k = Double(index - 1)
            let t = k / 9 - 1
            let curve = 0.3 + (1 - t * t).squareRoot() * 6.7
            #expect(delay.seconds >= curve - 1e-6 && delay.seconds <= curve * 1.1 + 1e-6, "attempt \(index + 1)")
        }
        #expect(abs(delays[1].seconds - 0.3) <= 0.031, "the curve starts at the base")
        #expect(delays[9].seconds > 6.9, "and ends near the cap")
    }

    @Test
    func liveKitRustIsFullJitterCappedAtSevenSeconds() {
        let delays = Self.delays(.liveKitRust, seed: 5)
        #expect(delays.count == 10)
        for (index, delay) in delays.enumerated().dropFirst() {
            let bound = min(7.0, 0.3 * Double(1 << (index - 1)))
            #expect(delay >= .zero && delay.seconds <= bound + 1e-9, "attempt \(index + 1)")
        }
    }

    @Test
    func phoenixWalksItsListThenRetriesEveryFiveSecondsForEver() {
        let delays = Self.delays(.phoenix, limit: 30)
        #expect(Array(delays.prefix(12)) == Self.ms(0, 10, 50, 100, 150, 200, 250, 500, 1000, 2000, 5000, 5000))
        #expect(delays.count == 30 && delays.dropFirst(10).allSatisfy { $0 == .seconds(5) })
    }

    @Test
    func socketIOMovesEachDoublingDelayByUpToHalfAndCapsAtFiveSeconds() {
        var below = 0
        var above = 0
        for seed in UInt64(1)...20 {
            let delays = Self.delays(.socketIO, seed: seed, limit: 8)
            #expect(delays[0] == .zero)
            for (index, delay) in delays.enumerated().dropFirst() {
                let raw = Double(1 << (index - 1))
                #expect(delay.seconds >= min(raw * 0.5, 5) - 1e-9 && delay.seconds <= min(raw * 1.5, 5) + 1e-9)
                if delay.seconds < raw { below += 1 }
                if delay.seconds > raw, raw < 5 { above += 1 }
            }
        }
        #expect(below > 0 && above > 0, "the deviation goes both ways")
    }

    @Test
    func theAWSStrategiesStayWithinTheirBounds() throws {
        let base = Duration.milliseconds(100)
        let cap = Duration.seconds(5)
        let full = Self.delays(try .fullJitter(base: base, cap: cap), seed: 6, limit: 12)
        let equal = Self.delays(try .equalJitter(base: base, cap: cap), seed: 6, limit: 12)
        for index in 1..<12 {
            let ceiling = min(5.0, 0.1 * Double(1 << (index - 1)))
            #expect(full[index].seconds <= ceiling + 1e-9)
            #expect(equal[index].seconds >= ceiling / 2 - 1e-9 && equal[index].seconds <= ceiling + 1e-9)
        }
        let decorrelated = Self.delays(try .decorrelatedJitter(base: base, cap: cap), seed: 6, limit: 12)
        var previous = base
        for delay in decorrelated.dropFirst() {
            #expect(delay >= base && delay <= min(cap, previous * 3))
            previous = delay
        }
        #expect(throws: RoomLinkError.self) { try RetryPolicy.fullJitter(base: .seconds(2), cap: .seconds(1)) }
    }

    @Test
    func theBoundsOfEveryPresetContainItsDrawsAndTheSameSeedGivesTheSameDelays() throws {
        let policies: [RetryPolicy] =
            Array(RetryPolicy.presets.values) + [
                try .fullJitter(base: .seconds(1), cap: .seconds(30)),
                try .equalJitter(base: .seconds(1), cap: .seconds(30)),
                try .decorrelatedJitter(base: .seconds(1), cap: .seconds(30)),
            ]
        for policy in policies {
            #expect(Self.delays(policy, seed: 9) == Self.delays(policy, seed: 9))
            for seed in UInt64(1)...5 {
                for (index, delay) in Self.delays(policy, seed: seed, limit: 15).enumerated() {
                    #expect(policy.schedule.delayBounds(beforeAttempt: index + 1).contains(delay))
                }
            }
        }
    }
}
