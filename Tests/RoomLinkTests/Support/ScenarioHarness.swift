import Foundation
import RoomLink
import RoomLinkRuntime

/// Collects a run's events in delivery order, as log lines: compact ones for assertions, and the JSON event log.
final class EventCollector: EventSink, Sendable {
    struct Entry: Sendable {
        var user: String
        var stamped: Stamped<EventLogLine>

        var line: EventLogLine { stamped.event }
        var time: RuntimeInstant { stamped.time }

        /// ZEGO: `"<ms> <user> <room> <reason> <code>"`, `"<ms> <user> <room> add|delete <users,…>"` or
        /// `"<ms> <user> <room> tokenWillExpire <seconds>"`; other dialects: `"<ms> <user> <room> <type> <values…>"`
        /// (`"200 A c1 connectionState connected joinSuccess"`, `"300 B c1 userJoined A"`).
        var compact: String {
            let ms = stamped.time.milliseconds
            let time = ms == ms.rounded() ? String(Int64(ms)) : String(ms)
            let line = stamped.event
            let values = line.fields.compactMap { _, value -> String? in
                switch value {
                case .string(let text): text
                case .integer(let number): String(number)
                case .strings(let list): list.joined(separator: ",")
                case .object: nil
                }
            }
            let room = line.room ?? "-"
            switch line.type {
            case "roomState", "userUpdate": return ([time, user, room] + values).joined(separator: " ")
            default: return ([time, user, room, line.type] + values).joined(separator: " ")
            }
        }
    }

    /// A sink of one dialect's events that records them here as lines.
    struct Typed<Event: EventLogRepresentable>: EventSink {
        let collector: EventCollector

        func record(_ event: Stamped<Event>, from client: String) {
            collector.record(
                Stamped(time: event.time, sequence: event.sequence, event: event.event.eventLogLine),
                from: client
            )
        }
    }

    private let box = LockedBox<[Entry]>([])

    func record(_ event: Stamped<EventLogLine>, from client: String) {
        box.withLock { $0.append(Entry(user: client, stamped: event)) }
    }

    /// This collector as a sink of `Event`s (a client environment's sink).
    func typed<Event: EventLogRepresentable>(_ type: Event.Type = Event.self) -> Typed<Event> {
        Typed(collector: self)
    }

    var entries: [Entry] { box.withLock { $0 } }

    /// Every event as a compact line, in delivery order.
    var lines: [String] { entries.map(\.compact) }

    /// The compact lines of one user.
    func lines(of user: String) -> [String] { entries.filter { $0.user == user }.map(\.compact) }

    /// The event log's JSON lines.
    var jsonLines: [String] { entries.map { $0.line.json(user: $0.user, time: $0.time) } }
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
