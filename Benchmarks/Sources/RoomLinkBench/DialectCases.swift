import Foundation
import RoomLink

/// What `dialects` measured for one dialect: the median of its runs.
struct DialectResult: Codable, Sendable {
    var kind = "dialect"
    var dialect: String
    var clients: Int
    var rooms: Int
    var scenarioSeconds: Double
    var events: Int
    /// Messages the network delivered.
    var messages: Int
    /// Timers the simulation fired (every message, heartbeat, retry, deadline): the run's work.
    var timerEvents: Int
    var violations: Int
    /// Wall time of each run, in the order run.
    var wallRuns: [Double]
    var medianWallSeconds: Double
    var eventsPerWallSecond: Double
    var timerEventsPerWallSecond: Double
    /// Events counted once per peer they name (a ZEGO `userUpdate` of 40 users counts 40).
    var eventsPerPeer: Int
    /// Median wall time divided by timer events plus events: the cost of one unit of work (a fired timer — a
    /// message, a heartbeat, a retry, a deadline — or one callback delivered and checked).
    var nanosecondsPerWorkUnit: Double
}

enum DialectCases {
    /// One scenario for every dialect: a population joining over the first minute, peers announced to everyone
    /// (ZEGO's `userStatusNotify` on, as Agora and LiveKit always do), and one outage wave — 30 % of the clients
    /// lose their network at 2 min for a minute (spread over 10 s).
    static func scenario(
        _ dialect: Scenario.Dialect,
        clients: Int,
        rooms: Int,
        duration: Duration,
        seed: UInt64,
        sameWork: Bool = false
    ) throws -> Scenario {
        // The same work: LiveKit's ping for all (5 s, lost after 15 s of silence, removed by the server 20 s after
        // last heard), and one retry policy without limits.
        var overrides = ""
        if sameWork {
            let timings =
                switch dialect {
                case .zego:
                    #"{ "heartbeatInterval": "5s", "blackholeDetection": "15s", "serverHeartbeatTimeout": "20s" }"#
                case .agora: #"{ "keepAliveInterval": "5s", "keepAliveTimeout": "15s", "peerOfflineAfter": "20s" }"#
                case .livekit: #"{ "pingInterval": "5s", "pingTimeout": "15s", "participantRemovalAfter": "20s" }"#
                }
            overrides =
                #""timings": \#(timings), "retry": { "strategy": "exponential", "base": "1s", "cap": "10s", "jitter": "equal" },"#
        }
        let json = """
            { "dialect": "\(dialect.rawValue)", "seed": \(seed), \(overrides)
              "network": { "latency": "40ms", "jitter": "20ms" },
              "population": { "clients": \(clients), "rooms": \(rooms), "userStatusNotify": true },
              "timeline": [
                { "at": "0s", "user": "*", "action": "login", "over": "60s" },
                { "at": "2m", "user": "*", "action": "networkDown", "fraction": 0.3, "over": "10s" },
                { "at": "3m", "user": "*", "action": "networkUp", "fraction": 0.3, "over": "10s" } ],
              "end": "\(Int(duration.seconds))s" }
            """
        return try Scenario(json: Data(json.utf8))
    }

    /// Runs `scenario` once in virtual time: the report and the timers fired.
    static func run(_ scenario: Scenario) async throws -> (RunReport, Int) {
        let runner = try ScenarioRunner(scenario: scenario)
        return try await SimulationRuntime.withSimulation(seed: scenario.seed) { simulation in
            let report = try await runner.run(on: simulation)
            return (report, simulation.firedTimerCount)
        }
    }

    /// Runs every dialect `runs` times, interleaved (one of each per round, so that a slow spell of a shared
    /// machine hits all of them), and summarises each by its median.
    static func compare(
        clients: Int,
        rooms: Int,
        duration: Duration,
        runs: Int,
        seed: UInt64,
        sameWork: Bool,
        progress: (String) -> Void
    ) async throws -> [DialectResult] {
        var reports: [Scenario.Dialect: [(RunReport, Int)]] = [:]
        for round in 1...runs {
            for dialect in Scenario.Dialect.allCases {
                let scenario = try scenario(
                    dialect,
                    clients: clients,
                    rooms: rooms,
                    duration: duration,
                    seed: seed,
                    sameWork: sameWork
                )
                let (report, timers) = try await run(scenario)
                progress("round \(round) \(dialect.rawValue): \(String(format: "%.2f", report.wallSeconds)) s")
                reports[dialect, default: []].append((report, timers))
            }
        }
        return Scenario.Dialect.allCases.map { dialect in
            let runs = reports[dialect]!
            let walls = runs.map(\.0.wallSeconds)
            let median = walls.sorted()[walls.count / 2]
            let (report, timers) = runs[0]
            return DialectResult(
                dialect: dialect.rawValue,
                clients: report.clients,
                rooms: report.rooms,
                scenarioSeconds: report.scenarioSeconds,
                events: report.events,
                messages: report.messages,
                timerEvents: timers,
                violations: runs.map(\.0.violations).max() ?? 0,
                wallRuns: walls,
                medianWallSeconds: median,
                eventsPerWallSecond: Double(report.events) / median,
                timerEventsPerWallSecond: Double(timers) / median,
                eventsPerPeer: report.eventsPerPeer,
                nanosecondsPerWorkUnit: median * 1e9 / Double(max(1, timers + report.events))
            )
        }
    }
}
