import RoomLinkTestSupport
import Testing

@_spi(RoomLinkInternals) @testable import RoomLinkRuntime

/// An actor pinned to a runtime loop that counts heartbeats from a periodic timer.
actor Heart: TimerHandler {
    let loop: any RuntimeLoop
    private(set) var beats: [RuntimeInstant] = []
    private(set) var ranOnLoopThread = true

    init(loop: any RuntimeLoop) { self.loop = loop }

    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    func start(every period: Duration) throws -> TimerHandle {
        try loop.schedulePeriodic(every: period, handler: self)
    }

    nonisolated func timerFired(_ timer: TimerHandle) {
        assumeIsolated { $0.beat() }
    }

    private func beat() {
        beats.append(loop.now)
        ranOnLoopThread = ranOnLoopThread && loop.isInServiceThread
    }
}

/// Collects trace lines in order; pinned to the simulation so its order is the simulation's.
actor Trace {
    let loop: any RuntimeLoop
    private(set) var lines: [String] = []
    init(loop: any RuntimeLoop) { self.loop = loop }
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    func append(_ line: String) { lines.append("\(loop.now.nanoseconds) \(line)") }
}

// A limit to catch hangs, not to time anything: ThreadSanitizer on two shared cores runs these several times slower.
@Suite(.hangLimit(minutes: 10))
struct SimulationRuntimeTests {
    @Test
    func timersFireInDeadlineOrderThenSchedulingOrderAndNeverEarly() async throws {
        try await SimulationRuntime.withSimulation(seed: 1) { sim in
            let log = OutcomeLog()
            let deadlines = [30, 10, 20, 10, 0, 20]
            try await sim.run {
                for (id, ms) in deadlines.enumerated() {
                    try sim.schedule(
                        at: .zero.advanced(by: .milliseconds(ms)),
                        handler: RecordingHandler(id: id, log: log, service: sim)
                    )
                }
                try await sim.sleep(for: .seconds(1))
            }
            let state = log.snapshot
            #expect(state.order == [4, 1, 3, 2, 5, 0])
            for (id, ms) in deadlines.enumerated() {
                #expect(
                    state.times[id] == [.zero.advanced(by: .milliseconds(ms))],
                    "timer \(id) fired off its deadline"
                )
            }
        }
    }

    @Test
    func virtualTimeJumpsAndTakesNoWallTime() async throws {
        try await SimulationRuntime.withSimulation { sim in
            let start = ContinuousClock.now
            let end = try await sim.run {
                try await sim.sleep(for: .seconds(20 * 60))
                return sim.now
            }
            #expect(end == .zero.advanced(by: .seconds(20 * 60)))
            // It is virtual time: a 20-minute sleep takes microseconds of work, and a real one could not take less
            // than 20 minutes — longer than this suite's time limit, so no load can make the check fail wrongly.
            #expect(ContinuousClock.now - start < .seconds(20 * 60))
        }
    }

    @Test
    func aThirtyMinuteTimelineWithThousandsOfTimersRunsEveryTimerOnSchedule() async throws {
        try await SimulationRuntime.withSimulation(seed: 3) { sim in
            let hearts = (0..<2_000).map { _ in Heart(loop: sim) }
            try await sim.run(limit: .seconds(30 * 60)) {
                for heart in hearts { _ = try await heart.start(every: .seconds(30)) }
                try await sim.sleep(for: .seconds(30 * 60))
            }
            for heart in hearts.prefix(10) {
                let beats = await heart.beats
                #expect(beats.count == 60)
                #expect(beats.last == .zero.advanced(by: .seconds(30 * 60)))
            }
        }
    }

    @Test
    func aPeriodicTimerShowsNoDriftOverTenThousandPeriods() async throws {
        try await SimulationRuntime.withSimulation { sim in
            let heart = Heart(loop: sim)
            let period = Duration.milliseconds(4_999) + .nanoseconds(7)  // deliberately not round
            let beats = try await sim.run {
                _ = try await heart.start(every: period)
                // One nanosecond past the last beat: at the same instant, this earlier-armed sleep would win.
                try await sim.sleep(until: .zero.advanced(by: period * 10_000 + .nanoseconds(1)))
                return await heart.beats
            }
            #expect(beats.count == 10_000)
            for (k, beat) in beats.enumerated() where beat != .zero.advanced(by: period * (k + 1)) {
                Issue.record("beat \(k + 1) at \(beat), expected \(Duration.zero + period * (k + 1))")
                break
            }
        }
    }

    @Test
    func actorsPinnedToTheSimulationRunOnItsThreadAndTimersCallThemThere() async throws {
        try await SimulationRuntime.withSimulation { sim in
            let heart = Heart(loop: sim)
            try await sim.run {
                _ = try await heart.start(every: .seconds(5))
                try await sim.sleep(for: .seconds(16))
            }
            #expect(await heart.beats.count == 3)
            #expect(await heart.ranOnLoopThread)
        }
    }

    static func trace(seed: UInt64) async throws -> [String] {
        try await SimulationRuntime.withSimulation(seed: seed) { sim in
            let trace = Trace(loop: sim)
            try await sim.run {
                await withThrowingTaskGroup(of: Void.self) { group in
                    for worker in 0..<20 {
                        group.addTask {
                            var random = sim.makeRandom(stream: UInt64(worker))
                            for step in 0..<50 {
                                try await sim.sleep(for: .milliseconds(Int.random(in: 0...40, using: &random)))
                                await trace.append("worker \(worker) step \(step)")
                            }
                        }
                    }
                }
            }
            return await trace.lines
        }
    }

    @Test
    func theSameSeedGivesAnIdenticalTraceAndAnotherSeedADifferentOne() async throws {
        let first = try await Self.trace(seed: 11)
        let second = try await Self.trace(seed: 11)
        let other = try await Self.trace(seed: 12)
        #expect(first.count == 1_000)
        #expect(first == second)
        #expect(first != other)
    }

    @Test
    func cancelBeforeFiringGivesExactlyOneCancelledOutcome() async throws {
        try await SimulationRuntime.withSimulation { sim in
            let log = OutcomeLog()
            let outcomes = try await sim.run { () -> [TimerCancellation] in
                let handle = try sim.schedule(
                    after: .seconds(1),
                    handler: RecordingHandler(id: 1, log: log, service: sim)
                )
                let first = sim.cancel(handle)
                let second = sim.cancel(handle)
                try await sim.sleep(for: .seconds(2))
                let fired = try sim.schedule(
                    after: .seconds(1),
                    handler: RecordingHandler(id: 2, log: log, service: sim)
                )
                try await sim.sleep(for: .seconds(2))
                return [first, second, sim.cancel(fired)]
            }
            #expect(outcomes == [.cancelled, .notPending, .notPending])
            let state = log.snapshot
            #expect(state.cancelled == [1: 1])
            #expect(state.fired == [2: 1])
        }
    }

    @Test
    func aTimerCancelledByAnEarlierTimerOfTheSameInstantNeverFires() async throws {
        try await SimulationRuntime.withSimulation { sim in
            let log = OutcomeLog()
            let answers = LockedBox<[TimerCancellation]>([])
            try await sim.run {
                // The canceller is scheduled first, so it fires first in the batch of timers due at `at`.
                let at = sim.now.advanced(by: .seconds(5))
                let box = LockedBox<[TimerHandle]>([])
                try sim.schedule(at: at) {
                    for handle in box.withLock({ $0 }) { answers.withLock { $0.append(sim.cancel(handle)) } }
                }
                let victims = try (10...12).map { id in
                    try sim.schedule(at: at, handler: RecordingHandler(id: id, log: log, service: sim))
                }
                box.withLock { $0 = victims }
                try await sim.sleep(for: .seconds(10))
            }
            let state = log.snapshot
            #expect(answers.withLock { $0 } == [.cancelled, .cancelled, .cancelled])
            for id in 10...12 {
                #expect(state.fired[id] == nil, "timer \(id) fired after it was cancelled")
                #expect(state.cancelled[id] == 1)
            }
        }
    }

    @Test
    func aPeriodicTimerCancelledByItsOwnHandlerIsToldOnceAndStops() async throws {
        try await SimulationRuntime.withSimulation { sim in
            let log = OutcomeLog()
            let box = LockedBox<(TimerHandle?, [TimerCancellation])>((nil, []))
            struct SelfCancelling: TimerHandler {
                let sim: SimulationRuntime
                let log: OutcomeLog
                let box: LockedBox<(TimerHandle?, [TimerCancellation])>
                func timerFired(_ timer: TimerHandle) {
                    log.record(0, fired: true, at: sim.now)
                    if log.snapshot.fired[0] == 3 {
                        let outcome = sim.cancel(timer)
                        box.withLock { $0.1.append(outcome) }
                    }
                }
                func timerCancelled(_ timer: TimerHandle) { log.record(0, fired: false, at: sim.now) }
            }
            try await sim.run {
                try sim.schedulePeriodic(every: .seconds(1), handler: SelfCancelling(sim: sim, log: log, box: box))
                try await sim.sleep(for: .seconds(10))
            }
            #expect(log.snapshot.fired[0] == 3)
            #expect(log.snapshot.cancelled[0] == 1)
            #expect(box.withLock { $0.1 } == [.cancelled])
        }
    }

    @Test
    func cancellingASleepingTaskEndsItsSleepWithCancellationError() async throws {
        try await SimulationRuntime.withSimulation { sim in
            let result = try await sim.run { () -> String in
                let sleeper = Task(executorPreference: sim) { () -> String in
                    do {
                        try await sim.sleep(for: .seconds(3_600))
                        return "woke"
                    } catch is CancellationError {
                        return "cancelled at \(sim.now)"
                    }
                }
                try await sim.sleep(for: .seconds(1))
                sleeper.cancel()
                return try await sleeper.value
            }
            #expect(result == "cancelled at \(RuntimeInstant.zero.advanced(by: .seconds(1)))")
        }
    }

    @Test
    func misuseGetsClearErrors() async throws {
        await SimulationRuntime.withSimulation { sim in
            #expect(throws: RuntimeError.invalidDelay(.seconds(-1))) {
                try sim.schedule(after: .seconds(-1)) {}
            }
            #expect(throws: RuntimeError.invalidPeriod(.zero)) {
                try sim.schedulePeriodic(every: .zero, handler: ClosureTimerHandler(onFire: {}))
            }
            let error = await #expect(throws: RuntimeError.self) {
                try await sim.run { try await sim.sleep(for: .seconds(-5)) }
            }
            #expect(error?.message.contains("negative") == true)
        }
    }

    @Test
    func aBodyWaitingOnNothingFailsAsStalledInsteadOfHanging() async throws {
        await SimulationRuntime.withSimulation { sim in
            let (never, continuation) = AsyncStream.makeStream(of: Int.self)
            let error = await #expect(throws: RuntimeError.self) {
                try await sim.run {
                    for await _ in never {}
                }
            }
            #expect(error?.code == .simulationStalled)
            continuation.finish()
        }
    }

    @Test
    func aRunLimitEndsABodyThatNeedsMoreVirtualTime() async throws {
        try await SimulationRuntime.withSimulation { sim in
            let error = await #expect(throws: RuntimeError.self) {
                try await sim.run(limit: .seconds(10)) { try await sim.sleep(for: .seconds(60)) }
            }
            #expect(error?.code == .simulationTimeLimit)
            // Time stopped at the limit, and the simulation is usable for the next run.
            #expect(sim.now == .zero.advanced(by: .seconds(10)))
            try await sim.advance(by: .seconds(5))
            #expect(sim.now >= .zero.advanced(by: .seconds(15)))
        }
    }

    @Test
    func aTimerJustPastTheLimitInTheSameWheelTickWaitsForTheNextRun() async throws {
        try await SimulationRuntime.withSimulation { sim in
            let trace = Trace(loop: sim)
            // 10 s and 10 s + 1 µs share a wheel tick (≈ 1 ms): the limit must still split them.
            try sim.schedule(at: .zero.advanced(by: .seconds(10))) { trace.assumeIsolated { $0.append("at limit") } }
            try sim.schedule(at: .zero.advanced(by: .seconds(10) + .microseconds(1))) {
                trace.assumeIsolated { $0.append("past limit") }
            }
            let error = await #expect(throws: RuntimeError.self) {
                try await sim.run(limit: .seconds(10)) { try await sim.sleep(for: .seconds(60)) }
            }
            #expect(error?.code == .simulationTimeLimit)
            #expect(await trace.lines == ["10000000000 at limit"])
            try await sim.advance(by: .milliseconds(1))
            #expect(await trace.lines == ["10000000000 at limit", "10000001000 past limit"])
        }
    }

    @Test
    func aRunThatEndsMidTickPlaysOutItsInstantAndLeavesTheRestForTheNextRun() async throws {
        try await SimulationRuntime.withSimulation { sim in
            let trace = Trace(loop: sim)
            let end = RuntimeInstant.zero.advanced(by: .seconds(10))
            try await sim.run {
                try sim.schedule(at: end.advanced(by: .seconds(-1))) {
                    // Armed after the body's wake-up at `end`: it fires after the body returned, in this run.
                    _ = try? sim.schedule(at: end) { trace.assumeIsolated { $0.append("same instant") } }
                    // The same ≈ 1 ms wheel tick, a microsecond later: time stands still once the run has ended.
                    _ = try? sim.schedule(at: end.advanced(by: .microseconds(1))) {
                        trace.assumeIsolated { $0.append("later in the tick") }
                    }
                }
                try await sim.sleep(until: end)
            }
            #expect(await trace.lines == ["10000000000 same instant"])
            try await sim.advance(by: .milliseconds(1))
            #expect(await trace.lines == ["10000000000 same instant", "10000001000 later in the tick"])
        }
    }

    @Test
    func aTimerArmedForTheTickBeingFiredTakesItsPlaceAmongTheOthers() async throws {
        try await SimulationRuntime.withSimulation { sim in
            let trace = Trace(loop: sim)
            let base = RuntimeInstant.zero.advanced(by: .seconds(1))
            // All within one ≈ 1 ms wheel tick: the first arms a timer between the two others.
            try sim.schedule(at: base) {
                trace.assumeIsolated { $0.append("first") }
                _ = try? sim.schedule(after: .microseconds(10)) { trace.assumeIsolated { $0.append("armed") } }
                _ = try? sim.schedule(after: .zero) { trace.assumeIsolated { $0.append("now") } }
            }
            try sim.schedule(at: base.advanced(by: .microseconds(20))) { trace.assumeIsolated { $0.append("last") } }
            try await sim.run { try await sim.sleep(until: base.advanced(by: .seconds(1))) }
            #expect(
                await trace.lines == [
                    "1000000000 first", "1000000000 now", "1000010000 armed", "1000020000 last",
                ]
            )
        }
    }

    @Test
    func shutdownCancelsPendingTimersAndRefusesNewOnes() async throws {
        let sim = SimulationRuntime()
        let log = OutcomeLog()
        try await sim.run {
            for id in 0..<100 {
                try sim.schedule(
                    after: .seconds(Int64(id + 1)),
                    handler: RecordingHandler(id: id, log: log, service: sim)
                )
            }
        }
        sim.shutdown()
        #expect(log.snapshot.cancelled.count == 100)
        #expect(log.snapshot.fired.isEmpty)
        #expect(throws: RuntimeError.loopShutDown("")) { try sim.schedule(after: .seconds(1)) {} }
        await #expect(throws: RuntimeError.loopShutDown("")) { try await sim.run {} }
    }

    @Test
    func timersArmedFromOutsideTheSimulationGetExactlyOneOutcome() async throws {
        try await SimulationRuntime.withSimulation { sim in
            let log = OutcomeLog()
            var handles: [TimerHandle] = []
            for id in 0..<1_000 {
                handles.append(
                    try sim.schedule(after: .seconds(1), handler: RecordingHandler(id: id, log: log, service: sim))
                )
            }
            for handle in handles.enumerated() where handle.offset.isMultiple(of: 2) {
                #expect(sim.cancel(handle.element) == .requested)
            }
            try await sim.advance(by: .seconds(2))
            await log.waitForOutcomes(1_000)
            let state = log.snapshot
            #expect(state.fired.count == 500 && state.cancelled.count == 500)
            #expect(Set(state.fired.keys).isDisjoint(with: state.cancelled.keys))
        }
    }
}
