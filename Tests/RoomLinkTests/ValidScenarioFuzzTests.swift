import Foundation
import RoomLinkTestSupport
import Testing

@testable import RoomLink
@testable import RoomLinkEngine
@testable import RoomLinkScenarios

/// Random valid scenarios — every core action, in every dialect, at the edges of time (at 0, at `end`, two at one
/// instant), with legal oddities (a switch from a room to itself, a logout of a room never joined, a kick of a user
/// not in the room), on networks that cannot answer in time (a latency or jitter at and past the attempt timeout,
/// heavy loss), with one user on two devices — and the bundled examples changed as a user would change them (an
/// entry removed or moved to another room, a second device of a user, a harder network) pass their own oracle. A
/// false alarm is as bad as a miss: every one is a failure.
@Suite(.hangLimit(minutes: 10), .skippedUnderThreadSanitizer)
struct ValidScenarioFuzzTests {
    /// A network for a scenario, as its JSON object's fields, or `nil` for the default: half the time, one of
    /// latencies up to and past the attempt timeout (a round trip of 5 s or more cannot be answered in time),
    /// jitters up to 5 s and losses up to total.
    static func network(using random: inout SeededRandom) -> String? {
        guard Bool.random(using: &random) else { return nil }
        let latency = ["10ms", "50ms", "300ms", "2s", "2500ms", "3s", "5s", "6s"].randomElement(using: &random)!
        let jitter = ["0s", "0s", "20ms", "1s", "2500ms", "5s"].randomElement(using: &random)!
        let loss = [0, 0, 0, 0.01, 0.2, 0.5, 1].randomElement(using: &random)!
        return #""latency": "\#(latency)", "jitter": "\#(jitter)", "loss": \#(loss)"#
    }

    /// One random scenario as JSON text, from `random`.
    static func scenario(dialect: String, seed: UInt64, using random: inout SeededRandom) -> String {
        let userCount = Int.random(in: 1...4, using: &random)
        let users = (0..<userCount).map { "U\($0)" }
        let rooms = (0..<Int.random(in: 1...3, using: &random)).map { "r\($0)" }
        let endSeconds = [60, 120, 300, 600][Int.random(in: 0..<4, using: &random)]
        func time() -> String {
            switch Int.random(in: 0..<10, using: &random) {
            case 0: return "0s"
            case 1: return "\(endSeconds)s"
            default: return "\(Int.random(in: 0...(endSeconds * 10), using: &random) * 100)ms"
            }
        }
        var entries: [String] = []
        for user in users where Int.random(in: 0..<5, using: &random) > 0 {
            entries.append(#"{ "at": "0s", "user": "\#(user)", "action": "login", "room": "r0" }"#)
        }
        for _ in 0..<Int.random(in: 1...12, using: &random) {
            let user = users.randomElement(using: &random)!
            let room = rooms.randomElement(using: &random)!
            let other = rooms.randomElement(using: &random)!
            let at = time()
            let fields: String
            switch Int.random(in: 0..<13, using: &random) {
            case 0, 1: fields = #""action": "login", "room": "\#(room)""#
            case 2: fields = #""action": "logout", "room": "\#(room)""#
            case 3: fields = #""action": "logout""#
            case 4: fields = #""action": "switchRoom", "from": "\#(room)", "to": "\#(other)""#
            case 5:
                let length = ["\"2s\"", "\"30s\"", "\"3m\""].randomElement(using: &random)!
                fields =
                    Bool.random(using: &random)
                    ? #""action": "networkDown""# : #""action": "networkDown", "for": \#(length)"#
            case 6: fields = #""action": "networkUp""#
            case 7: fields = #""action": "blackhole""#
            case 8: fields = #""action": "networkChange""#
            case 9: fields = #""action": "kick", "room": "\#(room)""#
            case 10: fields = #""action": "requestReconnect", "room": "\#(room)""#
            case 11: fields = #""action": "expireToken""#
            default: fields = #""action": "renewToken", "token": "t\#(Int.random(in: 0..<3, using: &random))""#
            }
            entries.append(#"{ "at": "\#(at)", "user": "\#(user)", \#(fields) }"#)
        }
        // Sometimes the last user is a second device of the first: the same user ID, logged in from elsewhere.
        let device = userCount > 1 && Int.random(in: 0..<4, using: &random) == 0
        let userList = users.enumerated().map { index, user in
            let notify = Bool.random(using: &random) ? #", "userStatusNotify": true"# : ""
            let shared = device && index == userCount - 1 ? #", "userID": "U0""# : ""
            return #"{ "id": "\#(user)"\#(shared)\#(notify) }"#
        }
        let network = Self.network(using: &random).map { #""network": { \#($0) }, "# } ?? ""
        return """
            { "dialect": "\(dialect)", "seed": \(seed), \(network)"users": [\(userList.joined(separator: ", "))],
              "timeline": [\(entries.joined(separator: ",\n    "))],
              "end": "\(endSeconds)s" }
            """
    }

    /// Whether `scenario`'s run passes its own oracle; the violations when it does not. With
    /// `ROOMLINK_FALSE_ALARMS` set to a folder, each scenario that does not pass is written there too, to be played
    /// again with `roomlink run`.
    static func violations(of scenario: Scenario, json: String) async throws -> [String] {
        let report = try await SimulationRuntime.withSimulation(seed: scenario.seed) {
            try await ScenarioRunner(scenario: scenario).run(on: $0)
        }
        guard report.violations > 0 else { return [] }
        if let folder = ProcessInfo.processInfo.environment["ROOMLINK_FALSE_ALARMS"] {
            let name = "\(scenario.dialect.rawValue)-\(StableHash.fnv1a(json)).json"
            try? Data(json.utf8).write(to: URL(fileURLWithPath: folder).appendingPathComponent(name))
        }
        return Array(report.violationSample.prefix(3))
    }

    @Test(arguments: ["zego", "agora", "livekit"])
    func randomValidScenariosPassTheirOwnOracle(dialect: String) async throws {
        // `ROOMLINK_FUZZ_SEED` and `ROOMLINK_FUZZ_COUNT` run other and more scenarios than CI's.
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["ROOMLINK_FUZZ_SEED"].flatMap(UInt64.init) ?? 2026
        var random = SeededRandom(seed: seed, stream: UInt64(dialect.utf8.reduce(0) { $0 &* 31 &+ UInt64($1) }))
        var failures: [String] = []
        let count = environment["ROOMLINK_FUZZ_COUNT"].flatMap(Int.init) ?? 1_000
        for index in 0..<count {
            let json = Self.scenario(dialect: dialect, seed: UInt64(index), using: &random)
            let scenario: Scenario
            do {
                scenario = try Scenario(json: Data(json.utf8))
            } catch {
                continue  // the generator may write something the reader refuses (a renewal with no login); not a run
            }
            let violations = try await Self.violations(of: scenario, json: json)
            if !violations.isEmpty {
                failures.append("\(json)\n  → \(violations.joined(separator: "\n  → "))")
            }
        }
        for failure in failures.prefix(6) { print("false alarm (\(dialect)):\n\(failure)") }
        print("false alarms (\(dialect)): \(failures.count) of \(count)")
        #expect(failures.isEmpty, "\(failures.count) of \(count) valid \(dialect) scenarios fail their own oracle")
    }

    /// The bundled examples changed as a user changing one would: each timeline entry removed, each entry's room
    /// moved to a room of its own, a second device of the first user logging in, a network that cannot answer a
    /// login in time, and a lossy one — every variant is valid, and passes its own oracle.
    @Test
    func changedExamplesPassTheirOwnOracle() async throws {
        var failures: [String] = []
        var count = 0
        for (name, text) in try FuzzTests.examples() where !name.hasPrefix("outage-waves") {
            guard case .object(let example) = try JSONValue.parse(Data(text), what: name) else { continue }
            guard case .array(let timeline)? = example["timeline"] else { continue }
            var variants: [(String, [String: JSONValue])] = []
            for index in timeline.indices {
                var removed = example
                removed["timeline"] = .array(timeline.enumerated().filter { $0.offset != index }.map(\.element))
                variants.append(("without entry \(index + 1)", removed))
                guard case .object(var entry) = timeline[index], entry["room"] != nil else { continue }
                entry["room"] = .string("moved")
                var moved = example
                var entries = timeline
                entries[index] = .object(entry)
                moved["timeline"] = .array(entries)
                variants.append(("entry \(index + 1) moved to another room", moved))
            }
            if case .array(let users)? = example["users"], case .object(let first)? = users.first,
                case .string(let id)? = first["id"],
                case .object(let login)? = timeline.first(where: {
                    if case .object(let entry) = $0 { entry["action"] == .string("login") } else { false }
                })
            {
                var twin = example
                let userID = first["userID"] ?? .string(id)
                twin["users"] = .array(users + [.object(["id": .string("\(id)-second"), "userID": userID])])
                var second = login
                second["user"] = .string("\(id)-second")
                second["at"] = .string("45s")
                twin["timeline"] = .array(timeline + [.object(second)])
                variants.append(("a second device of \(id)", twin))
            }
            for (what, network) in [
                ("a 5 s latency", ["latency": JSONValue.string("5s"), "jitter": .string("20ms")]),
                ("a jitter of 5 s", ["latency": .string("50ms"), "jitter": .string("5s")]),
                ("half the messages lost", ["latency": .string("50ms"), "loss": .number(0.5)]),
                ("every message lost", ["loss": .number(1)]),
            ] {
                var harder = example
                harder["network"] = .object(network)
                variants.append((what, harder))
            }
            for (what, variant) in variants {
                let json = JSONValue.object(variant).jsonText
                let scenario: Scenario
                do {
                    scenario = try Scenario(json: Data(json.utf8))
                } catch {
                    continue  // refused as invalid, with its error: not a run
                }
                count += 1
                let violations = try await Self.violations(of: scenario, json: json)
                if !violations.isEmpty {
                    failures.append("\(name), \(what):\n\(json)\n  → \(violations.joined(separator: "\n  → "))")
                }
            }
        }
        for failure in failures.prefix(6) { print("false alarm:\n\(failure)") }
        print("changed examples: \(failures.count) false alarms of \(count)")
        #expect(count > 100, "the variants ran")
        #expect(failures.isEmpty, "\(failures.count) of \(count) changed examples fail their own oracle")
    }
}

extension JSONValue {
    /// The value as JSON text (keys sorted), through Foundation's writer.
    fileprivate var jsonText: String {
        let data = (try? JSONSerialization.data(withJSONObject: foundationValue, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    private var foundationValue: Any {
        switch self {
        case .null: NSNull()
        case .bool(let value): value
        case .number(let value): value
        case .string(let value): value
        case .array(let items): items.map(\.foundationValue)
        case .object(let fields): fields.mapValues(\.foundationValue)
        }
    }
}
