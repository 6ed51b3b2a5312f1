import ArgumentParser
import Foundation
import RoomLink
import RoomLinkRedis

/// `roomlink load`: a reconnection load test built from flags — a population, a dialect, fault patterns — played
/// like `roomlink run` plays a scenario file.
struct Load: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Load-test reconnection: a population of clients, fault patterns from flags, the spec oracle's verdict.",
        discussion: """
            The flags build a population scenario (docs/contract.md §7): --clients users in --rooms rooms log in over \
            --login-over, then the faults strike, each on its own slice of the population. Faults combine and \
            repeat: --outages SHARE@AT:LENGTH[/OVER] (LENGTH 30s, 10s..2m uniform, ~30s exponential), --storm \
            SHARE@AT:LENGTH, --partition SHARE@AT:LENGTH (a share of the rooms), --flapping SHARE:PERIOD:DUTY[@FROM..UNTIL], \
            --kick-storm SHARE@AT[/OVER], --token-wave SHARE@AT[/OVER], --churn RATE[:AWAY][@FROM..UNTIL]; --fault NAME=SPEC \
            names any of them. --save-scenario writes the scenario, which \
            `roomlink run` replays. Exit status 1 on spec violations, 2 on bad input, 64 on a bad flag.
            """
    )

    @Option(help: "Simulated clients.") var clients: Int = 1_000
    @Option(help: "Rooms (client i is in room-(i mod rooms)).") var rooms: Int = 10
    @Option(help: "zego, agora or livekit.") var dialect: Scenario.Dialect = .zego
    @Option(help: "Scenario length.") var duration = DurationArgument("30m")
    @Option(help: "The population logs in over this window.") var loginOver = DurationArgument("60s")
    @Flag(help: "Population users hear of peers (ZEGO's userStatusNotify; Agora and LiveKit always do).")
    var notify = false
    @Option(help: "One-way network latency.") var latency = DurationArgument("50ms")
    @Option(help: "Uniform jitter on top of the latency.") var jitter = DurationArgument("0")
    @Option(help: "Share of messages lost, in [0, 1].") var loss: Double = 0
    @Option(help: "Override a timing of the dialect: NAME=DURATION, e.g. heartbeatInterval=5s (repeatable).")
    var timing: [String] = []
    @Option(
        help:
            "Retry policy: a preset name, NAME:BASE:CAP (fullJitter, equalJitter, decorrelatedJitter), or a JSON object."
    )
    var retry: String?
    @Option(help: "Random outages: SHARE@AT:LENGTH[/OVER], e.g. 0.1@5m:10s..2m/30s.") var outages: [String] = []
    @Option(help: "A storm: SHARE of all clients drop at AT for LENGTH: SHARE@AT:LENGTH, e.g. 0.5@10m:60s.")
    var storm: [String] = []
    @Option(help: "A room partition: SHARE of the rooms cut off at AT for LENGTH (drawn per room): SHARE@AT:LENGTH.")
    var partition: [String] = []
    @Option(help: "Flapping: SHARE:PERIOD:DUTY[@FROM..UNTIL], e.g. 0.05:20s:0.3@2m..8m.") var flapping: [String] = []
    @Option(help: "A kick storm: SHARE@AT[/OVER].") var kickStorm: [String] = []
    @Option(help: "A token-expiry wave: SHARE@AT[/OVER].") var tokenWave: [String] = []
    @Option(help: "Churn: RATE clients log out per second and back in AWAY later: RATE[:AWAY][@FROM..UNTIL].")
    var churn: [String] = []
    @Option(
        help: ArgumentHelp(
            "Any fault by its name: NAME=SPEC, e.g. storm=0.5@10m:60s (repeatable).",
            discussion:
                "NAME is one of \(LoadPlan.faultKinds.map { $0.name }.joined(separator: ", ")); SPEC is the form its own flag takes."
        )
    )
    var fault: [String] = []
    @Option(
        help: """
            Play slice I of N of the population (I from 0; rooms whose index modulo N is I, and their users): N \
            generator processes with one seed, each with its own --shard, play one run between them (roomlink \
            report merge adds up their reports).
            """
    )
    var shard: String?
    @Option(
        help: """
            Play the load in N generator processes started here, each a slice (--shard) with its own open-file \
            limit, and merge their reports and event logs (2 … 64, at most --rooms).
            """
    )
    var processes: Int?
    @Option(help: "Write the equivalent scenario (JSON) to this file.") var saveScenario: String?
    @Option(help: "Draw the time series and the reconnect-duration histogram to this SVG file.") var plot: String?
    @Option(help: "Write the per-second time series to this CSV file.") var timeseries: String?
    @Flag(help: "No progress output (on a terminal, one updating status line; otherwise a plain line every 5 s).")
    var quiet = false
    @OptionGroup var output: OutputOptions
    @OptionGroup var clockOptions: ClockOptions
    @OptionGroup(title: "Server capacity (docs/contract.md §9)") var serverOptions: ServerOptions
    @OptionGroup(title: "A real server (roomlink serve)") var remoteOptions: RemoteOptions
    @OptionGroup(title: "Tokens (docs/cli.md)") var tokenOptions: TokenOptions
    @OptionGroup(title: "Watching the run (docs/live.md)") var liveOptions: LiveOptions
    @OptionGroup(title: "A fleet of generators (docs/live.md)") var fleetOptions: FleetOptions

    func validate() throws {
        if let processes {
            guard (1...64).contains(processes) else { throw ValidationError("--processes must be from 1 to 64") }
            guard processes <= rooms else {
                throw ValidationError("--processes \(processes) needs at least as many rooms (--rooms \(rooms))")
            }
            guard shard == nil else { throw ValidationError("--processes starts its own --shard slices: give one") }
            guard !liveOptions.watches else {
                throw ValidationError(
                    "--metrics and --dashboard watch one generator process: with --processes, run the slices as a "
                        + "fleet (--shard I/N --coordinate, docs/live.md) and watch each, or use --html"
                )
            }
        }
        if fleetOptions.coordinate != nil {
            guard shard != nil else {
                throw ValidationError("--coordinate needs --shard I/N: which slice this generator plays")
            }
            guard processes == nil else {
                throw ValidationError("--coordinate makes this process one generator of a fleet: drop --processes")
            }
        } else if fleetOptions.merge {
            throw ValidationError("--merge merges a fleet's reports: it needs --coordinate")
        }
        guard loss.isFinite, (0...1).contains(loss) else {
            throw ValidationError("--loss must be in [0, 1], got \(loss)")
        }
    }

    /// The plan the flags describe.
    func plan() throws(RoomLinkError) -> LoadPlan {
        var plan = LoadPlan(clients: clients, rooms: rooms, duration: duration.duration)
        plan.dialect = dialect
        plan.seed = clockOptions.seed ?? 1
        plan.notify = notify
        plan.loginOver = loginOver.duration
        plan.network = Scenario.Network(latency: latency.duration, jitter: jitter.duration, loss: loss)
        for text in timing {
            let (name, value) = try LoadPlan.timing(text, field: "--timing")
            plan.timings[name] = value
        }
        plan.server = try serverOptions.apply(to: .unlimited)
        plan.retryJSON = try retry.map { text throws(RoomLinkError) in try LoadPlan.retryJSON(text, field: "--retry") }
        // One flag per kind, each taking its slices in this order, then the generic --fault in its own order.
        let run = plan.span
        let flags: [(texts: [String], kind: any LoadFault.Type, flag: String)] = [
            (outages, OutagesFault.self, "--outages"), (storm, StormFault.self, "--storm"),
            (partition, PartitionFault.self, "--partition"), (flapping, FlappingFault.self, "--flapping"),
            (kickStorm, KickStormFault.self, "--kick-storm"), (tokenWave, TokenWaveFault.self, "--token-wave"),
            (churn, ChurnFault.self, "--churn"),
        ]
        for (texts, kind, flag) in flags {
            for text in texts { plan.faults.append(try LoadPlan.read(kind, text, field: flag, run: run)) }
        }
        for text in fault { plan.faults.append(try LoadPlan.fault(text, field: "--fault", run: run)) }
        return plan
    }

    func run() async throws {
        let plan: LoadPlan
        let scenario: Scenario
        do {
            plan = try self.plan()
            scenario = try plan.scenario()
        } catch {
            throw fail(
                error.naming(fields: [
                    "clients": "--clients", "rooms": "--rooms", "duration": "--duration", "outages": "--outages",
                    "storm": "--storm", "flapping": "--flapping", "kickStorm": "--kick-storm",
                    "tokenWave": "--token-wave", "partition": "--partition", "churn": "--churn",
                ])
            )
        }
        do {
            try saveScenario.map { path throws(RoomLinkError) in
                output.dryRun ? try OutputFile(path).checkWritable() : try OutputFile(path).write(plan.scenarioJSON())
            }
            // Open every destination before running, so a bad path fails at once, not after the run.
            for path in [plot, timeseries, liveOptions.html].compactMap(\.self) {
                try OutputFile(path).checkWritable()
            }
        } catch {
            throw fail(error)
        }
        let title =
            "roomlink load — \(plan.dialect.rawValue), \(plan.clients) clients, \(plan.rooms) rooms, \(plan.duration.roomLinkText)"
        var playback = Playback(
            events: output.events,
            report: output.report,
            clockOptions: clockOptions,
            collectsLoadStatistics: true
        )
        playback.logsAttempts = output.attempts
        playback.dryRun = output.dryRun
        playback.faultWindows = plan.faultWindows
        playback.liveOptions = liveOptions
        playback.title = title
        do {
            playback.slice = try shard.map { text throws(RoomLinkError) in try RunSlice(parsing: text, field: "--shard")
            }
            if let slice = playback.slice, slice.count > plan.rooms {
                throw RoomLinkError(
                    code: .invalidInput,
                    field: "--shard",
                    message: "--shard: \(slice.count) slices need at least as many rooms (--rooms \(plan.rooms))"
                )
            }
        } catch {
            throw fail(error)
        }
        do {
            playback.tokens = try tokenOptions.settings(dialect: scenario.dialect, remote: remoteOptions.server != nil)
            try remoteOptions.configure(&playback, for: scenario, capacityFlags: serverOptions)
        } catch {
            throw fail(error)
        }
        playback.defaultShards = LibeventLoopGroup.coreCount
        if let processes, processes > 1, !output.dryRun {
            return try await runProcesses(processes, plan: plan, title: title)
        }
        if let coordinate = fleetOptions.coordinate {
            // A bad fleet address is said in a dry run too; Redis itself is reached only by a run.
            do {
                _ = try FleetAddress(parsing: coordinate)
            } catch {
                throw fail(RoomLinkError(code: .invalidInput, field: "--coordinate", message: "--coordinate: \(error)"))
            }
        }
        if let coordinate = fleetOptions.coordinate, !output.dryRun {
            return try await runInFleet(coordinate, playback: playback, scenario: scenario, title: title)
        }
        playback.afterRun = { [plot, timeseries] result in
            try Self.writePictures(of: result, title: title, plot: plot, timeseries: timeseries)
        }
        if !quiet {
            let terminal = isatty(STDERR_FILENO) != 0
            playback.progressInterval = terminal ? .seconds(1) : .seconds(5)
            playback.progress = { sample in
                // On a terminal, one status line rewritten in place; otherwise plain lines a log can keep.
                let text = terminal ? "\r\u{1B}[2K" + sample.line : "progress: " + sample.line + "\n"
                StandardStream.error.write(text)
            }
        }
        try await playback.play(scenario, name: "load")
        if !quiet, isatty(STDERR_FILENO) != 0 { StandardStream.error.write("\n") }
    }

    /// `--coordinate`: this process is one generator of a fleet. It joins the fleet in Redis before building
    /// anything (a Redis away, a slice taken, other flags are said at once), starts at the fleet's agreed instant,
    /// pushes its figures while it runs and its report at its end, and with `--merge` writes the fleet's merged
    /// outputs instead of its own.
    private func runInFleet(
        _ coordinate: String,
        playback: Playback,
        scenario: Scenario,
        title: String
    ) async throws {
        var playback = playback
        let generator = try await FleetGenerator.join(
            coordinate,
            slice: playback.slice,
            arguments: Array(CommandLine.arguments.dropFirst(2))
        )
        let timeout = fleetOptions.coordinateTimeout.duration
        playback.live = generator.live
        playback.resultReady = { generator.keep($0) }
        if clockOptions.clock == .real {
            playback.startGate = generator.gate(timeout: timeout, lead: fleetOptions.coordinateLead.duration)
        } else {
            // Virtual time: nothing to strike together, but the fleet still gathers before it runs.
            do {
                _ = try await generator.fleet.agreeOnStart(timeout: timeout, lead: .zero)
            } catch {
                await generator.close()
                throw fail(RoomLinkError(code: .invalidInput, field: "--coordinate", message: "--coordinate: \(error)"))
            }
        }
        if fleetOptions.merge {
            // This generator's own report goes to Redis only; the outputs the flags name are the fleet's.
            playback.report = nil
            playback.liveOptions.html = nil
        } else {
            playback.afterRun = { [plot, timeseries, title] result in
                // A slice's own pictures: a modelled server's panel would be one generator's part of it.
                var result = result
                result.servers = nil
                try Self.writePictures(of: result, title: title, plot: plot, timeseries: timeseries)
            }
        }
        generator.startPushing()
        var failure: (any Error)?
        do {
            try await playback.play(scenario, name: "load")
        } catch {
            failure = error
        }
        await generator.finish()
        if fleetOptions.merge {
            let state = try await generator.awaitFleet(timeout: timeout)
            let merged = try FleetMerge.merged(state)
            try FleetMerge.write(
                merged,
                report: output.report,
                plot: plot,
                timeseries: timeseries,
                html: liveOptions.html,
                generators: state.count
            )
            await generator.close()
            try Playback.failOnViolations(merged)
            if let failure { throw failure }
            return
        }
        await generator.close()
        if let failure { throw failure }
    }

    /// `--processes N`: N children each play a slice; their reports and logs are merged here.
    private func runProcesses(_ count: Int, plan: LoadPlan, title: String) async throws {
        let processes = LoadProcesses(
            count: count,
            arguments: Array(CommandLine.arguments.dropFirst()),
            events: output.events,
            report: output.report
        )
        let merged = try await processes.run()
        try Playback.write(merged, to: output.report)
        try Self.writePictures(of: merged, title: title, plot: plot, timeseries: timeseries)
        do {
            try liveOptions.html.map { path throws(RoomLinkError) in
                try OutputFile(path).write(RunDashboard.report(merged, title: title))
            }
        } catch {
            throw fail(error)
        }
        Playback.warnIfBehind(merged, whose: "a generator's loops", advice: "use more processes or fewer clients")
        try Playback.failOnViolations(merged)
    }

    /// `--plot` and `--timeseries` of a load's report, when it has load statistics: the picture (with the servers',
    /// connections' and tokens' panels it has) and the per-second series.
    static func writePictures(of result: RunReport, title: String, plot: String?, timeseries: String?) throws {
        guard let load = result.load else { return }
        do {
            try plot.map { path throws(RoomLinkError) in
                try OutputFile(path).write(
                    load.svg(
                        title: title,
                        servers: result.servers,
                        connections: result.connections,
                        tokens: result.tokens
                    )
                )
            }
            try timeseries.map { path throws(RoomLinkError) in
                try OutputFile(path).write(load.timeSeriesCSV(servers: result.servers, connections: result.connections))
            }
        } catch {
            throw fail(error)
        }
    }
}
