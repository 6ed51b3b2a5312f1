import Foundation
import RoomLink
import RoomLinkRuntime

/// Collects a run's events in delivery order, as compact lines for assertions and as the JSON event log.
final class EventCollector: EventSink, Sendable {
    struct Entry: Sendable {
        var user: String
        var stamped: Stamped<ZegoEvent>

        /// `"<ms> <user> <room> <reason> <code>"`, `"<ms> <user> <room> add|delete <users,…>"` or
        /// `"<ms> <user> <room> tokenWillExpire <seconds>"`.
        var compact: String {
            let ms = stamped.time.milliseconds
            let time = ms == ms.rounded() ? String(Int64(ms)) : String(ms)
            switch stamped.event {
            case .roomStateChanged(let room, let reason, let code, _):
                return "\(time) \(user) \(room) \(reason) \(code)"
            case .roomUserUpdate(let room, let update, let users):
                return "\(time) \(user) \(room) \(update.rawValue) \(users.joined(separator: ","))"
            case .roomTokenWillExpire(let room, let seconds):
                return "\(time) \(user) \(room) tokenWillExpire \(seconds)"
            }
        }
    }

    private let box = LockedBox<[Entry]>([])

    func record(_ event: Stamped<ZegoEvent>, from client: String) {
        box.withLock { $0.append(Entry(user: client, stamped: event)) }
    }

    var entries: [Entry] { box.withLock { $0 } }

    /// Every event as a compact line, in delivery order.
    var lines: [String] { entries.map(\.compact) }

    /// The compact lines of one user.
    func lines(of user: String) -> [String] { entries.filter { $0.user == user }.map(\.compact) }

    /// The event log's JSON lines.
    var jsonLines: [String] { entries.map { $0.stamped.event.eventLogLine.json(user: $0.user, time: $0.stamped.time) } }
}

/// Runs scenarios in virtual time.
enum ScenarioHarness {
    /// Reads `json` and runs it on a fresh simulation seeded with the scenario's seed.
    static func run(_ json: String, seed: UInt64? = nil) async throws -> (events: EventCollector, report: RunReport) {
        var scenario = try Scenario(json: Data(json.utf8))
        if let seed { scenario.seed = seed }
        return try await run(scenario)
    }

    static func run(_ scenario: Scenario) async throws -> (events: EventCollector, report: RunReport) {
        let collector = EventCollector()
        let runner = try ScenarioRunner(scenario: scenario)
        let report = try await SimulationRuntime.withSimulation(seed: scenario.seed) { simulation in
            try await runner.run(on: simulation, events: collector)
        }
        return (collector, report)
    }

    /// Runs a bundled example scenario from `examples/`.
    static func runExample(_ name: String) async throws -> (events: EventCollector, report: RunReport) {
        let url = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("examples/\(name)")
        return try await run(String(decoding: try Data(contentsOf: url), as: UTF8.self))
    }

    /// A scenario with users A (not notified) and B (notified) in room r1, plus `timeline` entries after both log in
    /// at 0 s (B first).
    static func twoUsers(_ timeline: String, end: String = "30m", extra: String = "") -> String {
        """
        { "seed": 1, "network": { "latency": "50ms" }, \(extra)
          "users": [ { "id": "A" }, { "id": "B", "userStatusNotify": true } ],
          "timeline": [
            { "at": "0s", "user": "B", "action": "login", "room": "r1" },
            { "at": "0s", "user": "A", "action": "login", "room": "r1" }\(timeline.isEmpty ? "" : ",") \(timeline) ],
          "end": "\(end)" }
        """
    }
}
