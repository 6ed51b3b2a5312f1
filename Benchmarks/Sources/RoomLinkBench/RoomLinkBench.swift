import ArgumentParser
import Foundation
import RoomLink

@main
struct RoomLinkBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "roomlink-bench",
        abstract: "RoomLink's benchmarks: compare alternatives side by side in one run.",
        subcommands: [Timers.self]
    )
}

struct Timers: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Timers: raw C libevent, RoomLink's backends, DispatchSourceTimer, Task.sleep and SwiftNIO.",
        discussion: """
            For each size, every case arms the same timers (256 distinct delays), lets them fire, then cancels a \
            sample with all of them pending. Then the heartbeat case (every client re-arms a periodic timer) and \
            the actor-dispatch case.
            """
    )

    @Option(help: "Comma-separated timer counts.")
    var counts: String = "10000,100000,1000000"

    @Option(help: "Only cases whose name contains this text.")
    var filter: String?

    @Option(help: "Timers cancelled per case (with all of them pending); capped at 3 s per case.")
    var cancelSample: Int = 10_000

    @Option(help: "Clients in the heartbeat case (0 skips it).")
    var heartbeatClients: Int = 1_000_000

    @Option(help: "Heartbeat period in seconds.")
    var heartbeatPeriod: Double = 5

    @Option(help: "Seconds of steady state measured per heartbeat case.")
    var heartbeatWindow: Double = 15

    @Option(help: "Timers in the actor-dispatch case (0 skips it).")
    var dispatchSamples: Int = 2_000

    @Option(help: "log2 of the RoomLink wheel's tick in nanoseconds (19 ≈ 0.52 ms, the runtime's default).")
    var wheelTickShift: UInt64 = 19

    @Flag(help: "Print one JSON object per case instead of tables.")
    var json = false

    func validate() throws {
        guard parsedCounts != nil else {
            throw ValidationError("--counts must be positive integers separated by commas, got '\(counts)'")
        }
        guard cancelSample > 0 else { throw ValidationError("--cancel-sample must be positive, got \(cancelSample)") }
        guard heartbeatClients >= 0, heartbeatPeriod > 0, heartbeatWindow > 0 else {
            throw ValidationError("--heartbeat-clients must be ≥ 0 and --heartbeat-period, --heartbeat-window positive")
        }
    }

    var parsedCounts: [Int]? {
        let values = counts.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !values.isEmpty, values.allSatisfy({ ($0 ?? 0) > 0 }) else { return nil }
        return values.map { $0! }
    }

    func selected<T>(_ cases: [(name: String, run: T)]) -> [(name: String, run: T)] {
        cases.filter { filter == nil || $0.name.contains(filter!) }
    }

    func run() async throws {
        if !json {
            print(
                "roomlink-bench timers — \(ProcessInfo.processInfo.activeProcessorCount) cores; figures are medians of one run, compare within the run\n"
            )
        }
        for n in parsedCounts! {
            let workload = TimerWorkload(n: n, cancelSample: cancelSample, wheelTickShift: wheelTickShift)
            if !json { print(TimerTable.header(n: n)) }
            for timerCase in selected(TimerCases.all) {
                var result = try await timerCase.run(workload)
                result.name = timerCase.name
                emit(result, row: TimerTable.row(result))
            }
            if !json { print() }
        }
        if heartbeatClients > 0 {
            if !json { print(TimerTable.heartbeatHeader(clients: heartbeatClients, period: heartbeatPeriod)) }
            for heartbeatCase in selected(HeartbeatCases.all) {
                var result = try await heartbeatCase.run(
                    heartbeatClients,
                    .milliseconds(Int64(heartbeatPeriod * 1_000)),
                    heartbeatWindow
                )
                result.name = heartbeatCase.name
                emit(result, row: TimerTable.heartbeatRow(result))
            }
            if !json { print() }
        }
        if dispatchSamples > 0, filter == nil || "actor-dispatch".contains(filter!) {
            if !json { print(TimerTable.dispatchHeader()) }
            for result in try await ActorDispatchCase.run(samples: dispatchSamples) {
                emit(result, row: TimerTable.dispatchRow(result))
            }
        }
    }

    private func emit(_ value: some Encodable, row: String) {
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try! encoder.encode(value), as: UTF8.self))
        } else {
            print(row)
        }
        fflush(nil)  // flush every stream, so piped runs show progress per case
    }
}

/// The human tables.
enum TimerTable {
    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
    static func num(_ value: Double, _ width: Int, _ digits: Int = 0) -> String {
        let text = String(format: "%.\(digits)f", value)
        return String(repeating: " ", count: max(0, width - text.count)) + text
    }

    static func header(n: Int) -> String {
        "N = \(n)\n" + pad("case", 30) + "  sched ns  fire CPU ns  cancel ns  late p50 µs  late p99 µs   wall s"
    }

    static func row(_ r: TimerCaseResult) -> String {
        pad(r.name, 30) + num(r.scheduleNs, 10) + num(r.fireCpuNs, 13) + num(r.cancelNs, 11)
            + num(r.latenessP50Us, 13, 1) + num(r.latenessP99Us, 13, 1) + num(r.wallSeconds, 9, 1)
    }

    static func heartbeatHeader(clients: Int, period: Double) -> String {
        "Heartbeat: \(clients) clients, each re-arming every \(period) s\n" + pad("case", 34)
            + "  CPU/fire ns  core %     fires"
    }

    static func heartbeatRow(_ r: HeartbeatCaseResult) -> String {
        pad(r.name, 34) + num(r.cpuPerFireNs, 13) + num(r.coreSharePercent, 8, 1) + num(Double(r.fires), 10)
    }

    static func dispatchHeader() -> String {
        "Actor method after its timer\n" + pad("case", 30) + "  handler→method p50/p99 µs  deadline→method p50/p99 µs"
    }

    static func dispatchRow(_ r: ActorDispatchResult) -> String {
        pad(r.name, 30) + num(r.handlerToMethodP50Us, 12, 2) + " /" + num(r.handlerToMethodP99Us, 8, 2)
            + num(r.deadlineToMethodP50Us, 18, 1) + " /" + num(r.deadlineToMethodP99Us, 8, 1)
    }
}
