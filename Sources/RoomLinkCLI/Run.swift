import ArgumentParser
import Foundation
import RoomLink

/// `roomlink run SCENARIO.json`: plays a scenario and writes its event log and report (SPEC §7).
struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a scenario: its users log in, lose their network, reconnect, and get kicked, as SPEC §7 says.",
        discussion: """
            Runs in deterministic virtual time by default (the same seed gives the same event log); --clock real \
            runs on libevent loops, scaled by --time-scale. The report includes the spec oracle's verdict; the exit \
            status is 1 when it found violations, 2 on bad input.
            """
    )

    @Argument(help: "The scenario file (JSON; SPEC §7).")
    var scenario: String

    @Option(help: "Write the event log (JSON Lines) to this file, or - for standard output.")
    var events: String?

    @Option(help: "Write the run's report (one JSON object) to this file, or - for standard output.")
    var report: String?

    @OptionGroup var clockOptions: ClockOptions

    func validate() throws {
        if events == "-", report == "-" {
            throw ValidationError("--events and --report cannot both write to standard output (-)")
        }
    }

    func run() async throws {
        var scenario = try load()
        if let seed = clockOptions.seed { scenario.seed = seed }
        let runner: ScenarioRunner
        do {
            runner = try ScenarioRunner(scenario: scenario)
        } catch {
            throw fail("\(scenario): \(error)")
        }
        // Open both destinations before running, so a bad path fails in a millisecond, not after the run.
        let writer: EventLogWriter<EventLogLine>?
        do {
            writer =
                switch events {
                case nil: nil
                case "-": EventLogWriter()
                case let path?: try EventLogWriter(path: path)
                }
        } catch {
            throw fail("\(error)")
        }
        if let report, report != "-", !FileManager.default.createFile(atPath: report, contents: nil) {
            throw fail("--report: expected a file that can be written, got \(report)")
        }
        var options = clockOptions
        options.seed = scenario.seed
        let result: RunReport
        do {
            result = try await options.withRuntime { try await runner.run(on: $0, events: writer) }
        } catch {
            // Keep every event already produced: write what is buffered before reporting the failure.
            try? writer?.close()
            throw fail("the run stopped: \(error)")
        }
        do {
            try writer?.close()
        } catch {
            throw fail("\(error)")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let json = try encoder.encode(result) + Data("\n".utf8)
        switch report {
        case nil:
            FileHandle.standardError.write(Data(summary(result).utf8))
        case "-":
            FileHandle.standardOutput.write(json)
        case let path?:
            guard FileManager.default.createFile(atPath: path, contents: json) else {
                throw fail("--report: expected a file that can be written, got \(path)")
            }
        }
        if result.violations > 0 {
            FileHandle.standardError.write(
                Data(
                    ("roomlink: \(result.violations) spec violations\n"
                        + result.violationSample.map { "  \($0)\n" }.joined()).utf8
                )
            )
            throw ExitCode(1)
        }
    }

    private func load() throws -> Scenario {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: scenario))
        } catch {
            throw fail("\(scenario): expected a readable scenario file, got \(error.localizedDescription)")
        }
        do {
            return try Scenario(json: data)
        } catch {
            throw fail("\(scenario): \(error)")
        }
    }

    private func summary(_ report: RunReport) -> String {
        let types = report.eventsByType.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        return """
            roomlink run — \(report.clients) clients, \(report.rooms) rooms, \(report.scenarioSeconds) s of \
            scenario time on the \(report.clock) clock
              events      \(report.events) (\(types.joined(separator: ", ")))
              violations  \(report.violations)
              wall time   \(String(format: "%.3f", report.wallSeconds)) s
              peak RSS    \(report.peakRSSBytes / 1_048_576) MiB

            """
    }
}
