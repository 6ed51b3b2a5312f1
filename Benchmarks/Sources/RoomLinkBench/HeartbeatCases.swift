import CRawLibevent
import RoomLink

/// Heartbeats: every client re-arms a timer each period; CPU per heartbeat in the steady state.
enum HeartbeatCases {
    typealias Case = (name: String, run: @Sendable (Int, Duration, Double) async throws -> HeartbeatCaseResult)

    static let all: [Case] = [
        ("c-libevent-common", { try rawC(common: true, precise: true, $0, $1, $2) }),
        ("c-libevent-common/coarse-clock", { try rawC(common: true, precise: false, $0, $1, $2) }),
        ("c-libevent-heap", { try rawC(common: false, precise: true, $0, $1, $2) }),
        ("roomlink-wheel", { try await roomLink(.wheel, $0, $1, $2) }),
        ("roomlink-heap", { try await roomLink(.libeventHeap, $0, $1, $2) }),
        ("roomlink-common", { try await roomLink(.libeventCommonTimeout, $0, $1, $2) }),
        ("roomlink-wheel/actor-clients", { try await actorClients($0, $1, $2) }),
    ]

    static func rawC(
        common: Bool,
        precise: Bool,
        _ clients: Int,
        _ period: Duration,
        _ window: Double
    ) throws
        -> HeartbeatCaseResult
    {
        let result = CRawLibevent_heartbeat(common ? 1 : 0, precise ? 1 : 0, clients, period.nanosecondsClamped, window)
        return HeartbeatCaseResult(
            name: "",
            clients: clients,
            periodSeconds: period.seconds,
            windowSeconds: result.window_seconds,
            fires: Int(result.fires),
            cpuPerFireNs: result.cpu_seconds / result.fires * 1e9,
            coreSharePercent: result.cpu_seconds / result.window_seconds * 100
        )
    }

    /// Counts heartbeats; touched only on its loop's thread.
    final class Counter: @unchecked Sendable {
        // Safe: incremented by timer handlers on the loop thread and read by tasks preferring that loop.
        var fires = 0
    }

    struct Beat: TimerHandler {
        let counter: Counter
        func timerFired(_ timer: TimerHandle) { counter.fires += 1 }
    }

    static func roomLink(
        _ backend: TimerBackend,
        _ clients: Int,
        _ period: Duration,
        _ window: Double
    ) async throws
        -> HeartbeatCaseResult
    {
        let group = try LibeventLoopGroup(configuration: .init(loopCount: 1, timerBackend: backend))
        defer { group.shutdown() }
        let loop = group.eventLoops[0]
        let counter = Counter()
        let start = loop.now.advanced(by: .milliseconds(100))
        try await Task(executorPreference: loop) {
            for i in 0..<clients {
                let offset = Duration.nanoseconds(period.nanosecondsClamped / Int64(clients) * Int64(i))
                try loop.schedulePeriodic(
                    every: period,
                    startingAt: start.advanced(by: offset),
                    handler: Beat(counter: counter)
                )
            }
        }.value
        try await loop.sleep(until: start.advanced(by: period))
        let firesStart = await Task(executorPreference: loop) { counter.fires }.value
        let cpuStart = ProcessCPU.now()
        let wallStart = Monotonic.now()
        try await loop.sleep(for: .milliseconds(Int64(window * 1_000)))
        let fires = await Task(executorPreference: loop) { counter.fires }.value - firesStart
        let cpu = Double(ProcessCPU.now() - cpuStart)
        let wall = Double(Monotonic.now() - wallStart)
        return HeartbeatCaseResult(
            name: "",
            clients: clients,
            periodSeconds: period.seconds,
            windowSeconds: wall / 1e9,
            fires: fires,
            cpuPerFireNs: cpu / Double(fires),
            coreSharePercent: cpu / wall * 100
        )
    }

    /// The realistic client: RoomLink's `HeartbeatLoad` (an actor per client, lateness recorded per beat).
    static func actorClients(_ clients: Int, _ period: Duration, _ window: Double) async throws -> HeartbeatCaseResult {
        let load = try HeartbeatLoad(
            clients: clients,
            period: period,
            duration: period * 2 + .milliseconds(Int64(window * 1_000))
        )
        let report = try await LibeventLoopGroup.withLoopGroup(configuration: .init(loopCount: 1)) {
            try await load.run(on: $0)
        }
        let steadyWall = report.steadyCPUSeconds / max(report.coreShare, 1e-9)
        return HeartbeatCaseResult(
            name: "",
            clients: clients,
            periodSeconds: period.seconds,
            windowSeconds: steadyWall,
            fires: Int((report.steadyCPUSeconds / report.cpuPerFireMicroseconds * 1e6).rounded()),
            cpuPerFireNs: report.cpuPerFireMicroseconds * 1e3,
            coreSharePercent: report.coreShare * 100
        )
    }
}
