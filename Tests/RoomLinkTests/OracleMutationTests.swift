import Foundation
import RoomLinkTestSupport
import Testing

@testable import RoomLink
@testable import RoomLinkEngine
@testable import RoomLinkScenarios

/// The oracle's power: seeded mutants of the bundled examples' true event logs — a line dropped, duplicated, moved
/// in time or swapped with the next, each field changed, the log judged against another scenario — must be caught.
@Suite(.timeLimit(.minutes(10)), .skippedUnderThreadSanitizer)
struct OracleMutationTests {
    struct Case {
        var name: String
        var scenario: Scenario
        var log: [LoggedEvent]
    }

    /// The examples with named users, each with its true log.
    static func cases() async throws -> [Case] {
        var cases: [Case] = []
        for name in try FuzzTests.examples().map(\.name) where !name.hasPrefix("outage-waves") {
            let scenario = try Scenario(
                json: Data(contentsOf: FuzzTests.root.appendingPathComponent("examples/\(name)"))
            )
            let text = EventLogText()
            _ = try await SimulationRuntime.withSimulation(seed: scenario.seed) {
                try await ScenarioRunner(scenario: scenario).run(on: $0, events: text)
            }
            cases.append(
                Case(name: name, scenario: scenario, log: try LoggedEvent.read(jsonLines: Data(text.text.utf8)))
            )
        }
        return cases
    }

    /// Every mutant of `log`, with a description of what was changed. Only mutants that change what happened: a
    /// swap of lines at one time for different users, or a field set to its own value, is not one.
    static func mutants(
        of log: [LoggedEvent],
        vocabulary: [String: Set<String>],
        codes: Set<Int64>,
        tolerance: Double
    )
        -> [(String, [LoggedEvent])]
    {
        var result: [(String, [LoggedEvent])] = []
        for (index, event) in log.enumerated() {
            let line = "line \(index + 1) (\(event.user) \(event.type) at \(event.time))"
            var dropped = log
            dropped.remove(at: index)
            result.append(("drop \(line)", dropped))
            var duplicated = log
            duplicated.insert(event, at: index + 1)
            result.append(("duplicate \(line)", duplicated))
            for shift in [-60_000.0, 60_000, 300_000] where event.time + shift >= 0 {
                var moved = log
                moved[index].time += shift
                moved.sort { $0.time < $1.time }  // a log is in time order; the move is of the event, not the line
                result.append(("move \(line) by \(shift / 1_000) s", moved))
            }
            // Two users' lines less than the tolerance apart are in no order a log promises (several clients' lines
            // interleave: the `lateOrder` rule): swapping them is no mutant.
            let next = index + 1 < log.count ? log[index + 1] : nil
            if let next, next.time != event.time, next.user == event.user || next.time - event.time > tolerance {
                var swapped = log
                swapped.swapAt(index, index + 1)
                result.append(("swap \(line) with the next", swapped))
            }
            for (key, value) in event.strings {
                for other in vocabulary[key, default: []].sorted() where other != value {
                    var changed = log
                    changed[index].strings[key] = other
                    result.append(("\(line): \(key) \(value) → \(other)", changed))
                }
            }
            for (key, value) in event.integers {
                for other in codes.sorted() where other != value {
                    var changed = log
                    changed[index].integers[key] = other
                    result.append(("\(line): \(key) \(value) → \(other)", changed))
                }
            }
            for (key, value) in event.lists {
                var changed = log
                changed[index].lists[key] = value.isEmpty ? ["nobody"] : Array(value.dropLast())
                result.append(("\(line): \(key) \(value) → \(changed[index].lists[key]!)", changed))
                var added = log
                added[index].lists[key] = value + ["nobody"]
                result.append(("\(line): \(key) \(value) + nobody", added))
            }
        }
        return result
    }

    @Test
    func theOracleCatchesMutantsOfTrueLogs() async throws {
        let cases = try await Self.cases()
        var vocabulary: [String: Set<String>] = [:]
        var codes: Set<Int64> = []
        for event in cases.flatMap(\.log) {
            for (key, value) in event.strings { vocabulary[key, default: []].insert(value) }
            for (_, value) in event.integers { codes.insert(value) }
        }
        var detected: [String: Int] = [:]
        var total: [String: Int] = [:]
        var classDetected: [String: Int] = [:]
        var classTotal: [String: Int] = [:]
        func kind(_ what: String) -> String {
            if what.hasPrefix("checked against") { return "another scenario" }
            for prefix in ["drop", "duplicate", "move", "swap"] where what.hasPrefix(prefix) { return prefix }
            if what.contains("+ nobody") || what.contains(": users ") { return "users list" }
            return "field value"
        }
        var misses: [String] = []
        for item in cases {
            let dialect = item.scenario.dialect.rawValue
            #expect(item.scenario.makeOracle().check(item.log).isEmpty, "\(item.name): the true log passes")
            var mutants = Self.mutants(
                of: item.log,
                vocabulary: vocabulary,
                codes: codes,
                tolerance: item.scenario.oracleTolerance.milliseconds
            )
            for other in cases where other.name != item.name && other.scenario.dialect == item.scenario.dialect {
                mutants.append(("checked against \(other.name)", item.log))
                _ = other
            }
            for (index, (what, mutant)) in mutants.enumerated() {
                let scenario =
                    what.hasPrefix("checked against ")
                    ? cases.first { "checked against \($0.name)" == what }!.scenario : item.scenario
                total[dialect, default: 0] += 1
                classTotal[kind(what), default: 0] += 1
                if scenario.makeOracle().check(mutant).isEmpty {
                    misses.append("\(item.name): \(what)")
                } else {
                    detected[dialect, default: 0] += 1
                    classDetected[kind(what), default: 0] += 1
                }
                _ = index
            }
        }
        let rates = total.keys.sorted().map { dialect in
            "\(dialect) \(detected[dialect, default: 0])/\(total[dialect]!) "
                + String(format: "%.1f %%", 100 * Double(detected[dialect, default: 0]) / Double(total[dialect]!))
        }
        let all = Double(detected.values.reduce(0, +)) / Double(total.values.reduce(0, +))
        print(
            "oracle mutation detection: \(rates.joined(separator: ", ")); all \(String(format: "%.1f %%", 100 * all))"
        )
        for kind in classTotal.keys.sorted() {
            let found = classDetected[kind, default: 0]
            print(
                "  \(kind): \(found)/\(classTotal[kind]!) "
                    + String(format: "%.1f %%", 100 * Double(found) / Double(classTotal[kind]!))
            )
        }
        for miss in misses.prefix(400) { print("  missed: \(miss)") }
        #expect(all >= 0.95, "detected \(String(format: "%.1f %%", 100 * all)) of mutants")
    }
}
