import Foundation
import RoomLinkTestSupport
import Testing

@testable import RoomLink
@testable import RoomLinkEngine
@testable import RoomLinkScenarios

/// Structure-aware fuzzing of event logs, from the true logs of every example in all three dialects: every field of
/// every line set to the extremes of JSON (huge, tiny, negative, fractional and non-finite-looking numbers, empty,
/// long and odd strings, nulls, arrays, objects), fields dropped and added, lines cut at every byte, duplicated,
/// reordered and dropped. Each log is read or refused naming its line, and the oracle judges what reads — no trap
/// (the process would end), no hang (the suite's time limit).
@Suite(.hangLimit(minutes: 10), .skippedUnderThreadSanitizer)
struct EventLogFuzzTests {
    /// Values a field may be set to.
    static let extremes: [String] = [
        "0", "-0", "-1", "1e308", "-1e308", "1e-308", "4.9e-324", "1.7976931348623157e309", "9223372036854775807",
        "9223372036854775808", "-9223372036854775809", "18446744073709551616", "0.5", "1e21",
        "123456789012345678901234",
        "\"\"", "\"x\"", "\"\(String(repeating: "u", count: 10_000))\"", "\"\\u0000\"", "\"\\ud800\"", "\"é😀\"",
        "\"NaN\"", "\"Infinity\"", "null", "true", "false", "[]", "[null]", "[\"A\",\"A\"]",
        "[\(Array(repeating: "\"p\"", count: 5_000).joined(separator: ","))]", "{}", "{\"a\":1}",
    ]

    /// The true log of each example with named users, as lines of JSON objects (its first 120).
    static func trueLogs() async throws -> [(name: String, scenario: Scenario, lines: [String])] {
        var logs: [(String, Scenario, [String])] = []
        // The 10,000-client example's log is a population's (not checked per user), and long to make in a debug build.
        for (name, text) in try FuzzTests.examples() where !name.hasPrefix("outage-waves") {
            let scenario = try Scenario(json: Data(text))
            let collector = EventLogText()
            _ = try await SimulationRuntime.withSimulation(seed: scenario.seed) {
                try await ScenarioRunner(scenario: scenario).run(on: $0, events: collector)
            }
            let lines = collector.text.split(separator: "\n").map(String.init)
            logs.append((name, scenario, Array(lines.prefix(120))))
        }
        return logs
    }

    /// `line` with `key` set to `value` (raw JSON), or removed when `value` is nil.
    static func setting(_ key: String, to value: String?, in line: String) -> String? {
        guard var object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            return nil
        }
        object[key] = nil
        var text = String(
            decoding: try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]),
            as: UTF8.self
        )
        guard let value else { return text }
        text.removeLast()  // "}"
        return text + (object.isEmpty ? "" : ",") + "\"\(key)\":\(value)}"
    }

    /// What reading and checking a log gave: how many violations, or the line the reader refused.
    enum Verdict: Equatable {
        case read(violations: Int)
        case refused(line: Int)

        var violations: Int? { if case .read(let count) = self { count } else { nil } }
    }

    /// Reads `lines` as a log and, if it reads, checks it: either way, no trap and no hang, and a refusal names its
    /// line (`events line N`).
    @discardableResult
    static func judge(_ lines: [String], _ scenario: Scenario) -> Verdict {
        do {
            let events = try LoggedEvent.read(jsonLines: Data(lines.joined(separator: "\n").utf8))
            return .read(violations: scenario.makeOracle().check(events).count)
        } catch {
            let line = error.field.flatMap { Int($0.split(separator: " ").last ?? "") }
            #expect(error.code == .invalidInput && error.field?.hasPrefix("events line ") == true, "\(error)")
            return .refused(line: line ?? -1)
        }
    }

    @Test
    func everyFieldAtItsExtremesIsReadOrRefusedByLine() async throws {
        var judged = 0
        for log in try await Self.trueLogs() {
            // A few lines of each log, each field of each: every extreme, and the field dropped.
            for index in stride(from: 0, to: log.lines.count, by: max(1, log.lines.count / 3)) {
                let line = log.lines[index]
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                    continue
                }
                for key in object.keys.sorted() + ["extra"] {
                    for value in Self.extremes + [nil] {
                        guard let mutant = Self.setting(key, to: value, in: line) else { continue }
                        var lines = log.lines
                        lines[index] = mutant
                        _ = Self.judge(lines, log.scenario)
                        judged += 1
                    }
                }
            }
        }
        #expect(judged > 1_000)
    }

    /// A line cut short is refused by its number (cut to nothing, it is a blank line, skipped); lines duplicated,
    /// reordered and dropped still read, and a shuffle that sends the log back in time by more than the tolerance is
    /// a violation; whitespace around lines and blank lines change nothing; a log of one huge line is refused at its
    /// first line.
    @Test
    func linesCutAtEveryByteDuplicatedReorderedAndDroppedAreJudged() async throws {
        var random = SeededRandom(seed: 26)
        for log in try await Self.trueLogs() where !log.lines.isEmpty {
            let middle = log.lines.count / 2
            let line = log.lines[middle]
            for cut in 0..<line.utf8.count {
                var lines = log.lines
                lines[middle] = String(decoding: line.utf8.prefix(cut), as: UTF8.self)
                let verdict = Self.judge(lines, log.scenario)
                if cut == 0 {
                    #expect(verdict.violations != nil, "\(log.name): a blank line is skipped")
                } else {
                    #expect(verdict == .refused(line: middle + 1), "\(log.name): line cut at \(cut): \(verdict)")
                }
            }
            let tolerance = log.scenario.oracleTolerance.milliseconds
            for _ in 0..<60 {
                var lines = log.lines
                let a = Int.random(in: 0..<lines.count, using: &random)
                let b = Int.random(in: 0..<lines.count, using: &random)
                switch Int.random(in: 0..<4, using: &random) {
                case 0: lines.swapAt(a, b)
                case 1: lines.insert(lines[a], at: b)
                case 2: lines.remove(at: a)
                default: lines.shuffle(using: &random)
                }
                let verdict = Self.judge(lines, log.scenario)
                #expect(verdict.violations != nil, "\(log.name): whole lines in another order still read")
                let times = lines.compactMap { text in
                    (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])?["t_ms"] as? Double
                }
                var latest = -Double.infinity
                var goesBack = false
                for time in times {
                    if time < latest - tolerance { goesBack = true }
                    latest = max(latest, time)
                }
                if goesBack {
                    #expect((verdict.violations ?? 0) > 0, "\(log.name): a log that goes back in time passed")
                }
            }
            let truth = Self.judge(log.lines, log.scenario)
            #expect(Self.judge(log.lines.map { " \($0) " } + ["", "   "], log.scenario) == truth)
            if log.lines.count > 1 {
                #expect(Self.judge([log.lines.joined(separator: " ")], log.scenario) == .refused(line: 1))
            }
        }
    }
}
