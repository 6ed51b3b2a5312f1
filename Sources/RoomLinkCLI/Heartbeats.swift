import ArgumentParser
import Foundation
import RoomLink

/// `roomlink heartbeats`: the runtime's timer load without the room protocol.
struct Heartbeats: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run simulated clients that each send a heartbeat every period, and report its cost.",
        discussion: """
            Every client is an actor pinned to a runtime loop with a periodic timer. Lateness and durations are \
            reported in scenario time; on the real clock with --time-scale, real lateness is scenario lateness \
            times the scale.
            """
    )

    @Option(help: "Number of clients.")
    var clients: Int = 10_000

    @Option(help: "Heartbeat period of each client: a number and a unit (ns, us, ms, s, m, h), e.g. 5s.")
    var period: DurationArgument = DurationArgument("5s")

    @Option(help: "Scenario duration of the run: a number and a unit (ns, us, ms, s, m, h), e.g. 20m.")
    var duration: DurationArgument = DurationArgument("1m")

    @Flag(help: "Print the report as one JSON object.")
    var json = false

    @OptionGroup var clockOptions: ClockOptions

    func validate() throws {
        guard clients > 0 else { throw ValidationError("--clients must be positive, got \(clients)") }
        guard period.duration > .zero else { throw ValidationError("--period must be positive, got \(period)") }
        guard duration.duration > period.duration else {
            throw ValidationError("--duration (\(duration)) must be longer than --period (\(period))")
        }
    }

    func run() async throws {
        let load: HeartbeatLoad
        do {
            load = try HeartbeatLoad(
                clients: clients,
                period: period.duration,
                duration: duration.duration,
                memoryLimit: clockOptions.memoryLimit?.bytes ?? ScenarioLimits.defaultMemoryLimit
            )
        } catch {
            throw fail(error, in: "heartbeats")
        }
        let report = try await clockOptions.withRuntime(defaultTickShift: 19) { try await load.run(on: $0) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            try OutputFile.standardOutput(
                (json ? String(decoding: try encoder.encode(report), as: UTF8.self) : render(report)) + "\n"
            )
        } catch {
            throw fail(error)
        }
        if report.fires != report.expectedFires {
            StandardStream.error.write(
                "roomlink: \(report.expectedFires - report.fires) heartbeats were skipped (the loops fell behind)\n"
            )
            throw ExitCode(2)
        }
    }

    private func render(_ report: HeartbeatReport) -> String {
        func f(_ value: Double, _ digits: Int = 3) -> String { String(format: "%.\(digits)f", value) }
        let clock =
            clockOptions.clock == .virtual
            ? "virtual"
            : "real (libevent, \(report.loops) loops, \(clockOptions.timerBackend), scale \(clockOptions.timeScale))"
        return """
            roomlink heartbeats — \(report.clients) clients, every \(period), for \(duration) of scenario time
              clock            \(clock)
              heartbeats       \(report.fires) fired / \(report.expectedFires) due
              lateness (ms)    p50 \(f(report.latenessP50Milliseconds))  p99 \(f(report.latenessP99Milliseconds))  \
            p99.9 \(f(report.latenessP999Milliseconds))  max \(f(report.latenessMaxMilliseconds))  (scenario time)
              CPU per beat     \(f(report.cpuPerFireMicroseconds)) µs  (steady state, whole process)
              core share       \(f(report.coreShare * 100, 1)) %
              wall time        \(f(report.wallSeconds, 2)) s
              peak RSS         \(report.peakRSSBytes / 1_048_576) MiB (\(report.peakRSSBytes / report.clients) B per client)
            """
    }
}
