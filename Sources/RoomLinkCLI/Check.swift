import ArgumentParser
import Foundation
import RoomLink

/// `roomlink check SCENARIO EVENTS`: the spec oracle on any event log, however it was produced.
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check an event log (JSON Lines) against docs/contract.md for its scenario; list violations.",
        discussion: """
            The oracle knows only the scenario (its users, faults and timings) and the log: it does not run the \
            engine, so it can judge a log from RoomLink, from another simulator, or from a real SDK's callbacks \
            written in the format of docs/contract.md §7. Exit status 0 when the log passes, 1 with violations, \
            2 on bad input, 74 when a file cannot be read or the verdict written (docs/cli.md).
            """
    )

    @Argument(help: "The scenario file the log belongs to (JSON; docs/contract.md §7).")
    var scenario: String

    @Argument(help: "The event log (JSON Lines), or - for standard input.")
    var events: String

    func run() throws {
        let scenarioData = try readFile(scenario, as: "scenario")
        let eventData = try readFile(events, as: "event log", limit: InputFile.eventLogLimit)
        let parsed: Scenario
        let logged: [LoggedEvent]
        do {
            parsed = try Scenario(json: scenarioData)
        } catch {
            throw fail(error, in: scenario)
        }
        do {
            logged = try LoggedEvent.read(jsonLines: eventData)
        } catch {
            throw fail(error, in: events)
        }
        let violations = parsed.makeOracle().check(logged)
        do {
            try OutputFile.standardOutput(
                "\(logged.count) events, \(violations.count) \(violations.count == 1 ? "violation" : "violations")\n"
                    + violations.map { "  \($0)\n" }.joined()
            )
        } catch {
            throw fail(error)
        }
        if !violations.isEmpty { throw ExitCode(1) }
    }

}
