import ArgumentParser

/// Where a run writes its event log and its report (`run` and `load`).
struct OutputOptions: ParsableArguments {
    @Option(help: "Write the event log (JSON Lines) to this file, or - for standard output.")
    var events: String?

    @Option(help: "Write the run's report (one JSON object) to this file, or - for standard output.")
    var report: String?

    @Flag(help: "Log each login attempt and how it ended (type attempt, beyond docs/contract.md §7's log).")
    var attempts = false

    func validate() throws {
        if events == "-", report == "-" {
            throw ValidationError("--events and --report cannot both write to standard output (-)")
        }
    }
}
