import RoomLink
import RoomLinkTestSupport
import Testing

// The "Using the Runtime" article's sample (Sources/RoomLinkEngine/Docs.docc/RuntimeGuide.md), verbatim apart from
// `print` → `#expect`; DocSampleTests checks that the article still shows these lines.

/// A client that beats every 5 s, pinned to one loop.
private actor Heart: TimerHandler {
    let loop: any RuntimeLoop
    private(set) var beats = 0

    init(loop: any RuntimeLoop) { self.loop = loop }

    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    func start() throws { try loop.schedulePeriodic(every: .seconds(5), handler: self) }

    nonisolated func timerFired(_ timer: TimerHandle) {
        assumeIsolated { $0.beats += 1 }  // on the loop's thread already: no hop
    }
}

// A limit to catch hangs, not to time anything: ThreadSanitizer on two shared cores runs these several times slower.
@Suite(.hangLimit(minutes: 10))
struct RuntimeGuideSampleTests {
    @Test
    func theVirtualTimeSampleCountsThreeHundredSixtyBeats() async throws {
        let beats = try await SimulationRuntime.withSimulation(seed: 42) { sim in
            let heart = Heart(loop: sim)
            return try await sim.run {
                try await heart.start()
                try await sim.sleep(for: .seconds(30 * 60 + 1))
                return await heart.beats
            }
        }
        #expect(beats == 360)
    }

    @Test
    func theScaledRealTimeSampleBeatsEveryFiveScenarioSecondsInAFractionOfTheTime() async throws {
        try await LibeventLoopGroup.withLoopGroup(configuration: .init(timeScale: 0.01)) { group in
            let loop = group.loop(for: "client-42")
            let heart = Heart(loop: loop)
            // The scaling, sandwiched between wall-clock readings: whatever the load, the loop's scenario time between
            // two readings is the wall time between them × 100 — at least the inner wall interval's, at most the
            // outer's. (A bound on the wall time the whole sample takes is the machine's, not the runtime's.)
            let outerStart = ContinuousClock.now
            let before = loop.now
            let innerStart = ContinuousClock.now
            try await heart.start()
            try await loop.sleep(for: .seconds(64))
            // The sample prints `beats` after waking; how many more beats come before that read depends on how
            // soon this task resumes. What the runtime promises is checked instead. Timers on one loop fire in
            // deadline order, and the sleep was armed after the heart, so the 12 beats due by 60 s all fired
            // before the sleep's 64 s deadline; and no beat fires early, so by the loop's `now` (read with the
            // count, on the loop) there are at most as many beats as 5 s periods since `before`.
            let innerEnd = ContinuousClock.now
            let (beats, now) = await heart.beatsAndNow()
            let outerEnd = ContinuousClock.now
            let scenario = before.duration(to: now)
            #expect(scenario >= (innerEnd - innerStart) * 100, "scenario time ran slower than 100 × wall time")
            #expect(scenario <= (outerEnd - outerStart) * 100, "scenario time ran faster than 100 × wall time")
            let most = Int((now.nanoseconds - before.nanoseconds) / 5_000_000_000)
            #expect(beats >= 12, "only \(beats) beats when the 64 s sleep ended")
            #expect(beats <= most, "\(beats) beats by \(now): more than the \(most) periods since \(before)")
            #expect(now >= before.advanced(by: .seconds(64)))
        }
    }
}

extension Heart {
    /// The beat count and the loop's time, read together on the loop.
    fileprivate func beatsAndNow() -> (Int, RuntimeInstant) { (beats, loop.now) }
}
