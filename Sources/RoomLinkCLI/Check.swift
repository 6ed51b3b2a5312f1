import ArgumentParser
import Foundation
import RoomLink

/// `roomlink check SCENARIO EVENTS`: the spec oracle on any event log, however it was produced.
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check an event log (JSON Lines) against SPEC for its scenario, and list the violations.",
        discussion: """
            The oracle knows only the scenario (its users, faults and timings) and the log: it does not run the \
            engine, so it can judge a log from RoomLink, from another simulator, or from a real SDK's callbacks \
            written in SPEC §7's format. Exit status 0 when the log passes, 1 with violations, 2 on bad input.
            """
    )

    @Argument(help: "The scenario file the log belongs to (JSON; SPEC §7).")
    var scenario: String

    @Argument(help: "The event log (JSON Lines), or - for standard input.")
    var events: String

    func run() throws {
        let scenarioData: Data
        let eventData: Data
        do {
            scenarioData = try Data(contentsOf: URL(fileURLWithPath: scenario))
        } catch {
            throw fail("\(scenario): expected a readable scenario file, got \(error.localizedDescription)")
        }
        if events == "-" {
            eventData = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            do {
                eventData = try Data(contentsOf: URL(fileURLWithPath: events))
            } catch {
                throw fail("\(events): expected a readable event log, got \(error.localizedDescription)")
            }
        }
        let parsed: Scenario
        let logged: [LoggedEvent]
        do {
            parsed = try Scenario(json: scenarioData)
        } catch {
            throw fail("\(scenario): \(error)")
        }
        do {
            logged = try LoggedEvent.read(jsonLines: eventData)
        } catch {
            throw fail("\(events): \(error)")
        }
        let violations = parsed.makeOracle().check(logged)
        print("\(logged.count) events, \(violations.count) violations")
        for violation in violations { print("  \(violation)") }
        if !violations.isEmpty { throw ExitCode(1) }
    }

}
