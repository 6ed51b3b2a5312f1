import ArgumentParser
import Foundation
import RoomLink
import RoomLinkRedis

/// `roomlink report`: what can be done with run reports after the runs.
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Work with run reports (--report files of run and load), and check a callback receiver.",
        subcommands: [Merge.self, Watch.self, Callbacks.self]
    )

    /// `roomlink report merge`: the report of several generator processes' runs, as one.
    struct Merge: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Merge the reports of several generators (load --shard I/N) into one, exactly.",
            discussion: """
                Counts add up; percentiles come from the merged histograms each report carries; time series add up \
                second by second from the scenario's start. The reports must be of one scenario (dialect, clock, \
                seed, length). Without --report, the merged summary goes to standard error. Exit status 1 when the \
                merged run has spec violations, 2 on bad input. A fleet's reports are read from Redis: \
                `roomlink report merge redis://HOST:PORT/RUN` (docs/live.md); a generator that left none is named in \
                the merged report's `lacks`.
                """
        )

        @Argument(help: "The reports to merge (JSON, from --report), or a fleet's run: redis://HOST:PORT/RUN.")
        var reports: [String]
        @Option(help: "Write the merged report (JSON) to this file ('-': standard output).") var report: String?
        @Option(help: "Draw the merged time series and histogram to this SVG file.") var plot: String?
        @Option(help: "Write the merged per-second time series to this CSV file.") var timeseries: String?
        @Option(help: "Write the merged run as one self-contained HTML file.") var html: String?

        func run() async throws {
            guard !reports.isEmpty else { throw fail("report merge: give the reports to merge") }
            if let fleet = reports.first, fleet.hasPrefix("redis://") {
                guard reports.count == 1 else { throw fail("report merge: give one fleet (redis://…) or report files") }
                let state: FleetState
                do {
                    state = try await FleetState.read(try FleetAddress(parsing: fleet))
                } catch {
                    throw fail("report merge: \(error)")
                }
                let merged = try FleetMerge.merged(state)
                try FleetMerge.write(
                    merged,
                    report: report,
                    plot: plot,
                    timeseries: timeseries,
                    html: html,
                    generators: state.count
                )
                try Playback.failOnViolations(merged)
                return
            }
            let parts = try reports.map { try Playback.readReport($0, as: "report") }
            let merged: RunReport
            do {
                merged = try RunReport.merged(parts)
            } catch {
                throw fail(error, in: "report merge")
            }
            try Playback.write(merged, to: report)
            if let load = merged.load {
                let title =
                    "roomlink — \(merged.dialect), \(merged.clients) clients, \(merged.rooms) rooms, "
                    + "\(parts.count) generators merged"
                do {
                    try plot.map { path throws(RoomLinkError) in
                        try OutputFile(path).write(
                            load.svg(title: title, servers: nil, connections: merged.connections, tokens: merged.tokens)
                        )
                    }
                    try timeseries.map { path throws(RoomLinkError) in
                        try OutputFile(path).write(load.timeSeriesCSV(servers: nil, connections: merged.connections))
                    }
                } catch {
                    throw fail(error)
                }
            } else if plot != nil || timeseries != nil {
                throw fail("report merge: --plot and --timeseries need load reports")
            }
            do {
                try html.map { path throws(RoomLinkError) in
                    try OutputFile(path).write(
                        RunDashboard.report(merged, title: "roomlink — \(parts.count) generators merged")
                    )
                }
            } catch {
                throw fail(error)
            }
            try Playback.failOnViolations(merged)
        }
    }

    /// `roomlink report watch redis://…`: a fleet's merged progress, live.
    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Follow a fleet's merged progress live: roomlink report watch redis://HOST:PORT/RUN.",
            discussion: """
                Reads the live figures every generator pushes (load --coordinate) and says the fleet's merged figures \
                every --interval, naming generators that stopped answering, until every generator has pushed its \
                report. Exit status 0 when all did, 1 when one stopped answering without one, 2 on bad input.
                """
        )

        @Argument(help: "The fleet's run: redis://HOST:PORT/RUN.") var fleet: String
        @Option(help: "How often to say the figures.") var interval = DurationArgument("1s")
        @Option(help: "Give up after this long (default: follow until the fleet has finished).")
        var timeout: DurationArgument?

        func run() async throws {
            let address: FleetAddress
            do {
                address = try FleetAddress(parsing: fleet)
            } catch {
                throw fail("report watch: \(error)")
            }
            let terminal = isatty(STDERR_FILENO) != 0
            let deadline = timeout.map { ContinuousClock.now + $0.duration }
            while true {
                let state: FleetState
                do {
                    state = try await FleetState.read(address)
                } catch {
                    throw fail("report watch: \(error)")
                }
                let line = Self.line(state)
                StandardStream.error.write(terminal ? "\r\u{1B}[2K" + line : line + "\n")
                let done = state.count > 0 && (0..<state.count).allSatisfy { state.reports[$0] != nil }
                let dead = (0..<state.count).filter {
                    state.reports[$0] == nil && state.members[$0] != nil && state.live[$0] != nil
                        && !state.alive.contains($0)
                }
                if done
                    || (state.count > 0
                        && (0..<state.count).allSatisfy { state.reports[$0] != nil || dead.contains($0) })
                {
                    if terminal { StandardStream.error.write("\n") }
                    if !dead.isEmpty { throw ExitCode(1) }
                    return
                }
                if let deadline, ContinuousClock.now >= deadline {
                    if terminal { StandardStream.error.write("\n") }
                    throw ExitCode(1)
                }
                try await Task.sleep(for: interval.duration)
            }
        }

        /// One line of the fleet's figures: the merged progress, and who is lacking.
        static func line(_ state: FleetState) -> String {
            guard state.count > 0 else { return "fleet \(state.address.run): no generator registered yet" }
            var merged: LiveRunSnapshot?
            for index in 0..<state.count {
                guard let data = state.live[index],
                    let snapshot = try? JSONDecoder().decode(LiveRunSnapshot.self, from: data)
                else { continue }
                if merged == nil { merged = snapshot } else { merged?.merge(snapshot) }
            }
            let finished = (0..<state.count).filter { state.reports[$0] != nil }.count
            let dead = (0..<state.count).filter {
                state.reports[$0] == nil && state.live[$0] != nil && !state.alive.contains($0)
            }
            var line =
                "fleet \(state.address.run): \(state.members.count)/\(state.count) registered, "
                + "\(finished) finished"
            if !dead.isEmpty { line += ", not answering: " + dead.map { "generator \($0)" }.joined(separator: ", ") }
            if let merged { line += "  " + merged.progress.line + "  clients \(merged.clients)" }
            return line
        }
    }

    /// `roomlink report callbacks`: a receiver's room lists against the truth `serve --callback-truth` wrote.
    struct Callbacks: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check a callback receiver's room lists against serve's --callback-truth (docs/callbacks.md).",
            discussion: """
                VIEW is the receiver's final lists, {"rooms": {"room": ["user", …]}}, taken once serve's callbacks \
                have settled (roomlink_callbacks_pending 0). Says which users the receiver wrongly holds or wrongly \
                dropped, per room, since when, and why: a callback the vendor lost, one still on its way, callbacks \
                played out of order or twice (disorder), or none of these (the receiver). Exit status 0 when the \
                lists match, 1 when they do not, 2 on bad input.
                """
        )

        @Argument(help: "The truth serve wrote (--callback-truth, JSON Lines).") var truth: String
        @Argument(help: "The receiver's room lists (JSON).") var view: String
        @Option(help: "Whose deliveries to read, when the truth has several receivers (their URL).")
        var receiver: String?
        @Flag(help: "Write the audit as JSON on standard output.") var json = false

        func run() throws {
            let audit: CallbackAudit
            do {
                let truthBytes = try InputFile(truth, as: "the callback truth", limit: InputFile.eventLogLimit).read()
                let viewBytes = try InputFile(view, as: "the receiver's view", limit: InputFile.scenarioLimit).read()
                do {
                    audit = try CallbackAudit(truth: truthBytes, view: viewBytes, receiver: receiver)
                } catch {
                    throw RoomLinkError(code: .invalidInput, message: "report callbacks: \(error)")
                }
            } catch {
                throw fail(error)
            }
            if json {
                let data = try JSONSerialization.data(
                    withJSONObject: audit.json,
                    options: [.sortedKeys, .prettyPrinted]
                )
                StandardStream.output.write(String(decoding: data, as: UTF8.self) + "\n")
            } else {
                StandardStream.output.write(audit.text + "\n")
            }
            if !audit.matches { throw ExitCode(1) }
        }
    }
}
