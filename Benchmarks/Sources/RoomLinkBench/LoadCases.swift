import Foundation
import RoomLink

/// What one `load` case measured.
struct LoadResult: Codable, Sendable {
    var kind = "load"
    var name: String
    var clients: Int
    var rooms: Int
    var clock: String
    var timeScale: Double
    var scenarioSeconds: Double
    var shards: Int
    var events: Int
    var violations: Int
    var wallSeconds: Double
    var cpuSeconds: Double
    /// CPU seconds per wall second.
    var cores: Double
    var bytesPerClient: Int
    var peakRSSBytes: Int
    /// Real clock: how late the timers ran in the login window, and after it (the steady state).
    var timerLatenessLoginWindow: LatencySummary?
    var timerLatenessSteady: LatencySummary?
    var load: LoadReport?
    /// What the server nodes went through, when their capacity was modelled.
    var servers: ServerReport?
}

/// The cases of `roomlink-bench load`: `roomlink load`'s plans run through the library, timed.
enum LoadCases {
    /// Runs `plan` on the virtual clock (`shards` simulations) or on libevent loops (`timeScale`), and measures it.
    /// On the real clock the loops' lateness is read once the login window is over and reset, so the steady state
    /// has its own figure.
    static func run(
        _ name: String,
        plan: LoadPlan,
        real: Bool,
        timeScale: Double = 1,
        shards: Int = LibeventLoopGroup.coreCount
    ) async throws -> LoadResult {
        var runner = try ScenarioRunner(scenario: try plan.scenario())
        runner.collectsLoadStatistics = true
        runner.shards = shards
        let report: RunReport
        var loginPhase: LatencySummary?
        if real {
            // The tick `roomlink load` uses on the real clock (≈ 4 ms of scenario time; see `--wheel-tick-shift`).
            let configuration = LibeventLoopGroup.Configuration(
                wheelTickShift: LibeventLoopGroup.Configuration.scenarioTickShift(timeScale: timeScale),
                timeScale: timeScale
            )
            report = try await LibeventLoopGroup.withLoopGroup(configuration: configuration) { group in
                let warmUp = Task.detached {
                    // Past the login window (and a margin), in real time.
                    try await Task.sleep(for: (plan.loginOver + .seconds(10)) * timeScale)
                    let phase = group.timerLateness
                    group.resetTimerLateness()
                    return phase
                }
                let report = try await runner.run(on: group)
                loginPhase = try? await warmUp.value
                return report
            }
        } else {
            report = try await SimulationRuntime.withSimulation(seed: plan.seed) { try await runner.run(on: $0) }
        }
        return LoadResult(
            name: name,
            clients: report.clients,
            rooms: report.rooms,
            clock: report.clock,
            timeScale: timeScale,
            scenarioSeconds: report.scenarioSeconds,
            shards: report.shards,
            events: report.events,
            violations: report.violations,
            wallSeconds: report.wallSeconds,
            cpuSeconds: report.cpuSeconds,
            cores: report.wallSeconds > 0 ? report.cpuSeconds / report.wallSeconds : 0,
            bytesPerClient: report.bytesPerClient,
            peakRSSBytes: report.peakRSSBytes,
            timerLatenessLoginWindow: loginPhase,
            timerLatenessSteady: report.timerLateness,
            load: report.load,
            servers: report.servers
        )
    }

    /// 1M clients in 10k rooms, 30 virtual minutes, half of them dropping at 10 min for a minute.
    static func virtualStorm(clients: Int, rooms: Int) throws -> LoadPlan {
        var plan = LoadPlan(clients: clients, rooms: rooms, duration: .seconds(30 * 60))
        plan.faults = [try StormFault("0.5@10m:60s")]
        return plan
    }

    /// Clients heartbeating every 5 s for 5 minutes on the real clock (logins over the first minute), no faults.
    static func realHeartbeats(clients: Int, rooms: Int) -> LoadPlan {
        var plan = LoadPlan(clients: clients, rooms: rooms, duration: .seconds(5 * 60))
        plan.timings = ["heartbeatInterval": .seconds(5)]
        return plan
    }

    /// 20 scenario minutes with a storm (30 % for 2 min at 5 min), outages and a partition, for a scaled clock.
    static func scaledStorm(clients: Int, rooms: Int) throws -> LoadPlan {
        var plan = LoadPlan(clients: clients, rooms: rooms, duration: .seconds(20 * 60))
        plan.faults = [
            try StormFault("0.3@5m:2m"), try OutagesFault("0.1@10m:10s..1m/1m"),
            try PartitionFault("0.2@14m:90s"),
        ]
        return plan
    }

    /// The jitter comparison: every room of an Agora population cut off for a minute (a server outage), with
    /// `retry` — the clients notice together (4 s after their media stops) and retry on their own schedules.
    static func jitter(clients: Int, rooms: Int, retry: String) throws -> LoadPlan {
        var plan = LoadPlan(clients: clients, rooms: rooms, duration: .seconds(6 * 60))
        plan.dialect = .agora
        plan.retryJSON = try LoadPlan.retryJSON(retry)
        plan.faults = [try PartitionFault("1@2m:60s")]
        return plan
    }

    /// The issue-5 storm on 10 server nodes, without capacity or with 64 workers a node: what the model costs.
    static func capacityStorm(clients: Int, rooms: Int, capacity: Bool) throws -> LoadPlan {
        var plan = try virtualStorm(clients: clients, rooms: rooms)
        plan.server = ServerPolicy(
            nodes: 10,
            capacity: capacity
                ? ServerCapacity(workers: 64, login: .milliseconds(2), heartbeat: .microseconds(20)) : nil
        )
        return plan
    }

    /// The jitter study under contention (docs/server-capacity.md): every client drops at 1 min for 10 s, against
    /// 10 nodes of one worker at 4 ms a login that drop logins nobody waits for.
    static func contention(clients: Int, rooms: Int, retry: String) throws -> LoadPlan {
        var plan = LoadPlan(clients: clients, rooms: rooms, duration: .seconds(10 * 60))
        plan.retryJSON = try LoadPlan.retryJSON(retry)
        plan.server = ServerPolicy(
            nodes: 10,
            capacity: ServerCapacity(workers: 1, login: .milliseconds(4)),
            shedExpired: true
        )
        plan.faults = [try StormFault("1.0@1m:10s")]
        return plan
    }

    /// The policies of the contention study: exponential backoff from 1 s, capped at 30 s, four ways.
    static let contentionPolicies: [(name: String, retry: String)] = [
        ("no jitter", #"{ "strategy": "exponential", "base": "1s", "cap": "30s", "jitter": "none" }"#),
        ("full jitter", "fullJitter:1s:30s"), ("equal jitter", "equalJitter:1s:30s"),
        ("decorrelated jitter", "decorrelatedJitter:1s:30s"),
    ]

    /// The retry policies the jitter comparison puts side by side: the same exponential backoff (1 s doubling to
    /// 10 s) without jitter, with full jitter, and Agora's default (equal jitter).
    static let jitterPolicies: [(name: String, retry: String)] = [
        ("no jitter", #"{ "strategy": "exponential", "base": "1s", "cap": "10s", "jitter": "none" }"#),
        ("full jitter", #"{ "strategy": "exponential", "base": "1s", "cap": "10s", "jitter": "full" }"#),
        ("equal jitter (agora)", "agora"),
    ]
}
