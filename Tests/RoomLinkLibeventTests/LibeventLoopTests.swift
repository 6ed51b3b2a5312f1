import RoomLinkTestSupport
import Testing

@_spi(RoomLinkInternals) @testable import RoomLinkLibevent
@_spi(RoomLinkInternals) @testable import RoomLinkRuntime

/// An actor pinned to a libevent loop that records where its jobs and timer callbacks ran.
actor PinnedRecorder: TimerHandler {
    let loop: LibeventLoop
    let log = OutcomeLog()
    private(set) var onLoopThread: [Bool] = []
    private(set) var firedAt: [RuntimeInstant] = []
    init(loop: LibeventLoop) { self.loop = loop }
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    func touch() { onLoopThread.append(loop.isInServiceThread) }
    func arm(after delay: Duration) throws { try loop.schedule(after: delay, handler: self) }
    nonisolated func timerFired(_ timer: TimerHandle) { assumeIsolated { $0.fired() } }
    private func fired() {
        firedAt.append(loop.now)
        touch()
        log.record(0, fired: true, at: loop.now)
    }
}

// A limit to catch hangs, not to time anything: ThreadSanitizer on two shared cores runs these several times slower.
@Suite(.hangLimit(minutes: 10))
struct LibeventLoopTests {
    static let backends = TimerBackend.allCases

    @Test
    func anActorPinnedToALoopRunsOnThatLoopsThreadAndSoDoItsTimers() async throws {
        try await LibeventLoopGroup.withLoopGroup(configuration: .init(loopCount: 2)) { group in
            let recorder = PinnedRecorder(loop: group.eventLoops[1])
            await recorder.touch()
            try await recorder.arm(after: .milliseconds(2))
            await recorder.log.waitForOutcomes(1)
            #expect(await recorder.onLoopThread == [true, true])
            #expect(!group.eventLoops[0].isInServiceThread && !group.eventLoops[1].isInServiceThread)
        }
    }

    /// Timers armed in one turn of their loop fire in deadline order, however late the loop runs them.
    ///
    /// Armed from another thread, a test could not say what it promises: that thread may be preempted between two
    /// arms for longer than the deadlines lie apart, and a timer armed after its deadline fires as soon as it
    /// arrives — before one armed earlier for a deadline still ahead. Armed on the loop in one turn, every timer is
    /// in the queue before any can fire, so the order is the backend's alone (the libevent backends measure every
    /// delay of a callback from one time, as the wheel does with its tick; see `LibeventTimerQueue.beginPass`).
    @Test(arguments: backends)
    func timersArmedInOneTurnFireInDeadlineOrderAndNeverEarly(backend: TimerBackend) async throws {
        try await LibeventLoopGroup.withLoopGroup(configuration: .init(loopCount: 1, timerBackend: backend)) { group in
            let loop = group.eventLoops[0]
            let log = OutcomeLog()
            // Deadlines 5 ms apart: wider than a wheel tick and libevent's millisecond rounding of common timeouts.
            let delays = [40, 5, 25, 15, 35, 10, 30, 20]
            let deadlines = try await Task(executorPreference: loop) {
                let start = loop.now
                var deadlines: [Int: RuntimeInstant] = [:]
                for (id, ms) in delays.enumerated() {
                    deadlines[id] = start.advanced(by: .milliseconds(ms))
                    try loop.schedule(at: deadlines[id]!, handler: RecordingHandler(id: id, log: log, service: loop))
                    // Stand for a preemption between two arms, longer than the deadlines lie apart: by the fourth
                    // arm the first deadlines have passed. (Measured from the clock at each arm, this put 35 ms
                    // ahead of 25 ms on both libevent backends.)
                    let resumeAt = ContinuousClock.now.advanced(by: .milliseconds(6))
                    while ContinuousClock.now < resumeAt {}
                }
                return deadlines
            }.value
            await log.waitForOutcomes(delays.count)
            let state = log.snapshot
            #expect(state.order == delays.enumerated().sorted { $0.element < $1.element }.map(\.offset))
            for (id, deadline) in deadlines {
                let fired = try #require(state.times[id]?.first)
                #expect(fired >= deadline, "timer \(id) fired \(fired) before its deadline \(deadline)")
            }
        }
    }

    @Test(arguments: backends)
    func timersArmedAndCancelledFromManyTasksEachGetExactlyOneOutcome(backend: TimerBackend) async throws {
        let count = 100_000
        try await LibeventLoopGroup.withLoopGroup(configuration: .init(loopCount: 2, timerBackend: backend)) { group in
            let log = OutcomeLog()
            await withThrowingTaskGroup(of: Void.self) { tasks in
                for worker in 0..<8 {
                    tasks.addTask {
                        var random = SeededRandom(seed: 99, stream: UInt64(worker))
                        for i in stride(from: worker, to: count, by: 8) {
                            let loop = group.eventLoops[i % 2]
                            let delay = Duration.microseconds(Int.random(in: 0...3_000, using: &random))
                            let handle = try loop.schedule(
                                after: delay,
                                handler: RecordingHandler(id: i, log: log, service: loop)
                            )
                            if Bool.random(using: &random) {
                                if Bool.random(using: &random) { await Task.yield() }
                                loop.cancel(handle)
                            }
                        }
                    }
                }
            }
            await log.waitForOutcomes(count)
            let state = log.snapshot
            #expect(state.fired.count + state.cancelled.count == count)
            #expect(state.fired.values.allSatisfy { $0 == 1 } && state.cancelled.values.allSatisfy { $0 == 1 })
            #expect(Set(state.fired.keys).isDisjoint(with: state.cancelled.keys))
            #expect(!state.cancelled.isEmpty && !state.fired.isEmpty)
        }
    }

    @Test
    func cancelRacingFireOnTheLoopThreadGivesExactlyOneOutcome() async throws {
        try await LibeventLoopGroup.withLoopGroup(configuration: .init(loopCount: 1)) { group in
            let loop = group.eventLoops[0]
            let log = OutcomeLog()
            let answers = OutcomeLog()
            let answered = LockedBox<[Int: TimerCancellation]>([:])
            // Each victim has a canceller timer due within ±1 ms of it: sometimes before (it cancels), sometimes
            // after (the victim fired), sometimes in the same wheel tick (the batch order decides).
            let base = loop.now.advanced(by: .milliseconds(30))
            try await Task(executorPreference: loop) {
                var random = SeededRandom(seed: 5)
                for id in 0..<2_000 {
                    let victimAt = base.advanced(by: .microseconds(Int64.random(in: 0...2_000, using: &random)))
                    let cancelAt = base.advanced(by: .microseconds(Int64.random(in: 0...2_000, using: &random)))
                    let victim = try loop.schedule(
                        at: victimAt,
                        handler: RecordingHandler(id: id, log: log, service: loop)
                    )
                    try loop.schedule(at: cancelAt) {
                        let answer = loop.cancel(victim)
                        answered.withLock { $0[id] = answer }
                        answers.record(id, fired: true, at: loop.now)
                    }
                }
            }.value
            await log.waitForOutcomes(2_000)
            await answers.waitForOutcomes(2_000)
            let state = log.snapshot
            let answer = answered.withLock { $0 }
            for id in 0..<2_000 {
                let fired = state.fired[id, default: 0]
                let cancelled = state.cancelled[id, default: 0]
                #expect(fired + cancelled == 1, "timer \(id): fired \(fired) cancelled \(cancelled)")
                #expect(
                    (answer[id] == .cancelled) == (cancelled == 1),
                    "timer \(id): cancel said \(String(describing: answer[id]))"
                )
            }
            #expect(!state.fired.isEmpty && !state.cancelled.isEmpty, "the race should go both ways")
        }
    }

    /// Work asked for at a callback's end (where serve writes a turn's frames together) runs after every timer of the
    /// batch and the jobs they made runnable, in the order asked; the jobs that work makes runnable run next, then the
    /// work asked for meanwhile — all before libevent waits again.
    @Test
    func workAskedForAtACallbacksEndRunsAfterItsTimersAndJobs() async throws {
        final class Work: CallbackEndWork, @unchecked Sendable {
            // Safe: created and called on the loop's thread only (the test reads `order` after the loop is done).
            let name: String
            let order: LockedBox<[String]>
            let then: (() -> Void)?
            init(_ name: String, _ order: LockedBox<[String]>, then: (() -> Void)? = nil) {
                self.name = name
                self.order = order
                self.then = then
            }
            func callbackEnded() {
                order.withLock { $0.append(name) }
                then?()
            }
        }
        try await LibeventLoopGroup.withLoopGroup(configuration: .init(loopCount: 1)) { group in
            let loop = group.eventLoops[0]
            let order = LockedBox<[String]>([])
            let done = LockedBox(false)
            let deadline = loop.now.advanced(by: .milliseconds(5))
            for name in ["t1", "t2"] {
                try loop.schedule(at: deadline) {
                    order.withLock { $0.append(name) }
                    loop.atCallbackEnd(
                        Work("end of \(name)", order) {
                            guard name == "t2" else { return }
                            loop.atCallbackEnd(Work("asked at the end", order))
                            Task(executorPreference: loop) {
                                order.withLock { $0.append("job of the end") }
                                loop.atCallbackEnd(Work("asked by that job", order) { done.withLock { $0 = true } })
                            }
                        }
                    )
                }
            }
            while !done.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
            #expect(
                order.withLock { $0 } == [
                    "t1", "t2", "end of t1", "end of t2", "job of the end", "asked at the end", "asked by that job",
                ]
            )
        }
    }

    @Test
    func aPeriodicTimerKeepsItsAbsoluteSchedule() async throws {
        try await LibeventLoopGroup.withLoopGroup(configuration: .init(loopCount: 1)) { group in
            let loop = group.eventLoops[0]
            let log = OutcomeLog()
            let start = loop.now.advanced(by: .milliseconds(2))
            let handle = try loop.schedulePeriodic(
                every: .milliseconds(3),
                startingAt: start,
                handler: RecordingHandler(id: 0, log: log, service: loop)
            )
            await log.waitForOutcomes(20)
            loop.cancel(handle)
            await log.waitUntil { $0.cancelled[0] != nil }
            let times = try #require(log.snapshot.times[0])
            // The k-th firing is never before start + k × period: no firing is early and there are never more
            // firings than periods. (A loaded machine may skip periods, which the absolute schedule allows; exact
            // no-drift over 10,000 periods is tested in virtual time on the same timer table.)
            for (k, time) in times.enumerated() {
                let due = start.advanced(by: .milliseconds(3) * k)
                #expect(time >= due, "firing \(k) at \(time) is before \(due)")
            }
            #expect(log.snapshot.cancelled[0] == 1)
        }
    }

    @Test(arguments: backends)
    func shutdownCancelsPendingTimersAndLeavesNoThreadBehind(backend: TimerBackend) async throws {
        let group = try LibeventLoopGroup(configuration: .init(loopCount: 2, timerBackend: backend))
        let log = OutcomeLog()
        for id in 0..<1_000 {
            let loop = group.eventLoops[id % 2]
            try loop.schedule(after: .seconds(60), handler: RecordingHandler(id: id, log: log, service: loop))
        }
        group.shutdown()  // returns after joining both threads
        await log.waitForOutcomes(1_000)
        #expect(log.snapshot.cancelled.count == 1_000)
        #expect(log.snapshot.fired.isEmpty)
        let error = #expect(throws: RuntimeError.self) {
            try group.eventLoops[0].schedule(after: .seconds(1)) {}
        }
        #expect(error?.code == .loopShutDown)
        #expect(error?.message.contains("shut down") == true)
    }

    @Test
    func misconfigurationAndMisuseGetClearErrors() throws {
        let zeroLoops = #expect(throws: RuntimeError.self) { try LibeventLoopGroup(configuration: .init(loopCount: 0)) }
        #expect(zeroLoops?.code == .invalidConfiguration)
        #expect(zeroLoops?.message.contains("loopCount") == true)
        let tooMany = #expect(throws: RuntimeError.self) {
            try LibeventLoopGroup(configuration: .init(loopCount: LibeventLoopGroup.maximumLoopCount + 1))
        }
        #expect(tooMany?.code == .invalidConfiguration)
        let zeroScale = #expect(throws: RuntimeError.self) { try LibeventLoopGroup(configuration: .init(timeScale: 0)) }
        #expect(zeroScale?.message.contains("timeScale") == true)
        let group = try LibeventLoopGroup(configuration: .init(loopCount: 1))
        defer { group.shutdown() }
        #expect(throws: RuntimeError.invalidDelay(.zero)) {
            try group.eventLoops[0].schedule(after: .milliseconds(-1)) {}
        }
    }

    @Test
    func aTimeScaleRunsScenarioTimeFasterAndReportsInScenarioTime() async throws {
        // 1 real ms per scenario second: a 100-second scenario timer fires after ≈ 100 real ms. The scaling is checked
        // between wall-clock readings that sandwich the loop's, which no load can shift: the loop's time between two
        // readings is 1,000 × the wall time between them, at least the inner interval's and at most the outer's.
        try await LibeventLoopGroup.withLoopGroup(configuration: .init(loopCount: 1, timeScale: 0.001)) { group in
            let loop = group.eventLoops[0]
            let log = OutcomeLog()
            let outerStart = ContinuousClock.now
            let start = loop.now
            let innerStart = ContinuousClock.now
            let deadline = start.advanced(by: .seconds(100))
            try loop.schedule(at: deadline, handler: RecordingHandler(id: 0, log: log, service: loop))
            await log.waitForOutcomes(1)
            let fired = try #require(log.snapshot.times[0]?.first)
            #expect(fired >= deadline)
            let innerEnd = ContinuousClock.now
            let end = loop.now
            let outerEnd = ContinuousClock.now
            #expect(start.duration(to: end) >= (innerEnd - innerStart) * 1_000, "the scale was not applied")
            #expect(start.duration(to: end) <= (outerEnd - outerStart) * 1_000, "the scale was not applied")
            #expect(group.now >= deadline)
        }
    }

    /// A scenario's tick is about 4 ms of scenario time: it shrinks with the time scale, within 2^10…2^22 ns.
    @Test
    func aScenarioTickIsAboutFourScenarioMilliseconds() {
        let shifts = [1, 0.1, 0.05, 0.01, 0.0001, 10].map {
            LibeventLoopGroup.Configuration.scenarioTickShift(timeScale: $0)
        }
        #expect(shifts == [22, 18, 17, 15, 10, 22])
    }

    @Test
    func placementByIDIsStable() throws {
        let group = try LibeventLoopGroup(configuration: .init(loopCount: 4))
        defer { group.shutdown() }
        let first = (0..<100).map { (group.loop(for: "client-\($0)") as! LibeventLoop).index }
        let second = (0..<100).map { (group.loop(for: "client-\($0)") as! LibeventLoop).index }
        #expect(first == second)
        #expect(Set(first).count == 4, "100 IDs should spread over all 4 loops")
    }
}

// A limit to catch hangs, not to time anything.
@Suite(.hangLimit(minutes: 10))
struct LibeventDelayLineTests {
    /// On a real loop a line's items come out on the loop's thread, in order, never before their deadline, and while
    /// each comes out the loop's lateness measures from that item's own deadline.
    @Test
    func itemsComeOutOnTheLoopInOrderNeverEarlyAndLatenessIsTheirOwn() async throws {
        try await LibeventLoopGroup.withLoopGroup(configuration: .init(loopCount: 1)) { group in
            let loop = group.eventLoops[0]
            let log = OutcomeLog()
            struct Out {
                var item: Int, deadline: (earliest: RuntimeInstant, latest: RuntimeInstant), at: RuntimeInstant,
                    lateness: Duration?, onLoop: Bool
            }
            let out = LockedBox<[Out]>([])
            let deadlines = LockedBox<[Int: (earliest: RuntimeInstant, latest: RuntimeInstant)]>([:])
            let line = DelayLine<Int>(loop: loop, delay: .milliseconds(3)) { item in
                let now = loop.now
                let deadline = deadlines.withLock { $0[item]! }
                out.withLock {
                    $0.append(
                        Out(
                            item: item,
                            deadline: deadline,
                            at: now,
                            lateness: loop.firingLateness,
                            onLoop: loop.isInServiceThread
                        )
                    )
                }
                log.record(item, fired: true, at: now)
            }
            #expect(!line.add(-1))  // off the loop
            // Twenty items, two at a time 1 ms apart, added from timers on the loop.
            for batch in 0..<10 {
                try loop.schedule(after: .milliseconds(batch)) {
                    for item in [2 * batch, 2 * batch + 1] {
                        // The line reads the clock in between: its deadline for the item lies within these two.
                        let before = loop.now.advanced(by: .milliseconds(3))
                        #expect(line.add(item))
                        deadlines.withLock { $0[item] = (before, loop.now.advanced(by: .milliseconds(3))) }
                    }
                }
            }
            await log.waitForOutcomes(20)
            let results = out.withLock { $0 }
            #expect(results.map(\.item) == Array(0..<20))
            for result in results {
                #expect(result.onLoop)
                #expect(result.at >= result.deadline.earliest, "item \(result.item) came out early")
                let lateness = try #require(result.lateness, "item \(result.item): no lateness while it came out")
                // Read after `at`, from the item's own deadline: at least the time from that deadline to `at`.
                #expect(lateness >= result.deadline.latest.duration(to: result.at))
            }
        }
    }

    /// Work run as firing at a deadline measures its lateness from that deadline, and the timer's own lateness is
    /// back afterwards.
    ///
    /// Each lateness is checked against the loop's clock read just before and just after it, from the deadline it
    /// should be measured from: exact whatever the machine's load (a bound such as "under 200 ms" is not).
    @Test
    func runAsFiringMeasuresFromTheGivenDeadlineThenRestoresTheTimers() async throws {
        try await LibeventLoopGroup.withLoopGroup(configuration: .init(loopCount: 1)) { group in
            let loop = group.eventLoops[0]
            let log = OutcomeLog()
            typealias Reading = (before: RuntimeInstant, lateness: Duration?, after: RuntimeInstant)
            let seen = LockedBox<(earlier: RuntimeInstant, inside: Reading, outside: Reading)?>(nil)
            @Sendable func read() -> Reading { (loop.now, loop.firingLateness, loop.now) }
            // Late enough that 200 ms earlier is still after the loop's start.
            let deadline = loop.now.advanced(by: .milliseconds(250))
            try loop.schedule(at: deadline) {
                let earlier = loop.now.advanced(by: .milliseconds(-200))
                var inside: Reading?
                loop.runAsFiring(deadline: earlier) { inside = read() }
                seen.withLock { $0 = (earlier, inside!, read()) }
                log.record(0, fired: true, at: loop.now)
            }
            await log.waitForOutcomes(1)
            let (earlier, inside, outside) = try #require(seen.withLock { $0 })
            let measuredInside = try #require(inside.lateness)
            #expect(measuredInside >= earlier.duration(to: inside.before))
            #expect(measuredInside <= earlier.duration(to: inside.after))
            let measuredOutside = try #require(outside.lateness)
            #expect(measuredOutside >= deadline.duration(to: outside.before), "from the timer's own deadline again")
            #expect(measuredOutside <= deadline.duration(to: outside.after))
        }
    }
}
