import Foundation
import RoomLinkTestSupport
import Testing

@testable import RoomLink
@testable import RoomLinkEngine
@testable import RoomLinkScenarios

/// Seeded fuzzing of every reader of outside input: thousands of mutants of the bundled scenarios, of true event
/// logs and of flag values. Each must be read or refused with a ``RoomLinkError`` of kind invalid input that names
/// the field; a trap would end the test process, and a hang its time limit.
@Suite(.hangLimit(minutes: 10), .skippedUnderThreadSanitizer)
struct FuzzTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The bundled scenarios but the 100,000-client one.
    static func examples() throws -> [(name: String, text: [UInt8])] {
        let directory = root.appendingPathComponent("examples")
        return try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
            $0.hasSuffix(".json") && $0 != "outage-waves.json"
        }.sorted().map { ($0, Array(try Data(contentsOf: directory.appendingPathComponent($0)))) }
    }

    /// Bytes that matter to JSON and to RoomLink's fields, and a few that do not belong anywhere.
    static let alphabet = Array(#"{}[],:"\ 0123456789.-+eE truefalsnl msh@/~*"#.utf8) + [0x00, 0x0A, 0xFF, 0xC3]
    static let tokens = [
        "1e300", "-1", "9223372036854775808", "\"2562047h\"", "\"1ns\"", "null", "[]", "{}", "\"\"", "0.5", "true",
        "1000000000", "\"networkDown\"", "\"*\"", "\"u3\"",
    ].map { Array($0.utf8) }

    /// One seeded mutation of `text`: a byte deleted, inserted, replaced or swapped, a span duplicated or cut, a
    /// value replaced by a hostile token, or the text truncated.
    static func mutate(_ text: [UInt8], using random: inout SeededRandom) -> [UInt8] {
        var bytes = text
        guard !bytes.isEmpty else { return [alphabet.randomElement(using: &random)!] }
        let at = Int.random(in: 0..<bytes.count, using: &random)
        switch Int.random(in: 0..<8, using: &random) {
        case 0: bytes.remove(at: at)
        case 1: bytes.insert(alphabet.randomElement(using: &random)!, at: at)
        case 2: bytes[at] = alphabet.randomElement(using: &random)!
        case 3:
            let other = Int.random(in: 0..<bytes.count, using: &random)
            bytes.swapAt(at, other)
        case 4:
            let end = min(bytes.count, at + Int.random(in: 1...40, using: &random))
            bytes.insert(contentsOf: bytes[at..<end], at: end)
        case 5:
            let end = min(bytes.count, at + Int.random(in: 1...40, using: &random))
            bytes.removeSubrange(at..<end)
        case 6:
            // Replace the value after a colon with a hostile token.
            guard let colon = bytes[at...].firstIndex(of: UInt8(ascii: ":")) else { break }
            let end =
                bytes[(colon + 1)...].firstIndex { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "}") } ?? bytes.count
            bytes.replaceSubrange((colon + 1)..<end, with: tokens.randomElement(using: &random)!)
        default: bytes.removeSubrange(at...)
        }
        return bytes
    }

    @Test
    func mutatedScenariosAreReadOrRefusedByName() throws {
        var random = SeededRandom(seed: 20_261_123)
        var (read, refused) = (0, 0)
        for (name, text) in try Self.examples() {
            for round in 0..<400 {
                var mutant = text
                for _ in 0...(round % 3) { mutant = Self.mutate(mutant, using: &random) }
                do {
                    let scenario = try Scenario(json: Data(mutant))
                    _ = scenario.makeOracle()  // an oracle for any scenario that reads
                    read += 1
                } catch {
                    refused += 1
                    #expect(error.code == .invalidInput, "\(name) mutant \(round): \(error)")
                    #expect(error.field?.isEmpty == false, "\(name) mutant \(round): no field in '\(error.message)'")
                }
            }
        }
        #expect(read + refused >= 4_000)
        #expect(refused > read / 4 && read > 0, "both kinds of mutant occur (read \(read), refused \(refused))")
    }

    @Test
    func mutatedEventLogsAreReadOrRefusedByLineAndTheOracleJudgesWhatReads() async throws {
        let scenario = try Scenario(
            json: Data(contentsOf: Self.root.appendingPathComponent("examples/situation-2-long-outage.json"))
        )
        let collector = EventLogText()
        _ = try await SimulationRuntime.withSimulation(seed: scenario.seed) {
            try await ScenarioRunner(scenario: scenario).run(on: $0, events: collector)
        }
        let log = Array(collector.text.utf8)
        #expect(scenario.makeOracle().check(try LoggedEvent.read(jsonLines: Data(log))).isEmpty, "the true log passes")
        var random = SeededRandom(seed: 7)
        for round in 0..<3_000 {
            var mutant = log
            for _ in 0...(round % 2) { mutant = Self.mutate(mutant, using: &random) }
            do {
                let events = try LoggedEvent.read(jsonLines: Data(mutant))
                _ = scenario.makeOracle().check(events)
            } catch {
                #expect(error.code == .invalidInput)
                #expect(error.field?.hasPrefix("events line ") == true, "mutant \(round): \(error)")
            }
        }
    }

    @Test
    func randomFlagValuesAreReadOrRefusedNamingTheFlag() {
        var random = SeededRandom(seed: 99)
        let characters = Array("0123456789.@:/~msh-_=,.ef".utf8) + Array("..".utf8)
        for round in 0..<6_000 {
            let length = Int.random(in: 0...16, using: &random)
            let text = String(
                decoding: (0..<length).map { _ in characters.randomElement(using: &random)! },
                as: UTF8.self
            )
            let flags = [
                "--outages", "--storm", "--partition", "--flapping", "--kick-storm", "--token-wave", "--churn",
                "--timing", "--retry",
            ]
            let flag = flags[round % flags.count]
            func parse(_ text: String) throws(RoomLinkError) {
                switch flag {
                case "--outages": _ = try OutagesFault(text, field: flag)
                case "--storm": _ = try StormFault(text, field: flag)
                case "--partition": _ = try PartitionFault(text, field: flag)
                case "--flapping":
                    _ = try FlappingFault(text, field: flag, run: .init(start: .zero, end: .seconds(600)))
                case "--kick-storm": _ = try KickStormFault(text, field: flag)
                case "--token-wave": _ = try TokenWaveFault(text, field: flag)
                case "--churn": _ = try ChurnFault(text, field: flag, run: .init(start: .zero, end: .seconds(600)))
                case "--timing": _ = try LoadPlan.timing(text, field: flag)
                default: _ = try LoadPlan.retryJSON(text, field: flag)
                }
            }
            do {
                try parse(text)
            } catch {
                #expect(error.field == flag, "\(flag) \(text): \(error)")
            }
        }
    }
}

/// Collects an event log's text in memory.
final class EventLogText: EventSink, Sendable {
    private let lines = LockedBox<[String]>([])
    var text: String { lines.withLock { $0.joined(separator: "\n") + "\n" } }
    func record(_ event: Stamped<EventLogLine>, from client: String) {
        let line = event.event.json(user: client, time: event.time)
        lines.withLock { $0.append(line) }
    }
}
