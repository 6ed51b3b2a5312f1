import RoomLink
import Testing

// The "Using the Runtime" article's sample (Sources/RoomLink/Docs.docc/RuntimeGuide.md), verbatim apart from
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
@Suite(.timeLimit(.minutes(3)))
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
        let wallStart = ContinuousClock.now
        try await LibeventLoopGroup.withLoopGroup(configuration: .init(timeScale: 0.01)) { group in
            let loop = group.loop(for: "client-42")
            let heart = Heart(loop: loop)
            let before = loop.now
            try await heart.start()
            try await loop.sleep(for: .seconds(64))
            // The sample prints `beats` after waking; how many more beats come before that read depends on how
            // soon this task resumes. What the runtime promises is checked instead. Timers on one loop fire in
            // deadline order, and the sleep was armed after the heart, so the 12 beats due by 60 s all fired
            // before the sleep's 64 s deadline; and no beat fires early, so by the loop's `now` (read with the
            // count, on the loop) there are at most as many beats as 5 s periods since `before`.
            let (beats, now) = await heart.beatsAndNow()
            let most = Int((now.nanoseconds - before.nanoseconds) / 5_000_000_000)
            #expect(beats >= 12, "only \(beats) beats when the 64 s sleep ended")
            #expect(beats <= most, "\(beats) beats by \(now): more than the \(most) periods since \(before)")
            #expect(now >= before.advanced(by: .seconds(64)))
        }
        // 64 scenario seconds at scale 0.01 take ≈ 0.64 s. Unscaled they could not take less than 64 s, so any wall
        // time under that shows the scaling; a bound so loose because ThreadSanitizer with every suite at once on
        // two shared cores once took 34.5 s here (the task waits for the pool, not the loop).
        #expect(ContinuousClock.now - wallStart < .seconds(60))
    }
}

extension Heart {
    /// The beat count and the loop's time, read together on the loop.
    fileprivate func beatsAndNow() -> (Int, RuntimeInstant) { (beats, loop.now) }
}
