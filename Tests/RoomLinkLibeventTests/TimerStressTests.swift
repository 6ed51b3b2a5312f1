import RoomLinkTestSupport
import Synchronization
import Testing

@testable import RoomLinkLibevent
@_spi(RoomLinkInternals) @testable import RoomLinkRuntime

/// Arm, cancel and fire hammered across loops and threads: remote handles, cancellation inside a batch, periodic
/// timers that stop themselves, loops stopping under traffic. Run under AddressSanitizer and ThreadSanitizer too
/// (`scripts/soak-tests`); each test asserts counts and outcomes only, never timing.
@Suite(.hangLimit(minutes: 10))
struct TimerStressTests {
    /// An empty handler: Swift 6 opens an existential handed to a generic parameter, so a loop that read "the
    /// handler's first word" read zero bytes here and trapped once such a timer was a few places down a batch.
    struct Empty: TimerHandler {
        func timerFired(_ timer: TimerHandle) {}
    }

    /// A batch of many due timers, most of them empty values, fires whole on the wheel loop.
    @Test
    func aBatchOfEmptyValueHandlersFiresWhole() async throws {
        try await LibeventLoopGroup.withLoopGroup(configuration: .init(loopCount: 1)) { group in
            let loop = group.eventLoops[0]
            let log = OutcomeLog()
            // Armed in one turn of the loop for one deadline: every timer lands in one tick, so one batch.
            try await Task(executorPreference: loop) {
                let deadline = loop.now.advanced(by: .milliseconds(5))
                for id in 0..<400 {
                    if id % 8 == 0 {
                        try loop.schedule(at: deadline, handler: RecordingHandler(id: id, log: log, service: loop))
                    } else {
                        try loop.schedule(at: deadline, handler: Empty())
                    }
                }
            }.value
            await log.waitForOutcomes(50)
            #expect(log.snapshot.fired.count == 50)
        }
    }

    final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

    /// The outcome of one stress timer.
    final class Ledger: Sendable {
        struct State {
            var armed: Set<Int> = []
            var periodic: Set<Int> = []
            var fired: [Int: Int] = [:]
            var cancelled: [Int: Int] = [:]
            var handles: [Int: (loop: Int, handle: TimerHandle)] = [:]
            var firedAfterCancel: [Int] = []
        }
        let state = LockedBox(State())
    }

    /// Fires, and sometimes cancels the timer armed just after it on the same loop (which may be due in the same
    /// batch), or, when periodic, cancels itself after its third firing.
    struct StressHandler: TimerHandler {
        let id: Int
        let loop: LibeventLoop
        let ledger: Ledger
        let cancelsNext: Bool
        let stopsAfter: Int?

        func timerFired(_ timer: TimerHandle) {
            precondition(loop.isInServiceThread, "a timer fired off its loop's thread")
            let (count, next) = ledger.state.withLock { state -> (Int, TimerHandle?) in
                if state.cancelled[id] != nil { state.firedAfterCancel.append(id) }
                state.fired[id, default: 0] += 1
                let neighbour = state.handles[id + 1]
                return (state.fired[id]!, neighbour?.loop == loop.index ? neighbour?.handle : nil)
            }
            if cancelsNext, let next { loop.cancel(next) }
            if let stopsAfter, count == stopsAfter { loop.cancel(timer) }
        }

        func timerCancelled(_ timer: TimerHandle) {
            precondition(loop.isInServiceThread, "a cancellation told off its loop's thread")
            ledger.state.withLock { $0.cancelled[id, default: 0] += 1 }
        }
    }

    /// Every timer whose arm succeeded ends exactly once: a one-shot timer fires once or is cancelled once; a
    /// periodic one is cancelled once (by itself, by a task, or by its loop stopping), after any number of firings;
    /// nothing fires after it was cancelled. Tasks arm from off the loops (remote handles) and cancel at random while
    /// the group shuts down under them.
    @Test(arguments: [TimerBackend.wheel, .libeventCommonTimeout])
    func armCancelAndFireAcrossLoopsAndThreadsEachEndOnce(backend: TimerBackend) async throws {
        let group = try LibeventLoopGroup(configuration: .init(loopCount: 3, timerBackend: backend))
        let ledger = Ledger()
        let workers = 6
        let perWorker = 3_000
        let armedEnough = Counter()
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for worker in 0..<workers {
                tasks.addTask {
                    var random = SeededRandom(seed: 7, stream: UInt64(worker))
                    for i in 0..<perWorker {
                        let id = worker * perWorker + i
                        let loop = group.eventLoops[Int.random(in: 0..<3, using: &random)]
                        let periodic = Int.random(in: 0..<10, using: &random) == 0
                        let handler = StressHandler(
                            id: id,
                            loop: loop,
                            ledger: ledger,
                            cancelsNext: Bool.random(using: &random),
                            stopsAfter: periodic && Bool.random(using: &random) ? 3 : nil
                        )
                        // Deadlines bunched into few ticks, so batches are large and neighbours share them.
                        let delay = Duration.microseconds(Int.random(in: 0...4_000, using: &random))
                        let handle: TimerHandle
                        do {
                            // Registered before the arm, so a neighbour's handler can find it as soon as it exists.
                            ledger.state.withLock { _ = $0.armed.insert(id) }
                            handle =
                                periodic
                                ? try loop.schedulePeriodic(every: .milliseconds(1), handler: handler)
                                : try loop.schedule(after: delay, handler: handler)
                        } catch {
                            ledger.state.withLock { _ = $0.armed.remove(id) }
                            #expect((error as? RuntimeError)?.code == .loopShutDown)
                            return
                        }
                        ledger.state.withLock { state in
                            state.handles[id] = (loop.index, handle)
                            if periodic { state.periodic.insert(id) }
                        }
                        armedEnough.value.add(1, ordering: .relaxed)
                        switch Int.random(in: 0..<4, using: &random) {
                        case 0: loop.cancel(handle)
                        case 1:
                            await Task.yield()
                            loop.cancel(handle)
                        default: break
                        }
                        if i % 64 == 0 { await Task.yield() }
                    }
                }
            }
            tasks.addTask {
                // Stop the loops while the workers are still arming.
                while armedEnough.value.load(ordering: .relaxed) < workers * perWorker / 2 { await Task.yield() }
                group.shutdown()
            }
            try await tasks.waitForAll()
        }
        group.shutdown()
        let state = ledger.state.withLock { $0 }
        #expect(state.firedAfterCancel.isEmpty, "fired after cancelled: \(state.firedAfterCancel.prefix(10))")
        #expect(state.cancelled.values.allSatisfy { $0 == 1 }, "a timer was told of its cancellation twice")
        var unfinished: [Int] = []
        for id in state.armed {
            let fired = state.fired[id] ?? 0
            let cancelled = state.cancelled[id] ?? 0
            if state.periodic.contains(id) {
                if cancelled != 1 { unfinished.append(id) }
            } else if fired + cancelled != 1 {
                unfinished.append(id)
            }
        }
        #expect(unfinished.isEmpty, "\(unfinished.count) timers without exactly one ending: \(unfinished.prefix(10))")
        #expect(state.armed.count >= workers * perWorker / 2)
        #expect(!state.fired.isEmpty && !state.cancelled.isEmpty)
    }

    /// An actor pinned to a loop that has stopped still runs its jobs (on the retired executor), whichever thread
    /// calls it — a thread started later may get the stopped loop's thread ID back from the system.
    @Test
    func aStoppedLoopIsNoOnesThreadAndItsActorsStillAnswer() async throws {
        actor Pinned {
            let loop: LibeventLoop
            init(loop: LibeventLoop) { self.loop = loop }
            nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
            func answer() -> Int { 42 }
        }
        for _ in 0..<20 {
            let stopped = try LibeventLoopGroup(configuration: .init(loopCount: 1))
            let pinned = Pinned(loop: stopped.eventLoops[0])
            #expect(await pinned.answer() == 42)
            stopped.shutdown()
            try await LibeventLoopGroup.withLoopGroup(configuration: .init(loopCount: 1)) { group in
                let live = group.eventLoops[0]
                let (claims, answer) = await Task(executorPreference: live) {
                    (stopped.eventLoops[0].isInServiceThread, await pinned.answer())
                }.value
                #expect(!claims, "a stopped loop claims a live loop's thread as its own")
                #expect(answer == 42)
            }
        }
    }
}
