import ArgumentParser
import Foundation
import RoomLink

@main
struct RoomLinkBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "roomlink-bench",
        abstract: "RoomLink's benchmarks: compare alternatives side by side in one run.",
        subcommands: [
            Timers.self, Delivery.self, Scale.self, Dialects.self, Load.self, Network.self, Cluster.self,
            LiveKitSignalling.self, FanOut.self, Encode.self, Growth.self,
            RawServer.self, Sweep.self, Tokens.self, Callbacks.self, CallbackSink.self, Live.self,
        ]
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

    var parsedCounts: [Int]? { positiveIntegers(counts) }

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
            printJSON(value)
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

struct Delivery: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delivery: a state change from publish on a libevent loop to the consumer's `for await` body.",
        discussion: """
            For each client count and mechanism (AsyncStream through RoomLink's EventPublisher, swift-async-algorithms' \
            AsyncChannel, and a continuation queue of our own), a paced run at --rate events per second in total \
            (latency percentiles) and a flood run (events per second). Real clock, one loop; consumers are tasks on \
            the global executor.
            """
    )

    @Option(help: "Comma-separated client counts.")
    var clients: String = "1,1000,100000"

    @Option(help: "Events per second in total for the paced runs.")
    var rate: Int = 100_000

    @Option(help: "Seconds per paced run.")
    var seconds: Double = 3

    @Option(help: "Events per flood run (0 skips the flood runs).")
    var floodEvents: Int = 1_000_000

    @Option(help: "Only mechanisms whose name contains this text.")
    var filter: String?

    @Option(help: "Producer loops (threads); clients are spread over them, and so is the rate.")
    var loops: Int = 1

    @Option(help: "Where consumers run, comma-separated: loop (the producer's loop), global (the global executor).")
    var consumers: String = "loop,global"

    @Flag(help: "Print one JSON object per case instead of a table.")
    var json = false

    func validate() throws {
        guard parsedClients != nil else {
            throw ValidationError("--clients must be positive integers separated by commas, got '\(clients)'")
        }
        guard placements != nil else {
            throw ValidationError("--consumers must be loop, global or both separated by a comma, got '\(consumers)'")
        }
        guard (1...64).contains(loops) else { throw ValidationError("--loops must be from 1 to 64, got \(loops)") }
        guard rate > 0, seconds > 0, floodEvents >= 0 else {
            throw ValidationError("--rate and --seconds must be positive and --flood-events at least 0")
        }
    }

    var placements: [ConsumerPlacement]? {
        let values = consumers.split(separator: ",").map { ConsumerPlacement(rawValue: String($0)) }
        guard !values.isEmpty, values.allSatisfy({ $0 != nil }) else { return nil }
        return values.map { $0! }
    }

    var parsedClients: [Int]? { positiveIntegers(clients) }

    func run() async throws {
        let mechanisms = DeliveryMechanism.allCases.filter { filter == nil || $0.rawValue.contains(filter!) }
        if !json {
            print(
                "roomlink-bench delivery — publish on \(loops) libevent loop(s) → consumer's for-await body; real clock\n"
            )
            print(
                TimerTable.pad("mechanism", 32) + TimerTable.pad("consumers", 10) + TimerTable.pad("clients", 9)
                    + TimerTable.pad("mode", 10)
                    + "   events/s      p50 µs      p99 µs    p99.9 µs      max µs  CPU ns/event"
            )
        }
        for count in parsedClients! {
            for placement in placements! {
                for mechanism in mechanisms {
                    var runs: [Int?] = [rate]
                    if floodEvents > 0 { runs.append(nil) }
                    for pace in runs {
                        let result = try await DeliveryCases.run(
                            mechanism: mechanism,
                            placement: placement,
                            clients: count,
                            rate: pace,
                            seconds: seconds,
                            floodEvents: floodEvents,
                            loops: loops
                        )
                        if json {
                            printJSON(result)
                        } else {
                            print(
                                TimerTable.pad(result.mechanism, 32) + TimerTable.pad(result.consumers, 10)
                                    + TimerTable.pad("\(result.clients)", 9)
                                    + TimerTable.pad(result.mode, 10) + TimerTable.num(result.eventsPerSecond, 11)
                                    + TimerTable.num(result.latencyP50Us, 12, 1)
                                    + TimerTable.num(result.latencyP99Us, 12, 1)
                                    + TimerTable.num(result.latencyP999Us, 12, 1)
                                    + TimerTable.num(result.latencyMaxUs, 12, 0)
                                    + TimerTable.num(result.cpuPerEventNs, 14)
                            )
                        }
                        fflush(nil)
                    }
                }
            }
        }
    }
}

struct Scale: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Scale: a population run in virtual time (wall time, peak RSS, bytes per client), or where a client's memory goes.",
        discussion: """
            The run is what `roomlink run examples/outage-waves.json` does: 100,000 clients in 1,000 rooms log in \
            over a minute, 30 % lose their network for a minute at 5 min, 20 % fall into a blackhole for three \
            minutes at 15 min, 30 minutes in all. --breakdown instead builds a population stage by stage and \
            reports the RSS each stage adds per client (run it in its own process: RSS is a process-wide figure).
            """
    )

    @Option(help: "Clients.") var clients: Int = 100_000
    @Option(help: "Rooms.") var rooms: Int = 1_000
    @Option(help: "Scenario duration, e.g. 30m.") var duration: String = "30m"
    @Flag(help: "Population users ask for user-status notification (peer updates).") var notify = false
    @Option(help: "Seed.") var seed: UInt64 = 2026
    @Flag(help: "Report the memory breakdown per client instead of the run.") var breakdown = false
    @Flag(help: "Print one JSON object instead of text.") var json = false

    func validate() throws {
        guard clients > 0, rooms > 0, rooms <= clients else {
            throw ValidationError("--clients and --rooms must be positive, with no more rooms than clients")
        }
        guard let length = Duration(roomLinkText: duration) else {
            throw ValidationError("--duration must be a duration like 30m, got '\(duration)'")
        }
        guard length >= .seconds(20 * 60) else {
            throw ValidationError(
                "--duration must be at least 20m (the second outage wave ends at 18.5 min), got \(duration)"
            )
        }
    }

    func run() async throws {
        if breakdown {
            let result = try await ScaleCases.breakdown(clients: clients, rooms: rooms)
            if json {
                printJSON(result)
                return
            }
            print(
                """
                Memory per client (\(clients) clients, \(rooms) rooms; RSS added by each stage)
                  client actor                     \(result.clientActorBytes) B
                  idle AsyncStream (events())      \(result.idleStreamBytes) B
                  consumer task in for-await       \(result.consumerTaskBytes) B
                  logged in (session, heartbeat timer, server member, deadline list, messages in flight)  \(result.loggedInBytes) B
                  peer list (notification on, \(clients / rooms) per room)  \(result.peerListBytes) B
                """
            )
            return
        }
        let scenario = try ScaleCases.scenario(
            clients: clients,
            rooms: rooms,
            duration: Duration(roomLinkText: duration)!,
            notify: notify,
            seed: seed
        )
        let result = try await ScaleCases.run(scenario)
        if json {
            printJSON(result)
            return
        }
        print(
            """
            roomlink-bench scale — \(result.clients) clients, \(result.rooms) rooms, \(duration) virtual, two outage waves\
            \(notify ? ", user-status notification on" : "")
              wall time        \(String(format: "%.1f", result.wallSeconds)) s
              events           \(result.events) (\(Int(result.eventsPerWallSecond)) per wall second), \(result.violations) violations
              peak RSS         \(result.peakRSSBytes / 1_048_576) MiB (baseline \(result.baselineRSSBytes / 1_048_576) MiB)
              bytes per client \(result.bytesPerClient)
            """
        )
    }
}

struct Dialects: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Dialects: ZEGO, Agora and LiveKit side by side on one scenario (wall time, events, cost per unit of work).",
        discussion: """
            100,000 clients in 1,000 rooms join over a minute, every client hears of its peers, and 30 % lose their \
            network for a minute at 2 min; 10 minutes of virtual time. The dialects do different amounts of work \
            at their defaults (LiveKit pings every 5 s, ZEGO heartbeats every 30 s, Agora's continuous media needs \
            none, and speaks one callback per peer where ZEGO batches peers in one), so besides wall time the \
            table gives the cost of one unit of work — a fired timer (a message, a heartbeat, a retry, a deadline) \
            or a callback delivered and checked — which must be within 1.2× across dialects ("per peer" counts a \
            ZEGO update listing 40 users as 40, for comparison). --same-work gives all three the same work: LiveKit's ping \
            (every 5 s, lost after 15 s, removed 20 s after last heard; Agora's keep-alive ping switched on) and \
            one retry policy (1 s doubling to 10 s, equal jitter, no limit): the same timers; what still differs is \
            each vendor's callbacks (ZEGO lists peers in one, LiveKit's full reconnection re-announces everyone).
            """
    )

    @Option(help: "Clients.") var clients: Int = 100_000
    @Option(help: "Rooms.") var rooms: Int = 1_000
    @Option(help: "Scenario duration, e.g. 10m (at least 4m: the outage ends at 3 min 10 s).") var duration: String =
        "10m"
    @Option(help: "Runs of each dialect (interleaved); the table shows medians.") var runs: Int = 3
    @Option(help: "Seed.") var seed: UInt64 = 2026
    @Flag(help: "Give every dialect the same pings (5 s, 15 s, 20 s) and the same retry policy.")
    var sameWork = false
    @Flag(help: "Print one JSON object per dialect instead of text.") var json = false

    func validate() throws {
        guard clients > 0, rooms > 0, rooms <= clients else {
            throw ValidationError("--clients and --rooms must be positive, with no more rooms than clients")
        }
        guard runs > 0 else { throw ValidationError("--runs must be at least 1, got \(runs)") }
        guard let length = Duration(roomLinkText: duration), length >= .seconds(240) else {
            throw ValidationError("--duration must be a duration of at least 4m, got '\(duration)'")
        }
    }

    func run() async throws {
        let results = try await DialectCases.compare(
            clients: clients,
            rooms: rooms,
            duration: Duration(roomLinkText: duration)!,
            runs: runs,
            seed: seed,
            sameWork: sameWork
        ) { line in
            if !json { FileHandle.standardError.write(Data("  \(line)\n".utf8)) }
        }
        if json {
            for result in results { printJSON(result) }
            return
        }
        print(
            "roomlink-bench dialects — \(clients) clients, \(rooms) rooms, \(duration) virtual, one outage wave (30 %), "
                + "median of \(runs)\(sameWork ? ", the same pings and retry policy for all" : ", each dialect's defaults")"
        )
        print("  dialect  wall s     events   events/s  per peer      timers  ns/unit  violations")
        for result in results {
            print(
                "  "
                    + [
                        result.dialect.padding(toLength: 7, withPad: " ", startingAt: 0),
                        String(format: "%6.2f", result.medianWallSeconds),
                        String(format: "%9d", result.events), String(format: "%9.0f", result.eventsPerWallSecond),
                        String(format: "%8d", result.eventsPerPeer),
                        String(format: "%10d", result.timerEvents),
                        String(format: "%7.0f", result.nanosecondsPerWorkUnit), String(result.violations),
                    ].joined(separator: "  ")
            )
        }
        if sameWork {
            let walls = results.map(\.medianWallSeconds)
            print(
                String(
                    format: "  wall time, slowest / fastest dialect: %.2f× (the callbacks still differ: see events)",
                    walls.max()! / walls.min()!
                )
            )
        }
        let costs = results.map(\.nanosecondsPerWorkUnit)
        print(
            String(
                format:
                    "  cost per unit of work (timer or callback), most / least expensive dialect: %.2f× (target ≤ 1.2×)",
                costs.max()! / costs.min()!
            )
        )
    }
}

/// Positive integers separated by commas (`"1,1000,100000"`), or `nil` if any is not one.
func positiveIntegers(_ text: String) -> [Int]? {
    let values = text.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
    guard !values.isEmpty, values.allSatisfy({ ($0 ?? 0) > 0 }) else { return nil }
    return values.map { $0! }
}

/// Prints `value` as one line of JSON with sorted keys (the `--json` output of every command).
struct Load: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Load: roomlink load's targets — a million clients in virtual time, on the real clock, scaled; jitter.",
        discussion: """
            virtual: 1,000,000 clients in 10,000 rooms, 30 virtual minutes, half of them dropping at 10 min for a \
            minute (targets: under 3 min wall, under 2 KiB per client); --shards 1 runs it on one simulation for \
            comparison. real: 1,000,000 clients heartbeating every 5 s on the real clock, unscaled, for 5 minutes \
            (targets: timer lateness p99 under 10 ms, under one core). scaled: 100,000 clients on the real clock at \
            time scale 0.01 through a 20-minute storm scenario (storm, outages, a partition). jitter: the same \
            server outage (every room of 10,000 Agora clients cut off for a minute) with no jitter, full jitter and \
            Agora's equal jitter side by side; --plot-dir writes each one's SVG. capacity: the virtual storm on 10 \
            server nodes without capacity and with 64 workers a node, alternating (--runs pairs; target: capacity \
            costs at most 10 % more wall time). contention: 100,000 clients all dropped for 10 s against 10 nodes of \
            one worker at 4 ms a login that shed expired logins, with no, full, equal and decorrelated jitter.
            """
    )

    enum Case: String, ExpressibleByArgument, CaseIterable {
        case virtual, real, scaled, jitter, capacity, contention
    }

    @Argument(help: "virtual, real, scaled, jitter, capacity or contention.") var which: Case
    @Option(help: "capacity: pairs of runs (without, with).") var runs = 1
    @Option(help: "Clients (default: the case's).") var clients: Int?
    @Option(help: "Rooms (default: clients / 100).") var rooms: Int?
    @Option(help: "Virtual clock: simulations sharing the population (default one per core).") var shards: Int =
        LibeventLoopGroup.coreCount
    @Option(help: "jitter: write one SVG per policy into this directory.") var plotDir: String?
    @Flag(help: "Print one JSON object per case instead of text.") var json = false

    func run() async throws {
        let results: [LoadResult]
        switch which {
        case .virtual, .real, .scaled:
            let defaultClients = which == .scaled ? 100_000 : 1_000_000
            let n = clients ?? defaultClients
            let (plan, name) =
                switch which {
                case .virtual: (try LoadCases.virtualStorm(clients: n, rooms: rooms ?? n / 100), "virtual storm")
                case .real: (LoadCases.realHeartbeats(clients: n, rooms: rooms ?? n / 100), "real heartbeats")
                default: (try LoadCases.scaledStorm(clients: n, rooms: rooms ?? n / 100), "scaled storm")
                }
            results = [
                try await LoadCases.run(
                    name,
                    plan: plan,
                    real: which != .virtual,
                    timeScale: which == .scaled ? 0.01 : 1,
                    shards: shards
                )
            ]
        case .jitter:
            let n = clients ?? 10_000
            var all: [LoadResult] = []
            for (name, retry) in LoadCases.jitterPolicies {
                let plan = try LoadCases.jitter(clients: n, rooms: rooms ?? n / 100, retry: retry)
                let result = try await LoadCases.run(name, plan: plan, real: false, shards: shards)
                if let plotDir, let load = result.load {
                    let file = plotDir + "/" + name.split(separator: " ").first! + "-jitter.svg"
                    let title = "server outage, \(n) agora clients — \(name)"
                    guard FileManager.default.createFile(atPath: file, contents: Data(load.svg(title: title).utf8))
                    else {
                        throw ValidationError("--plot-dir: cannot write \(file)")
                    }
                }
                all.append(result)
            }
            results = all
        case .capacity:
            let n = clients ?? 1_000_000
            var all: [LoadResult] = []
            for _ in 0..<max(1, runs) {
                for capacity in [false, true] {
                    let plan = try LoadCases.capacityStorm(clients: n, rooms: rooms ?? n / 100, capacity: capacity)
                    let name = capacity ? "storm, 10 nodes with capacity" : "storm, 10 nodes, unlimited"
                    all.append(try await LoadCases.run(name, plan: plan, real: false, shards: shards))
                }
            }
            results = all
        case .contention:
            let n = clients ?? 100_000
            var all: [LoadResult] = []
            for (name, retry) in LoadCases.contentionPolicies {
                let plan = try LoadCases.contention(clients: n, rooms: rooms ?? n / 100, retry: retry)
                all.append(try await LoadCases.run(name, plan: plan, real: false, shards: shards))
            }
            results = all
        }
        if json {
            for result in results { printJSON(result) }
            return
        }
        for result in results { print(Self.text(result)) }
    }

    static func text(_ result: LoadResult) -> String {
        func f(_ value: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", value) }
        var lines = [
            "roomlink-bench load — \(result.name): \(result.clients) clients, \(result.rooms) rooms, "
                + "\(Int(result.scenarioSeconds)) s on the \(result.clock) clock"
                + (result.clock == "real" ? " (time scale \(result.timeScale))" : ", \(result.shards) shard(s)"),
            "  wall \(f(result.wallSeconds, 1)) s, CPU \(f(result.cpuSeconds, 1)) s (\(f(result.cores)) cores), "
                + "\(result.bytesPerClient) B per client, \(result.events) events, \(result.violations) violations",
        ]
        if let all = result.timerLatenessLoginWindow {
            lines.append("  timers late, login window  p50 / p99 / max \(all.text) (\(all.count))")
        }
        if let steady = result.timerLatenessSteady {
            lines.append("  timers late, after it      p50 / p99 / max \(steady.text) (\(steady.count))")
        }
        if let load = result.load {
            lines.append(
                "  reconnections \(load.reconnections) (p50 \(f(load.reconnectSecondsP50)) s, p99 "
                    + "\(f(load.reconnectSecondsP99)) s); attempts per 100 ms peak \(load.attemptsPer100msPeak), "
                    + "mean \(f(load.attemptsPer100msMean)), peak/mean \(f(load.attemptsPeakToMean)); retries only: peak "
                    + "\(load.retriesPer100msPeak), mean \(f(load.retriesPer100msMean)), peak/mean "
                    + "\(f(load.retriesPeakToMean)); logins per second peak \(load.loginsPerSecondPeak); 99 % back "
                    + (load.secondsUntil99PercentBack.map { "\(f($0)) s after the peak" } ?? "never")
            )
            if let delivery = load.deliveryLatency {
                lines.append("  delivery (cause → callback) p50 / p99 / max \(delivery.text)")
            }
        }
        if let servers = result.servers {
            lines.append("  " + servers.summaryLine.replacingOccurrences(of: "\n", with: "\n  "))
        }
        return lines.joined(separator: "\n")
    }
}

func printJSON(_ value: some Encodable) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    // The results are plain structs of numbers and strings: encoding them cannot fail.
    print(String(decoding: (try? encoder.encode(value)) ?? Data("{}".utf8), as: UTF8.self))
}
