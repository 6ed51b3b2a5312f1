import ArgumentParser
import Foundation
import RoomLink

/// `roomlink report`: what can be done with run reports after the runs.
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Work with run reports (--report files of run and load), and check a callback receiver.",
        subcommands: [Merge.self, Callbacks.self]
    )

    /// `roomlink report merge`: the report of several generator processes' runs, as one.
    struct Merge: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Merge the reports of several generators (load --shard I/N) into one, exactly.",
            discussion: """
                Counts add up; percentiles come from the merged histograms each report carries; time series add up \
                second by second from the scenario's start. The reports must be of one scenario (dialect, clock, \
                seed, length). Without --report, the merged summary goes to standard error. Exit status 1 when the \
                merged run has spec violations, 2 on bad input.
                """
        )

        @Argument(help: "The reports to merge (JSON, from --report).") var reports: [String]
        @Option(help: "Write the merged report (JSON) to this file ('-': standard output).") var report: String?
        @Option(help: "Draw the merged time series and histogram to this SVG file.") var plot: String?
        @Option(help: "Write the merged per-second time series to this CSV file.") var timeseries: String?

        func run() throws {
            guard !reports.isEmpty else { throw fail("report merge: give the reports to merge") }
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
            try Playback.failOnViolations(merged)
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
