import ArgumentParser
import Foundation
import RoomLink

/// `roomlink report`: what can be done with run reports after the runs.
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Work with run reports (--report files of run and load).",
        subcommands: [Merge.self]
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
}
