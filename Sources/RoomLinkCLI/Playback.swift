import ArgumentParser
import Foundation
import RoomLink

/// Plays a scenario for `roomlink run` and `roomlink load`: opens the destinations, runs on the chosen clock, writes
/// the event log and the report, and turns violations and bad input into exit statuses (1 and 2).
struct Playback {
    var events: String?
    var report: String?
    var clockOptions: ClockOptions
    /// Whether to gather a load test's statistics (`roomlink load`).
    var collectsLoadStatistics = false
    /// Runs after the report is written, before violations set the exit status (`roomlink load`'s pictures).
    var afterRun: ((RunReport) throws -> Void)? = nil
    /// Receives a progress sample every `progressInterval` of wall time while the run goes, and one at its end.
    var progress: (@Sendable (LoadProgress) -> Void)? = nil
    var progressInterval: Duration = .seconds(1)
    /// Simulations sharing a population in virtual time when `--shards` is not given.
    var defaultShards = 1
    /// Whether the event log carries `attempt` lines (`--attempts`).
    var logsAttempts = false
    /// A server in another process to play against (`--server`), and its admin API.
    var remote: TCPServerTarget?
    /// With ``remote``: play the scenario in virtual time too, and compare the two runs within this tolerance.
    var compareWithin: Duration?
    /// The slice of the population to play (`roomlink load --shard I/N`).
    var slice: RunSlice?
    /// The faults that end (storms, outages, partitions), for the load report's recoveries.
    var faultWindows: [LoadReport.FaultWindow] = []
    /// `--dry-run`: check everything a run checks before it starts, say what would run, and stop there.
    var dryRun = false
    /// Where the clients get their tokens (`--app-id`, `--token-url`, `--token-server`), if they fetch them.
    var tokens: TokenSettings?
    /// Watching the run while it goes (`--metrics`, `--dashboard`) and its HTML report (`--html`).
    var liveOptions = LiveOptions()
    /// The run's title on its pages (`--html`, `--dashboard`); the scenario's name by default.
    var title: String?
    /// A window on the run kept by the caller (a fleet's generator pushes it to Redis); one is made when the run is
    /// watched (`--metrics`, `--dashboard`) and none is given.
    var live: LiveRun?
    /// When the run starts on the real clock (a fleet's agreed start), once its world is built.
    var startGate: (@Sendable () async throws -> ContinuousClock.Instant)?
    /// Receives the run's report once it is written, before the verdict sets the exit status.
    var resultReady: (@Sendable (RunReport) -> Void)?

    /// Plays `scenario` (called `name` in messages): checks it, opens the destinations, runs it on the chosen clock,
    /// writes what it produced, and judges the run.
    func play(_ scenario: Scenario, name: String) async throws {
        var runner = try configuredRunner(for: scenario, name: name)
        if dryRun { return try sayDryRun(scenario, name: name) }
        // A signal or a closed pipe stops the run; what it produced is still written and reported.
        let interruption = RunInterruption()
        runner.interruption = interruption
        let writer = try openDestinations(stoppingOnClosedPipe: interruption)
        let options = try clock(for: scenario)
        let virtualEvents = try await virtualRun(of: runner)
        let realEvents = compareWithin.map { _ in EventCollector(forwardingTo: writer) }
        let title = self.title ?? "roomlink run — \(name)"
        // The live servers listen before the run starts, so that a port taken fails in a millisecond.
        let live = self.live ?? (liveOptions.watches ? LiveRun() : nil)
        runner.live = live
        runner.startGate = startGate
        var servers: LiveServers?
        do {
            if let live { servers = try await LiveServers.start(liveOptions, live: live, title: title) }
        } catch {
            try? writer?.close()
            throw fail(error)
        }
        var result: RunReport
        do {
            result = try await run(runner, options: options, sink: realEvents ?? writer, writer: writer, interruption)
        } catch {
            await servers?.stop()
            throw error
        }
        if let servers, !servers.servers.isEmpty { result.liveViewCPUSeconds = servers.cpuSeconds }
        // The outputs first: a page following the run is let see its end after they are written.
        let readerStayed: Bool
        do {
            readerStayed = try writeOutputs(result, writer: writer, interruption: interruption)
            if readerStayed { try writeHTML(result, title: title) }
            resultReady?(result)
        } catch {
            await servers?.stop()
            throw error
        }
        await servers?.stop()
        guard readerStayed else { return }
        try judge(
            result,
            interruption: interruption,
            dialect: scenario.dialect,
            virtual: virtualEvents,
            real: realEvents
        )
    }

    /// The runner for `scenario`, set up from the flags and checked before anything is built: a population that
    /// cannot fit is refused in a millisecond.
    private func configuredRunner(for scenario: Scenario, name: String) throws -> ScenarioRunner {
        do {
            var runner = try ScenarioRunner(scenario: scenario)
            // Watched or drawn, a scenario's run gathers the load's statistics too: they are its panels.
            runner.collectsLoadStatistics =
                collectsLoadStatistics || liveOptions.watches || liveOptions.html != nil || live != nil
            runner.shards = clockOptions.shards ?? defaultShards
            runner.logsAttempts = logsAttempts
            runner.slice = slice
            runner.memoryLimit = clockOptions.memoryLimit?.bytes ?? ScenarioLimits.defaultMemoryLimit
            runner.faultWindows = faultWindows
            try runner.check()
            return runner
        } catch {
            throw fail(error, in: name)
        }
    }

    /// `--dry-run`: the destinations are checked writable, and the run that would have been played is said.
    private func sayDryRun(_ scenario: Scenario, name: String) throws {
        do {
            for path in [events, report, liveOptions.html].compactMap(\.self) where path != "-" {
                try OutputFile(path).checkWritable()
            }
        } catch {
            throw fail(error)
        }
        print(Self.dryRunLine(scenario, name: name, clock: clockOptions, remote: remote))
    }

    /// Opens the event log and checks the report's destination before running, so that a bad path fails in a
    /// millisecond, not after the run. A closed pipe on the log stops the run.
    private func openDestinations(
        stoppingOnClosedPipe interruption: RunInterruption
    ) throws -> EventLogWriter<EventLogLine>? {
        let stopOnClosedPipe: @Sendable (Int32) -> Void = { number in
            if number == EPIPE { interruption.interrupt(.closedOutput) }
        }
        do {
            let writer: EventLogWriter<EventLogLine>? =
                switch events {
                case nil: nil
                case "-": EventLogWriter(onFailure: stopOnClosedPipe)
                case let path?: try EventLogWriter(path: path, onFailure: stopOnClosedPipe)
                }
            try report.map { path throws(RoomLinkError) in try OutputFile(path).checkWritable() }
            try liveOptions.html.map { path throws(RoomLinkError) in try OutputFile(path).checkWritable() }
            return writer
        } catch {
            throw fail(error)
        }
    }

    /// The clock the run plays on, seeded by the scenario. A real server runs on the real clock.
    private func clock(for scenario: Scenario) throws -> ClockOptions {
        var options = clockOptions
        options.seed = scenario.seed
        guard remote == nil || options.clock == .real else {
            throw fail(
                RoomLinkError(
                    code: .invalidInput,
                    field: "--server",
                    message: "--server plays against a real server on the real clock: add --clock real"
                )
            )
        }
        return options
    }

    /// With `--compare`: the same scenario in virtual time first (instant), to compare the real run with.
    private func virtualRun(of runner: ScenarioRunner) async throws -> [LoggedEvent]? {
        guard compareWithin != nil else { return nil }
        do {
            return try await runner.virtualEvents()
        } catch {
            throw fail(error, in: "the virtual run")
        }
    }

    /// Runs `runner` on `options`' clock (against the remote server, if there is one), its events to `sink`, with
    /// signals trapped to stop it. On the real clock the log is flushed a few times a second, so that a reader can
    /// follow it; a run that fails has what it produced written before the failure is reported.
    private func run(
        _ runner: ScenarioRunner,
        options: ClockOptions,
        sink: (any EventSink<EventLogLine>)?,
        writer: EventLogWriter<EventLogLine>?,
        _ interruption: RunInterruption
    ) async throws -> RunReport {
        let trap = SignalTrap(stopping: interruption)
        defer { trap.release() }
        let follower = (options.clock == .real ? writer : nil).map { writer in
            Task.detached {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(200))
                    writer.flush()
                }
            }
        }
        defer { follower?.cancel() }
        do {
            return try await options.withRuntime { [runner, progress, progressInterval, remote, sink, tokens] group in
                var runner = runner
                if let tokens {
                    runner.tokens = try await tokens.plan(
                        on: group,
                        seed: runner.scenario.seed,
                        dialect: runner.scenario.dialect
                    )
                }
                if let remote, let loops = group as? LibeventLoopGroup {
                    do {
                        try runner.playAgainst(remote, on: loops)
                    } catch let error as RoomLinkError {
                        throw error.naming("--server")
                    }
                }
                return try await runner.run(
                    on: group,
                    events: sink,
                    progress: progress,
                    progressInterval: progressInterval
                )
            }
        } catch {
            // Keep every event already produced: write what is buffered before reporting the failure.
            try? writer?.close()
            // A server the run could not play against is a flag's fault, said as such; anything else stopped it.
            if let error = error as? RoomLinkError,
                ["--server", "--token-url", "--token-ca", "--coordinate"].contains(error.field)
            {
                throw fail(error)
            }
            throw fail(error, in: "the run stopped")
        }
    }

    /// Closes the event log and writes the report. Returns `false` when the reader went away (a closed pipe): the
    /// lines written so far are what it took (`--events - | head`), and nothing more is said.
    private func writeOutputs(
        _ result: RunReport,
        writer: EventLogWriter<EventLogLine>?,
        interruption: RunInterruption
    ) throws -> Bool {
        do {
            try writer?.close()
        } catch {
            // The reader went away (during the run, or before the last block): nothing to say to it, and nothing
            // lost that it wanted.
            guard interruption.reason == .closedOutput else { throw fail(error) }
        }
        let closedOutput = interruption.reason == .closedOutput
        do {
            // After a closed pipe, a report file is still written, but no summary is said: the reader left, and the
            // run ending early was its choice.
            if !(closedOutput && report == nil) { try Self.write(result, to: report) }
        } catch  where closedOutput && report == "-" {
            // The report was to go to the same closed pipe.
        }
        return !closedOutput
    }

    /// `--html`: the finished run as one self-contained page.
    private func writeHTML(_ result: RunReport, title: String) throws {
        guard let path = liveOptions.html else { return }
        do {
            try OutputFile(path).write(RunDashboard.report(result, title: title))
        } catch {
            throw fail(error)
        }
    }

    /// The run's verdict as an exit status: a signal's (128 + its number) or a stop asked for (1); then, with
    /// `--compare`, whether the real run agreed with the virtual one; warnings of loops that fell behind and of a
    /// server overloaded; `afterRun`; and the oracle's violations.
    private func judge(
        _ result: RunReport,
        interruption: RunInterruption,
        dialect: Scenario.Dialect,
        virtual virtualEvents: [LoggedEvent]?,
        real realEvents: EventCollector?
    ) throws {
        // What stopped the run is what the report says stopped it: a signal that came once every shard had reached
        // the scenario's end found nothing to stop, and the run's log and report are whole.
        switch interruption.cause(of: result) {
        case nil, .closedOutput:
            break
        case .signal(let number):
            // Interrupted runs judge a log cut short, so the verdict does not set the status: the signal does.
            StandardStream.error.write(Self.interruptionLine(result, events: events, report: report))
            throw ExitCode(128 + number)
        case .requested:
            throw ExitCode(1)
        }
        if let tolerance = compareWithin, let virtualEvents, let realEvents {
            let comparison = RunComparison(virtual: virtualEvents, real: realEvents.all)
            let earliness = RunComparison.earliness(for: dialect)
            StandardStream.error.write(comparison.summary(tolerance: tolerance, earliness: earliness))
            guard comparison.agrees(tolerance: tolerance, earliness: earliness) else { throw ExitCode(1) }
        }
        Self.warnIfBehind(result, whose: "the loops", advice: "use fewer clients or a time scale closer to 1")
        if let servers = result.servers, servers.sustainedOverload || servers.recovered == false {
            // Said even when the summary goes to a report file: the run's main finding.
            StandardStream.error.write("roomlink: " + servers.summaryLine + "\n")
        }
        try afterRun?(result)
        try Self.failOnViolations(result)
    }

    /// What `--dry-run` prints: the run that would have been played.
    static func dryRunLine(
        _ scenario: Scenario,
        name: String,
        clock: ClockOptions,
        remote: TCPServerTarget?
    ) -> String {
        let people =
            scenario.population.map { "\($0.clients) clients in \($0.rooms) rooms" }
            ?? "\(scenario.users.count) users"
        let where_ = remote.map { " against \($0.servers.map(\.description).joined(separator: ","))" } ?? ""
        let on =
            clock.clock == .virtual
            ? "the virtual clock" : "the real clock at time scale \(clock.timeScale)"
        return "\(name): \(scenario.dialect.rawValue), \(people), \(scenario.timeline.count) timeline entries, "
            + "\(scenario.end.roomLinkText) on \(on)\(where_) (dry run: nothing played, nothing written)"
    }

    /// What an interrupted run says on standard error: how far it got, and what was kept where.
    static func interruptionLine(_ result: RunReport, events: String?, report: String?) -> String {
        var kept: [String] = []
        if events != nil { kept.append("\(result.events) events written") }
        kept.append(report == nil ? "the summary above says interrupted" : "the report says interrupted")
        return "roomlink: interrupted at \(String(format: "%.1f", result.scenarioSeconds)) s of scenario time; "
            + kept.joined(separator: ", ") + "\n"
    }

    /// Warns when `result`'s loops (`whose`) fell behind the scenario, so that a saturated generator is not taken for
    /// a slow server — apart when they fell behind only while the rooms filled, and kept up after.
    static func warnIfBehind(_ result: RunReport, whose: String, advice: String) {
        guard result.keptUp == false, let lateness = result.timerLateness else { return }
        // A fill's fan-out is the heaviest part of most runs: the steady state's figures may still be on time.
        let warning =
            if result.keptUpAfterFill == true, let steady = result.connections?.steadyTimerLateness {
                "\(whose) fell behind the scenario while the rooms filled (timers ran \(lateness.text) late in real "
                    + "time) and kept up after (\(steady.text)): the fill's timing is this machine's, the steady "
                    + "state's the scenario's; \(advice) for a fill on time"
            } else {
                "\(whose) fell behind the scenario (timers ran \(lateness.text) late in real time): its timing is "
                    + "this machine's, not the scenario's; \(advice)"
            }
        StandardStream.error.write("roomlink: warning: \(warning)\n")
    }

    /// Says the run's spec violations (a sample of them) and ends with exit status 1, if it had any.
    static func failOnViolations(_ result: RunReport) throws {
        guard result.violations > 0 else { return }
        StandardStream.error.write(
            "roomlink: \(result.violations) spec violations\n" + result.violationSample.map { "  \($0)\n" }.joined()
        )
        throw ExitCode(1)
    }

    /// Reads a run report (`--report`'s JSON) from `path`, naming the file and what is wrong when it cannot.
    static func readReport(_ path: String, as what: String) throws -> RunReport {
        let data = try readFile(path, as: what)
        do {
            return try JSONDecoder().decode(RunReport.self, from: data)
        } catch DecodingError.keyNotFound(let key, let context) {
            let field = (context.codingPath + [key]).map(\.stringValue).joined(separator: ".")
            throw fail("\(path): not a roomlink run report (missing '\(field)')")
        } catch DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context),
            DecodingError.dataCorrupted(let context)
        {
            let field = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw fail("\(path): not a roomlink run report (at '\(field)': \(context.debugDescription))")
        } catch {
            throw fail("\(path): not a roomlink run report")
        }
    }

    /// Writes `result` as JSON to `destination` (`-`: standard output), or its summary to standard error without one.
    static func write(_ result: RunReport, to destination: String?) throws {
        guard let destination else {
            StandardStream.error.write(result.summary)
            return
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        do {
            try OutputFile(destination).write(try encoder.encode(result) + Data("\n".utf8))
        } catch let error as RoomLinkError {
            throw fail(error)
        }
    }
}
