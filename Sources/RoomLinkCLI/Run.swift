import ArgumentParser
import Foundation
import RoomLink

/// `roomlink run SCENARIO.json`: plays a scenario and writes its event log and report (contract §7).
struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a scenario: users log in, lose their network, reconnect, get kicked (docs/contract.md §7).",
        discussion: """
            Runs in deterministic virtual time by default (the same seed gives the same event log); --clock real \
            runs on libevent loops, scaled by --time-scale. The report includes the spec oracle's verdict; the exit \
            status is 1 when it found violations, 2 on bad input, 74 when a file cannot be read or written \
            (docs/cli.md).
            """
    )

    @Argument(help: "The scenario file (JSON; docs/contract.md §7).")
    var scenario: String

    @OptionGroup var output: OutputOptions

    @OptionGroup var clockOptions: ClockOptions

    @OptionGroup(title: "Server capacity (docs/contract.md §9)") var serverOptions: ServerOptions
    @OptionGroup(title: "A real server (roomlink serve)") var remoteOptions: RemoteOptions
    @OptionGroup(title: "A real server (roomlink serve)") var comparisonOptions: ComparisonOptions
    @OptionGroup(title: "Tokens (docs/cli.md)") var tokenOptions: TokenOptions
    @OptionGroup(title: "Watching the run (docs/live.md)") var liveOptions: LiveOptions

    func run() async throws {
        var scenario = try load()
        if let seed = clockOptions.seed { scenario.seed = seed }
        do {
            scenario.server = try serverOptions.apply(to: scenario.server)
        } catch {
            throw fail(error)
        }
        var playback = Playback(events: output.events, report: output.report, clockOptions: clockOptions)
        playback.logsAttempts = output.attempts
        playback.dryRun = output.dryRun
        playback.liveOptions = liveOptions
        do {
            playback.tokens = try tokenOptions.settings(dialect: scenario.dialect, remote: remoteOptions.server != nil)
            try remoteOptions.configure(
                &playback,
                for: scenario,
                capacityFlags: serverOptions,
                comparison: comparisonOptions
            )
        } catch {
            throw fail(error)
        }
        try await playback.play(scenario, name: self.scenario)
    }

    private func load() throws -> Scenario {
        let data = try readFile(scenario, as: "scenario")
        do {
            return try Scenario(json: data)
        } catch {
            throw fail(error, in: scenario)
        }
    }
}
