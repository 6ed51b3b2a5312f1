import CRawLibevent
import Dispatch
import NIOCore
import NIOPosix
import RoomLink

/// The timer cases, each given the same ``TimerWorkload``.
enum TimerCases {
    typealias Case = (name: String, run: @Sendable (TimerWorkload) async throws -> TimerCaseResult)

    static let all: [Case] = [
        ("c-libevent-heap", { try await rawC(common: false, $0) }),
        ("c-libevent-common", { try await rawC(common: true, $0) }),
        ("roomlink-wheel/on-loop", { try await roomLink(.wheel, onLoop: true, $0) }),
        ("roomlink-wheel/cross-thread", { try await roomLink(.wheel, onLoop: false, $0) }),
        ("roomlink-heap/on-loop", { try await roomLink(.libeventHeap, onLoop: true, $0) }),
        ("roomlink-heap/cross-thread", { try await roomLink(.libeventHeap, onLoop: false, $0) }),
        ("roomlink-common/on-loop", { try await roomLink(.libeventCommonTimeout, onLoop: true, $0) }),
        ("roomlink-common/cross-thread", { try await roomLink(.libeventCommonTimeout, onLoop: false, $0) }),
        ("dispatch-source-timer", { try await dispatchSource($0) }),
        ("task-sleep", { try await taskSleep($0) }),
        ("nio-schedule-task", { try await nio($0) }),
    ]

    // MARK: - Raw C libevent

    static func rawC(common: Bool, _ workload: TimerWorkload) async throws -> TimerCaseResult {
        let stats = FireStats(count: workload.n)
        let result = CRawLibevent_timers(
            common ? 1 : 0,
            workload.n,
            workload.baseDelayNanoseconds,
            stats.lateness.baseAddress,
            workload.cancelSample
        )
        let late = stats.latenessMicroseconds()
        return TimerCaseResult(
            name: common ? "c-libevent-common" : "c-libevent-heap",
            n: workload.n,
            scheduleNs: result.schedule_ns,
            fireCpuNs: result.fire_cpu_ns,
            cancelNs: result.cancel_ns,
            latenessP50Us: late.p50,
            latenessP99Us: late.p99,
            latenessMaxUs: late.max,
            wallSeconds: result.wall_seconds
        )
    }

    // MARK: - RoomLink

    struct Handler: TimerHandler {
        let index: Int
        let stats: FireStats
        func timerFired(_ timer: TimerHandle) { stats.fire(index) }
    }

    static func roomLink(
        _ backend: TimerBackend,
        onLoop: Bool,
        _ workload: TimerWorkload
    ) async throws
        -> TimerCaseResult
    {
        let started = Monotonic.now()
        let group = try LibeventLoopGroup(
            configuration: .init(loopCount: 1, timerBackend: backend, wheelTickShift: workload.wheelTickShift)
        )
        defer { group.shutdown() }
        let loop = group.eventLoops[0]
        let stats = FireStats(count: workload.n)
        // `loop.now` and Monotonic differ by the group's epoch; deadlines are kept on the Monotonic clock.
        let epochOffset = Monotonic.now() - loop.now.nanoseconds

        @Sendable func arm(_ index: Int) throws -> TimerHandle {
            let delay = workload.delayNanoseconds(index)
            let deadline = RuntimeInstant(nanoseconds: Monotonic.now() - epochOffset + delay)
            stats.deadlines[index] = deadline.nanoseconds + epochOffset
            return try loop.schedule(at: deadline, handler: Handler(index: index, stats: stats))
        }

        let scheduleNs = try await onLoopOrHere(loop, onLoop) {
            let start = Monotonic.now()
            for index in 0..<workload.n { _ = try arm(index) }
            return Double(Monotonic.now() - start) / Double(workload.n)
        }
        // Let the loop take in what was sent cross-thread before measuring the firing.
        try await loop.sleep(until: loop.now.advanced(by: .nanoseconds(workload.baseDelayNanoseconds - 200_000_000)))
        let cpuStart = ProcessCPU.now()
        await stats.waitForAll()
        let fireCpuNs = Double(ProcessCPU.now() - cpuStart) / Double(workload.n)

        let cancelNs = try await onLoopOrHere(loop, onLoop) {
            var handles: [TimerHandle] = []
            handles.reserveCapacity(workload.n)
            let far = loop.now
            for index in 0..<workload.n {
                handles.append(
                    try loop.schedule(
                        at: far.advanced(by: .nanoseconds(workload.farDelayNanoseconds(index))),
                        handler: ClosureTimerHandler(onFire: {})
                    )
                )
            }
            return timeCancels(workload.cancelIndices) { loop.cancel(handles[$0]) }
        }
        return TimerCaseResult(
            n: workload.n,
            scheduleNs: scheduleNs,
            fireCpuNs: fireCpuNs,
            cancelNs: cancelNs,
            stats: stats,
            startedAt: started
        )
    }

    /// Runs `body` on the loop's thread (as a task preferring the loop) or on the calling task's thread.
    static func onLoopOrHere<T: Sendable>(
        _ loop: LibeventLoop,
        _ onLoop: Bool,
        _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        if onLoop {
            return try await Task(executorPreference: loop) { try body() }.value
        }
        return try body()
    }

    // MARK: - DispatchSourceTimer

    static func dispatchSource(_ workload: TimerWorkload) async throws -> TimerCaseResult {
        let started = Monotonic.now()
        let queue = DispatchQueue(label: "bench.dispatch-timers")
        let stats = FireStats(count: workload.n)
        let sources = SourceBox()
        let scheduleNs = queue.sync {
            let start = Monotonic.now()
            for index in 0..<workload.n {
                let delay = workload.delayNanoseconds(index)
                let source = DispatchSource.makeTimerSource(queue: queue)
                stats.deadlines[index] = Monotonic.now() + delay
                source.schedule(deadline: .now() + .nanoseconds(Int(delay)), leeway: .nanoseconds(0))
                source.setEventHandler { stats.fire(index) }
                source.resume()
                sources.items.append(source)
            }
            return Double(Monotonic.now() - start) / Double(workload.n)
        }
        try await Task.sleep(for: .nanoseconds(workload.baseDelayNanoseconds - 200_000_000))
        let cpuStart = ProcessCPU.now()
        await stats.waitForAll()
        let fireCpuNs = Double(ProcessCPU.now() - cpuStart) / Double(workload.n)
        let cancelNs = queue.sync {
            for source in sources.items { source.cancel() }
            sources.items.removeAll()
            for index in 0..<workload.n {
                let source = DispatchSource.makeTimerSource(queue: queue)
                source.schedule(deadline: .now() + .nanoseconds(Int(workload.farDelayNanoseconds(index))))
                source.setEventHandler {}
                source.resume()
                sources.items.append(source)
            }
            let cost = timeCancels(workload.cancelIndices) { sources.items[$0].cancel() }
            for source in sources.items { source.cancel() }
            sources.items.removeAll()
            return cost
        }
        return TimerCaseResult(
            n: workload.n,
            scheduleNs: scheduleNs,
            fireCpuNs: fireCpuNs,
            cancelNs: cancelNs,
            stats: stats,
            startedAt: started
        )
    }

    /// The sources of the dispatch case; used only inside `queue.sync` blocks of one serial queue.
    final class SourceBox: @unchecked Sendable {
        // Safe: every access is inside `queue.sync` on the case's one serial queue.
        var items: [any DispatchSourceTimer] = []
    }

    // MARK: - Task.sleep

    static func taskSleep(_ workload: TimerWorkload) async throws -> TimerCaseResult {
        let started = Monotonic.now()
        let stats = FireStats(count: workload.n)
        var tasks: [Task<Void, Never>] = []
        tasks.reserveCapacity(workload.n)
        let start = Monotonic.now()
        for index in 0..<workload.n {
            let delay = workload.delayNanoseconds(index)
            stats.deadlines[index] = Monotonic.now() + delay
            let deadline = ContinuousClock.now.advanced(by: .nanoseconds(delay))
            tasks.append(
                Task {
                    try? await Task.sleep(until: deadline, tolerance: .zero, clock: .continuous)
                    stats.fire(index)
                }
            )
        }
        let scheduleNs = Double(Monotonic.now() - start) / Double(workload.n)
        try await Task.sleep(for: .nanoseconds(workload.baseDelayNanoseconds - 200_000_000))
        let cpuStart = ProcessCPU.now()
        await stats.waitForAll()
        let fireCpuNs = Double(ProcessCPU.now() - cpuStart) / Double(workload.n)

        tasks.removeAll(keepingCapacity: true)
        for index in 0..<workload.n {
            let delay = workload.farDelayNanoseconds(index)
            tasks.append(Task { try? await Task.sleep(for: .nanoseconds(delay)) })
        }
        let cancelNs = timeCancels(workload.cancelIndices) { tasks[$0].cancel() }
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
        return TimerCaseResult(
            n: workload.n,
            scheduleNs: scheduleNs,
            fireCpuNs: fireCpuNs,
            cancelNs: cancelNs,
            stats: stats,
            startedAt: started
        )
    }

    // MARK: - SwiftNIO

    static func nio(_ workload: TimerWorkload) async throws -> TimerCaseResult {
        let started = Monotonic.now()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let stats = FireStats(count: workload.n)
        let scheduleNs = try await loop.submit {
            let start = Monotonic.now()
            for index in 0..<workload.n {
                let deadline = Monotonic.now() + workload.delayNanoseconds(index)
                stats.deadlines[index] = deadline
                loop.scheduleTask(deadline: .uptimeNanoseconds(UInt64(deadline))) { stats.fire(index) }
            }
            return Double(Monotonic.now() - start) / Double(workload.n)
        }.get()
        try await Task.sleep(for: .nanoseconds(workload.baseDelayNanoseconds - 200_000_000))
        let cpuStart = ProcessCPU.now()
        await stats.waitForAll()
        let fireCpuNs = Double(ProcessCPU.now() - cpuStart) / Double(workload.n)
        let cancelNs = try await loop.submit {
            var scheduled: [Scheduled<Void>] = []
            scheduled.reserveCapacity(workload.n)
            for index in 0..<workload.n {
                let deadline = UInt64(Monotonic.now() + workload.farDelayNanoseconds(index))
                scheduled.append(loop.scheduleTask(deadline: .uptimeNanoseconds(deadline)) {})
            }
            return timeCancels(workload.cancelIndices) { scheduled[$0].cancel() }
        }.get()
        try await group.shutdownGracefully()
        return TimerCaseResult(
            n: workload.n,
            scheduleNs: scheduleNs,
            fireCpuNs: fireCpuNs,
            cancelNs: cancelNs,
            stats: stats,
            startedAt: started
        )
    }
}
