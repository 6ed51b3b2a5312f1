import RoomLink
import Testing

// The README's "Using the runtime" sample, verbatim apart from `print` → `#expect`. Keep the two in sync.

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

@Suite(.timeLimit(.minutes(1)))
struct ReadmeExampleTests {
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
    func theScaledRealTimeSampleCountsTwelveBeatsInAFractionOfTheTime() async throws {
        let wallStart = ContinuousClock.now
        try await LibeventLoopGroup.withLoopGroup(configuration: .init(timeScale: 0.01)) { group in
            let loop = group.loop(for: "client-42")
            let heart = Heart(loop: loop)
            try await heart.start()
            try await loop.sleep(for: .seconds(64))
            // Beats are due at 5, 10, … 60 s, then 65 s. In real time the read races both ends: the 60 s beat has
            // 40 ms (real) of slack before the sleep ends, and the 65 s beat comes 10 ms (real) after it, within a
            // loaded machine's delay in resuming this task. So 12, give or take one — and never 10 or 14.
            let beats = await heart.beats
            #expect((11...13).contains(beats), "got \(beats) beats")
        }
        #expect(ContinuousClock.now - wallStart < .seconds(10), "64 scenario seconds at scale 0.01 should take ≈ 0.64 s")
    }
}
