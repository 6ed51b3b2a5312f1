import ArgumentParser

/// Where a run writes its event log and its report (`run` and `load`).
struct OutputOptions: ParsableArguments {
    @Option(help: "Write the event log (JSON Lines) to this file, or - for standard output.")
    var events: String?

    @Option(help: "Write the run's report (one JSON object) to this file, or - for standard output.")
    var report: String?

    @Flag(help: "Log each login attempt and how it ended (type attempt, beyond docs/contract.md §7's log).")
    var attempts = false

    @Flag(
        help: """
            Check the scenario, the flags and the destinations as a run would, print what would run, and stop: \
            nothing is played or written (exit 0, or the status the run would have failed with).
            """
    )
    var dryRun = false

    func validate() throws {
        if events == "-", report == "-" {
            throw ValidationError("--events and --report cannot both write to standard output (-)")
        }
    }
}
