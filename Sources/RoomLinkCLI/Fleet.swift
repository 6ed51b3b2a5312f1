import ArgumentParser
import Foundation
import RoomLink
import RoomLinkRedis

/// Generators that strike together (`roomlink load --shard I/N --coordinate redis://HOST:PORT/RUN`; docs/live.md).
struct FleetOptions: ParsableArguments {
    @Option(
        help: """
            Play this --shard I/N as one generator of a fleet: register in Redis under RUN, wait for all N, start the \
            scenario at one instant of Redis's clock, push live figures and the report (docs/live.md).
            """
    )
    var coordinate: String?

    @Option(help: "How long to wait for every generator of the fleet to be ready.")
    var coordinateTimeout = DurationArgument("2m")

    @Option(help: "The agreed start comes this long after the last generator is ready.")
    var coordinateLead = DurationArgument("2s")

    @Flag(
        help: """
            With --coordinate: wait for every generator's report and make --report, --plot, --timeseries and --html \
            the fleet's merged ones (this generator's own report is in Redis).
            """
    )
    var merge = false

    /// The options a fleet's generators may differ in: where each writes, what it watches, how it joins.
    static let perGenerator: Set<String> = [
        "--shard", "--coordinate", "--coordinate-timeout", "--coordinate-lead", "--merge", "--report", "--events",
        "--plot", "--timeseries", "--html", "--save-scenario", "--quiet", "--metrics", "--dashboard",
        "--source-addresses", "--attempts", "--server", "--server-admin", "--token-url", "--token-ca",
    ]

    /// The flags that define the run, as the fleet compares them: the command line without ``perGenerator``'s.
    static func definingFlags(_ arguments: [String]) -> String {
        var kept: [String] = []
        var index = arguments.startIndex
        let flags: Set<String> = ["--merge", "--quiet", "--attempts"]
        while index < arguments.endIndex {
            let argument = arguments[index]
            let name = String(argument.split(separator: "=", maxSplits: 1).first ?? "")
            if perGenerator.contains(name) {
                // `--name value` takes the next argument too, `--name=value` and flags do not.
                index += argument.contains("=") || flags.contains(name) ? 1 : 2
                continue
            }
            kept.append(argument)
            index += 1
        }
        return kept.joined(separator: " ")
    }
}

/// One generator's part in a fleet, for the length of its run.
final class FleetGenerator: Sendable {
    let fleet: FleetCoordinator
    let live: LiveRun
    private let pusher = LockedBox<Task<Void, Never>?>(nil)
    private let result = LockedBox<RunReport?>(nil)

    init(fleet: FleetCoordinator, live: LiveRun) {
        self.fleet = fleet
        self.live = live
    }

    /// Joins the fleet at `text` as `slice` (exit status 2, naming the problem, when it cannot).
    static func join(_ text: String, slice: RunSlice?, arguments: [String]) async throws -> FleetGenerator {
        do {
            guard let slice else {
                throw RoomLinkError(
                    code: .invalidInput,
                    field: "--coordinate",
                    message: "--coordinate needs --shard I/N: which slice this generator plays"
                )
            }
            let address: FleetAddress
            do {
                address = try FleetAddress(parsing: text)
            } catch {
                throw RoomLinkError(code: .invalidInput, field: "--coordinate", message: "--coordinate: \(error)")
            }
            let skew = ProcessInfo.processInfo.environment["ROOMLINK_TEST_CLOCK_SKEW_MS"].flatMap(Int64.init)
            do {
                let fleet = try await FleetCoordinator.join(
                    address,
                    index: slice.index,
                    count: slice.count,
                    flags: FleetOptions.definingFlags(arguments),
                    skew: .milliseconds(skew ?? 0)
                )
                return FleetGenerator(fleet: fleet, live: LiveRun())
            } catch {
                throw RoomLinkError(code: .invalidInput, field: "--coordinate", message: "--coordinate: \(error)")
            }
        } catch {
            throw fail(error)
        }
    }

    /// The run's start gate: every generator ready, then the agreed instant. Once it has passed, the start is
    /// checked by fresh round trips and recorded for the fleet.
    func gate(timeout: Duration, lead: Duration) -> @Sendable () async throws -> ContinuousClock.Instant {
        { [fleet] in
            let agreed: (start: ContinuousClock.Instant, agreedMicros: Int64, roundTripMicros: Int64)
            do {
                agreed = try await fleet.agreeOnStart(timeout: timeout, lead: lead)
            } catch {
                throw RoomLinkError(code: .invalidInput, field: "--coordinate", message: "--coordinate: \(error)")
            }
            Task.detached {
                try? await Task.sleep(until: agreed.start + .milliseconds(300), clock: .continuous)
                guard let check = try? await fleet.redisMicros(of: agreed.start) else { return }
                await fleet.recordStart(
                    FleetStart(
                        agreedMicros: agreed.agreedMicros,
                        originMicros: check.micros,
                        roundTripMicros: agreed.roundTripMicros,
                        checkRoundTripMicros: check.roundTripMicros
                    )
                )
            }
            return agreed.start
        }
    }

    /// Pushes the live figures every second until ``finish(report:)``; Redis lost is said once, and the run goes on.
    func startPushing() {
        let task = Task.detached { [fleet, live] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                guard let snapshot = live.snapshot(), let data = try? JSONEncoder().encode(snapshot) else { continue }
                if await !fleet.pushLive(data) {
                    let reason = await fleet.lostReason ?? "no answer"
                    StandardStream.error.write(
                        "roomlink: warning: lost the fleet's Redis (\(reason)): the run goes on, and keeps its own "
                            + "report; its live figures are not pushed while Redis is away\n"
                    )
                }
            }
        }
        pusher.withLock { $0 = task }
    }

    /// Keeps the run's report for ``finish()``.
    func keep(_ report: RunReport) {
        result.withLock { $0 = report }
    }

    /// Stops pushing, pushes the last figures and the report. Nothing is lost when Redis is gone: the report was
    /// written where the flags said, and a warning says it did not reach the fleet.
    func finish() async {
        pusher.withLock { $0 }?.cancel()
        if let snapshot = live.snapshot(), let data = try? JSONEncoder().encode(snapshot) {
            _ = await fleet.pushLive(data)
        }
        guard let report = result.withLock({ $0 }) else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(report) else { return }
        if let reason = await fleet.pushReport(data) {
            StandardStream.error.write(
                "roomlink: warning: the report did not reach the fleet's Redis (\(reason)): it is kept here "
                    + "(--report, or the summary above); `roomlink report merge` of the fleet will say it lacks slice "
                    + "\(fleet.index)/\(fleet.count)\n"
            )
        }
    }

    /// `--merge`: waits until every generator has pushed its report or stopped answering (at most `timeout`), then
    /// reads the fleet.
    func awaitFleet(timeout: Duration) async throws -> FleetState {
        let deadline = ContinuousClock.now + timeout
        while true {
            let state: FleetState
            do {
                state = try await FleetState.read(fleet.address)
            } catch {
                throw fail("--merge: \(error)")
            }
            let waiting = (0..<fleet.count).filter { state.reports[$0] == nil && state.alive.contains($0) }
            if waiting.isEmpty || ContinuousClock.now >= deadline { return state }
            try? await Task.sleep(for: .milliseconds(200))
        }
    }

    func close() async {
        await fleet.close()
    }
}

/// A fleet's reports merged: what `roomlink report merge redis://…` and `load --merge` write.
enum FleetMerge {
    /// The merged report of what Redis holds of the fleet, each generator that left no report named in `lacks`.
    static func merged(_ state: FleetState) throws -> RunReport {
        guard state.count > 0 else {
            throw fail("report merge: no fleet '\(state.address.run)' in \(state.address.endpoint)")
        }
        var parts: [RunReport] = []
        var lacks: [String] = []
        for index in 0..<state.count {
            let who = state.members[index].map { "generator \(index) on \($0.host) (pid \($0.pid))" }
            if let data = state.reports[index] {
                do {
                    parts.append(try JSONDecoder().decode(RunReport.self, from: data))
                    continue
                } catch {
                    lacks.append("slice \(index)/\(state.count): its report in Redis does not read (\(error))")
                    continue
                }
            }
            var line = "slice \(index)/\(state.count): "
            guard let who else {
                lacks.append(line + "no generator ever registered for it")
                continue
            }
            line += state.alive.contains(index) ? "\(who) is still running" : "\(who) stopped answering"
            line += ", and left no report"
            if let data = state.live[index], let last = try? JSONDecoder().decode(LiveRunSnapshot.self, from: data) {
                line += String(
                    format: "; its last figures, at %.1f of %.0f s of scenario time: %d online, %d reconnecting, "
                        + "%d failed of %d clients",
                    last.progress.scenarioSeconds,
                    last.progress.scenarioEnd,
                    last.progress.online,
                    last.progress.reconnecting,
                    last.progress.failed,
                    last.clients
                )
            }
            lacks.append(line)
        }
        guard !parts.isEmpty else {
            throw fail(
                "report merge: the fleet '\(state.address.run)' has no report yet:\n  "
                    + lacks.joined(separator: "\n  ")
            )
        }
        var merged: RunReport
        do {
            merged = try RunReport.merged(parts)
        } catch {
            throw fail(error, in: "report merge")
        }
        if !lacks.isEmpty { merged.lacks = lacks }
        return merged
    }

    /// Writes `merged` where the flags say: the report (or the summary), the plot, the CSV, the HTML page.
    static func write(
        _ merged: RunReport,
        report: String?,
        plot: String?,
        timeseries: String?,
        html: String?,
        generators: Int
    ) throws {
        try Playback.write(merged, to: report)
        let title =
            "roomlink — \(merged.dialect), \(merged.clients) clients, \(merged.rooms) rooms, "
            + "\(generators) generators merged"
        guard merged.load != nil || (plot == nil && timeseries == nil) else {
            throw fail("report merge: --plot and --timeseries need load reports")
        }
        try Load.writePictures(of: merged, title: title, plot: plot, timeseries: timeseries)
        do {
            try html.map { path throws(RoomLinkError) in
                try OutputFile(path).write(RunDashboard.report(merged, title: title))
            }
        } catch {
            throw fail(error)
        }
        if let lacks = merged.lacks {
            StandardStream.error.write(
                "roomlink: the merged report lacks \(lacks.count) part\(lacks.count == 1 ? "" : "s"):\n"
                    + lacks.map { "  \($0)\n" }.joined()
            )
        }
    }
}
