import Foundation
import RoomLinkTestSupport
import Testing

@testable import RoomLink
@testable import RoomLinkEngine
@testable import RoomLinkScenarios

/// The oracle's power: seeded mutants of the bundled examples' true event logs — a line dropped, duplicated, moved
/// in time or swapped with the next, each field changed, the log judged against another scenario — must be caught.
@Suite(.hangLimit(minutes: 10), .skippedUnderThreadSanitizer)
struct OracleMutationTests {
    struct Case {
        var name: String
        var scenario: Scenario
        var log: [LoggedEvent]
    }

    /// The examples with named users, each in its own dialect and in the two others (the same timeline told in
    /// another vendor's words, its dialect's timings dropped), each with its true log.
    static func cases() async throws -> [Case] {
        var cases: [Case] = []
        for name in try FuzzTests.examples().map(\.name) where !name.hasPrefix("outage-waves") {
            let text = try Data(contentsOf: FuzzTests.root.appendingPathComponent("examples/\(name)"))
            let original = try Scenario(json: text)
            var scenarios = [(name, original)]
            for dialect in Scenario.Dialect.allCases where dialect != original.dialect {
                var translated = original
                translated.dialect = dialect
                translated.timings = [:]
                scenarios.append(("\(name) as \(dialect.rawValue)", translated))
            }
            for (name, scenario) in scenarios {
                cases.append(try await Self.case(name, scenario))
            }
        }
        return cases
    }

    /// `scenario`'s case: its true log, from a run.
    static func `case`(_ name: String, _ scenario: Scenario) async throws -> Case {
        let text = EventLogText()
        _ = try await SimulationRuntime.withSimulation(seed: scenario.seed) {
            try await ScenarioRunner(scenario: scenario).run(on: $0, events: text)
        }
        return Case(name: name, scenario: scenario, log: try LoggedEvent.read(jsonLines: Data(text.text.utf8)))
    }

    /// A kind of wrong log, as the report names it.
    enum Kind: String, CaseIterable, Comparable {
        case drop = "a line dropped"
        case duplicate = "a line duplicated"
        case move60 = "a line moved by 60 s"
        case move300 = "a line moved by 300 s"
        case swap = "a line swapped with the next"
        case swapKept = "two lines of a user swapped, times kept"
        case otherUser = "a peer event given to another user"
        case field = "a field's value changed"
        case users = "a users list changed"
        case otherScenario = "checked against another scenario"

        static func < (lhs: Kind, rhs: Kind) -> Bool {
            allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
        }
    }

    /// Every mutant of `log`, with its kind and a description of what was changed. Only mutants that change what
    /// happened: a swap of lines at one time for different users, or a field set to its own value, is not one.
    static func mutants(
        of log: [LoggedEvent],
        vocabulary: [String: Set<String>],
        codes: Set<Int64>,
        tolerance: Double,
        users: [String]
    )
        -> [(Kind, String, [LoggedEvent])]
    {
        var result: [(Kind, String, [LoggedEvent])] = []
        let presence: Set<String> = [
            "userUpdate", "userJoined", "userOffline", "participantConnected", "participantDisconnected",
        ]
        for (index, event) in log.enumerated() {
            let line = "line \(index + 1) (\(event.user) \(event.type) at \(event.time))"
            var dropped = log
            dropped.remove(at: index)
            result.append((.drop, "drop \(line)", dropped))
            var duplicated = log
            duplicated.insert(event, at: index + 1)
            result.append((.duplicate, "duplicate \(line)", duplicated))
            for shift in [-60_000.0, 60_000, 300_000] where event.time + shift >= 0 {
                var moved = log
                moved[index].time += shift
                moved.sort { $0.time < $1.time }  // a log is in time order; the move is of the event, not the line
                result.append((abs(shift) == 60_000 ? .move60 : .move300, "move \(line) by \(shift / 1_000) s", moved))
            }
            // Two users' lines less than the tolerance apart are in no order a log promises (several clients' lines
            // interleave: the `lateOrder` rule): swapping them is no mutant.
            let next = index + 1 < log.count ? log[index + 1] : nil
            if let next, next.time != event.time, next.user == event.user || next.time - event.time > tolerance {
                var swapped = log
                swapped.swapAt(index, index + 1)
                result.append((.swap, "swap \(line) with the next", swapped))
            }
            // The user's next line at another time that says something else: the two swap what they say, each
            // keeping its time (the log stays in order, so only what the lines mean can tell).
            if let other = log[(index + 1)...].firstIndex(where: {
                $0.user == event.user && $0.time != event.time && ($0.type != event.type || $0.strings != event.strings)
            }) {
                var swapped = log
                swapped[index] = log[other]
                swapped[index].time = event.time
                swapped[other] = event
                swapped[other].time = log[other].time
                result.append((.swapKept, "swap what \(line) and line \(other + 1) say, times kept", swapped))
            }
            if presence.contains(event.type) {
                for user in users where user != event.user {
                    var given = log
                    given[index].user = user
                    result.append((.otherUser, "\(line) given to \(user)", given))
                }
            }
            for (key, value) in event.strings {
                for other in vocabulary[key, default: []].sorted() where other != value {
                    var changed = log
                    changed[index].strings[key] = other
                    result.append((.field, "\(line): \(key) \(value) → \(other)", changed))
                }
            }
            for (key, value) in event.integers {
                for other in codes.sorted() where other != value {
                    var changed = log
                    changed[index].integers[key] = other
                    result.append((.field, "\(line): \(key) \(value) → \(other)", changed))
                }
            }
            for (key, value) in event.lists {
                var changed = log
                changed[index].lists[key] = value.isEmpty ? ["nobody"] : Array(value.dropLast())
                result.append((.users, "\(line): \(key) \(value) → \(changed[index].lists[key]!)", changed))
                var added = log
                added[index].lists[key] = value + ["nobody"]
                result.append((.users, "\(line): \(key) \(value) + nobody", added))
            }
        }
        return result
    }

    /// Each kind of wrong log is caught at least 95 % of the time in every dialect, and the true logs pass. The
    /// rates, per dialect and kind, are printed (the closing notes quote them).
    @Test
    func theOracleCatchesMutantsOfTrueLogs() async throws {
        let cases = try await Self.cases()
        var vocabulary: [String: Set<String>] = [:]
        var codes: Set<Int64> = []
        for event in cases.flatMap(\.log) {
            for (key, value) in event.strings { vocabulary[key, default: []].insert(value) }
            for (_, value) in event.integers { codes.insert(value) }
        }
        struct Tally {
            var caught = 0
            var total = 0
            var rate: Double { total == 0 ? 1 : Double(caught) / Double(total) }
        }
        var tallies: [String: [Kind: Tally]] = [:]
        var misses: [String] = []
        for item in cases {
            let dialect = item.scenario.dialect.rawValue
            #expect(item.scenario.makeOracle().check(item.log).isEmpty, "\(item.name): the true log passes")
            var mutants = Self.mutants(
                of: item.log,
                vocabulary: vocabulary,
                codes: codes,
                tolerance: item.scenario.oracleTolerance.milliseconds,
                users: item.scenario.users.map(\.id)
            ).map { ($0.0, $0.1, $0.2, item.scenario) }
            for other in cases where other.name != item.name && other.scenario.dialect == item.scenario.dialect {
                mutants.append((.otherScenario, "checked against \(other.name)", item.log, other.scenario))
            }
            for (kind, what, mutant, scenario) in mutants {
                let caught = !scenario.makeOracle().check(mutant).isEmpty
                tallies[dialect, default: [:]][kind, default: Tally()].total += 1
                if caught {
                    tallies[dialect, default: [:]][kind, default: Tally()].caught += 1
                } else {
                    misses.append("\(item.name): \(what)")
                }
            }
        }
        var lines: [String] = []
        for kind in Kind.allCases {
            let row = tallies.keys.sorted().compactMap { dialect -> String? in
                guard let tally = tallies[dialect]?[kind] else { return nil }
                return "\(dialect) \(tally.caught)/\(tally.total) " + String(format: "%.1f %%", 100 * tally.rate)
            }
            lines.append("  \(kind.rawValue): \(row.joined(separator: ", "))")
        }
        let caught = tallies.values.flatMap(\.values).reduce(0) { $0 + $1.caught }
        let total = tallies.values.flatMap(\.values).reduce(0) { $0 + $1.total }
        print(
            "oracle mutation detection: \(caught)/\(total) "
                + String(format: "%.1f %%", 100 * Double(caught) / Double(total)) + "\n" + lines.joined(separator: "\n")
        )
        for miss in misses.prefix(400) { print("  missed: \(miss)") }
        for (dialect, kinds) in tallies {
            for (kind, tally) in kinds {
                #expect(
                    tally.rate >= 0.95,
                    "\(dialect), \(kind.rawValue): \(tally.caught) of \(tally.total) caught"
                )
            }
        }
    }
}
