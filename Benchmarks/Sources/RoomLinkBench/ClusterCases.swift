import ArgumentParser
import Foundation
import Glibc
import RoomLink

/// `roomlink-bench cluster`: several `roomlink serve` nodes sharing presence in one Redis, on one port, and several
/// `roomlink load` generators against them — as many processes as the open-file limit needs for the population.
struct Cluster: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Several serve nodes sharing presence in Redis, and several generators: real connections at scale.",
        discussion: """
            Cases: steady (everyone logs in, then a measured window: CPU of every process, Redis commands per \
            second, serve's memory per connection, heartbeat round trips), storm (half the clients drop at once \
            and return 60 s later: reconnections per second and time until 99 % are back), and kill (one node is \
            killed: time until its clients are back on the others). The nodes share one port (SO_REUSEPORT); each \
            generator plays its slice (--shard) from its own source addresses; their reports are merged.
            """
    )

    enum Case: String, ExpressibleByArgument, CaseIterable { case steady, storm, kill }

    @Option(
        help: """
            The roomlink executable (a release build); repeat it to compare builds side by side, alternating round \
            by round.
            """
    )
    var roomlink: [String] = ["../.build/release/roomlink"]
    @Option(help: "Rounds: every build runs the cases once a round, in turn.") var rounds = 1
    @Option(help: "redis-server.") var redisServer = "/usr/bin/redis-server"
    @Option(help: "Clients (connections).") var clients = 100_000
    @Option(help: "Rooms.") var rooms = 1_000
    @Option(help: "zego, agora or livekit.") var dialect = "zego"
    @Option(help: "Server nodes (default: one per 15,000 clients, plus one).") var nodes: Int?
    @Option(help: "Generator processes (default: one per 15,000 clients).") var generators: Int?
    @Option(help: "The population logs in over this many seconds.") var loginOver = 60
    @Option(help: "Seconds measured, after everyone is in and 20 s more.") var window = 60
    @Option(help: "Cases to run.") var cases: [Case] = Case.allCases
    @Option(help: "Admission control on each node for a second storm run (e.g. rate=2000/s), or none.")
    var admission: String?
    @Option(help: "Loops per serve node.") var loops = 1
    @Flag(
        inversion: .prefixedNo,
        help: "ZEGO clients ask to hear of their peers (--notify); Agora and LiveKit clients always do."
    )
    var notify = true
    @Option(help: "Also write each case's merged report to PREFIX-CASE.json.") var report: String?
    @Option(help: "Each serve node's lease period (serve's --lease-period), e.g. 2s.") var leasePeriod: String?
    @Option(
        help: """
            A timing every serve node overrides (serve's --timing NAME=DURATION, repeatable): e.g. \
            participantUpdateDelay=3s, livekit-server's batching of the joins and leaves of participants that publish \
            nothing.
            """
    )
    var timing: [String] = []
    @Option(
        help: """
            How clients reach the nodes: shared (one port, SO_REUSEPORT: the kernel spreads connections), client or \
            room (a port per node, the generators given the list: load's --route).
            """
    )
    var route: Route = .shared

    enum Route: String, ExpressibleByArgument, CaseIterable { case shared, client, room }

    func run() async throws {
        OpenFileLimit.raiseToHard()
        let nodeCount = nodes ?? (clients + 14_999) / 15_000 + 1
        let generatorCount = generators ?? (clients + 14_999) / 15_000
        say(
            "cluster: \(clients) \(dialect) clients in \(rooms) rooms, \(nodeCount) serve nodes, \(generatorCount) "
                + "generators, one Redis; routing \(route.rawValue)"
                + (timing.isEmpty ? "" : "; serve timings \(timing.joined(separator: ", "))")
        )
        guard !roomlink.isEmpty, rounds >= 1 else {
            throw ValidationError("give a --roomlink and --rounds of 1 or more")
        }
        let sideBySide = roomlink.count > 1 || rounds > 1
        var figures = Array(repeating: [SteadyFigures](), count: roomlink.count)
        for round in 1...rounds {
            for (index, build) in roomlink.enumerated() {
                if sideBySide { say("round \(round), build \(index + 1) (\(build)):") }
                for which in cases {
                    switch which {
                    case .steady:
                        figures[index].append(try await steady(build, nodes: nodeCount, generators: generatorCount))
                    case .storm:
                        try await storm(build, nodes: nodeCount, generators: generatorCount, admission: nil)
                        if let admission {
                            try await storm(build, nodes: nodeCount, generators: generatorCount, admission: admission)
                        }
                    case .kill:
                        try await kill(build, nodes: nodeCount, generators: generatorCount)
                    }
                }
            }
        }
        if sideBySide && cases.contains(.steady) { sayMedians(figures) }
    }

    /// The steady case's main figures, for builds side by side.
    struct SteadyFigures {
        var cores: Double
        var loginP99Ms: Double
        var steadyHeartbeatP99Ms: Double
        var lateP99Ms: Double
        var lateAfterFillP99Ms: Double?
        var gaveUp: Int
        var keptUpAfterFill: Bool?
    }

    /// Each build's medians over its rounds (of an even count, the middle two's mean), and each against the first.
    private func sayMedians(_ figures: [[SteadyFigures]]) {
        func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            guard !sorted.isEmpty else { return .nan }
            let middle = sorted.count / 2
            return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        }
        let rows: [(String, (SteadyFigures) -> Double?)] = [
            ("CPU of every process (cores)", { $0.cores }),
            ("login p99 (ms)", { $0.loginP99Ms }),
            ("heartbeat round trip p99 after the fill (ms)", { $0.steadyHeartbeatP99Ms }),
            ("generators' timers late p99 (ms)", { $0.lateP99Ms }),
            ("… after the fill (ms)", { $0.lateAfterFillP99Ms }),
            ("gave up", { Double($0.gaveUp) }),
        ]
        say("steady, medians of \(rounds) round\(rounds == 1 ? "" : "s") (each build against the first):")
        for (name, value) in rows {
            let medians = figures.map { median($0.compactMap(value)) }
            let cells = medians.enumerated().map { index, figure in
                guard !figure.isNaN else { return "—" }
                let ratio =
                    index == 0 || medians[0] == 0 || medians[0].isNaN
                    ? "" : String(format: " (%.2f×)", figure / medians[0])
                return String(format: "%.2f", figure) + ratio
            }
            say("  \(name): " + cells.joined(separator: " | "))
        }
        let kept = figures.map { runs in
            "\(runs.filter { $0.keptUpAfterFill == true }.count) of \(runs.count)"
        }
        say("  generators kept up after the fill: " + kept.joined(separator: " | "))
    }

    private func keep(_ merged: RunReport, as name: String) throws {
        guard let report else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(merged).write(to: URL(fileURLWithPath: "\(report)-\(name).json"))
    }

    private func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    // MARK: - Cases

    private func steady(_ executable: String, nodes: Int, generators: Int) async throws -> SteadyFigures {
        let settle = loginOver + 20
        let world = try World.start(
            self,
            executable: executable,
            nodes: nodes,
            generators: generators,
            admission: nil,
            loadArguments: [
                "--duration", "\(settle + window + 10)s",
            ]
        )
        defer { world.stop() }
        try await Task.sleep(for: .seconds(settle))
        let before = world.sample()
        try await Task.sleep(for: .seconds(window))
        let after = world.sample()
        let reports = try world.finish()
        try keep(reports, as: "steady")
        let seconds = after.time - before.time
        let per10k = 10_000 / Double(clients)
        let cpu = zip(after.cpu, before.cpu).map { $0 - $1 }
        say(
            String(
                format: "steady: %d connections held (%d per node at most), measured %.0f s",
                after.open,
                after.maxOpen,
                seconds
            )
        )
        say(
            String(
                format: "  CPU of every process: %.2f cores (serve %.2f, generators %.2f, redis %.2f)",
                cpu.reduce(0, +) / seconds,
                cpu[world.serveRange].reduce(0, +) / seconds,
                cpu[world.generatorRange].reduce(0, +) / seconds,
                cpu[world.redisIndex] / seconds
            )
        )
        let commands = Double(after.redisCommands - before.redisCommands) / seconds
        let scripts = Double(after.redisScripts - before.redisScripts) / seconds
        say(
            String(
                format: "  Redis: %.0f commands/s (%.0f per 10,000 clients), of which %.0f scripts/s (%.0f per 10,000)",
                commands,
                commands * per10k,
                scripts,
                scripts * per10k
            )
        )
        say(
            String(
                format: "  serve memory per connection: %@",
                world.memoryPerConnection(at: after).map { String(format: "%.0f", $0) }.joined(separator: " / ")
                    + " B (each node's RSS growth / connections)"
            )
        )
        if let connections = reports.connections {
            say(
                String(
                    format: "  heartbeat round trip p50 %.2f ms, p99 %.2f ms (%d); login p99 %.1f ms; failures %@",
                    connections.heartbeatRoundTrip.p50Ms,
                    connections.heartbeatRoundTrip.p99Ms,
                    connections.heartbeatRoundTrip.count,
                    connections.login.p99Ms,
                    connections.failures.description
                )
            )
            if let from = connections.steadyFrom, let steady = connections.steadyHeartbeatRoundTrip {
                say(
                    String(
                        format: "  heartbeat round trip after the fill (from %d s): p50 %.2f ms, p99 %.2f ms (%d)",
                        from,
                        steady.p50Ms,
                        steady.p99Ms,
                        steady.count
                    )
                )
            }
        }
        say(
            "  online at the end \(reports.load?.online ?? 0), gave up \(reports.load?.failed ?? 0); generators kept "
                + "up: \(reports.keptUp.map(String.init) ?? "?") (timers late \(reports.timerLateness?.text ?? "?")), "
                + "after the fill: \(reports.keptUpAfterFill.map(String.init) ?? "?") (timers late "
                + "\(reports.connections?.steadyTimerLateness?.text ?? "?")), violations \(reports.violations)"
        )
        return SteadyFigures(
            cores: cpu.reduce(0, +) / seconds,
            loginP99Ms: reports.connections?.login.p99Ms ?? .nan,
            steadyHeartbeatP99Ms: reports.connections?.steadyHeartbeatRoundTrip?.p99Ms ?? .nan,
            lateP99Ms: reports.timerLateness?.p99Ms ?? .nan,
            lateAfterFillP99Ms: reports.connections?.steadyTimerLateness?.p99Ms,
            gaveUp: reports.load?.failed ?? 0,
            keptUpAfterFill: reports.keptUpAfterFill
        )
    }

    private func storm(_ executable: String, nodes: Int, generators: Int, admission: String?) async throws {
        let at = loginOver + 20
        let world = try World.start(
            self,
            executable: executable,
            nodes: nodes,
            generators: generators,
            admission: admission,
            loadArguments: [
                "--duration", "\(at + 60 + 120)s", "--storm", "0.5@\(at)s:60s",
            ]
        )
        defer { world.stop() }
        let reports = try world.finish()
        try keep(reports, as: admission == nil ? "storm" : "storm-admission")
        let load = reports.load
        let recovery = load?.recoveries.first
        say(
            "storm\(admission.map { " with admission \($0)" } ?? ""): \(load?.peakReconnecting ?? 0) reconnecting at the "
                + "peak; logins per second peak \(load?.loginsPerSecondPeak ?? 0); 99 % back "
                + (load?.secondsUntil99PercentBack.map { String(format: "%.1f s after the peak", $0) } ?? "never")
                + "; all back "
                + (recovery?.secondsToAllBack.map { String(format: "%.1f s after the storm's end", $0) } ?? "never")
                + "; failures \(reports.connections?.failures.description ?? "?"), violations \(reports.violations)"
        )
    }

    private func kill(_ executable: String, nodes: Int, generators: Int) async throws {
        let at = loginOver + 20
        let world = try World.start(
            self,
            executable: executable,
            nodes: nodes,
            generators: generators,
            admission: nil,
            loadArguments: [
                "--duration", "\(at + 120)s",
            ]
        )
        defer { world.stop() }
        try await Task.sleep(for: .seconds(at))
        let held = world.sample().open
        world.killNode(0)
        let reports = try world.finish()
        try keep(reports, as: "kill")
        let load = reports.load
        say(
            "kill: a node of \(nodes) killed with \(clients) held (\(held) sockets); \(load?.peakReconnecting ?? 0) "
                + "reconnecting at the peak; 99 % back "
                + (load?.secondsUntil99PercentBack.map { String(format: "%.1f s after the peak", $0) } ?? "never")
                + "; reconnections p50 \(load.map { String(format: "%.2f", $0.reconnectSecondsP50) } ?? "?") s, "
                + "p99 \(load.map { String(format: "%.2f", $0.reconnectSecondsP99) } ?? "?") s; online at the end "
                + "\(load?.online ?? 0); violations \(reports.violations)"
        )
    }
}

/// One case's processes: Redis, the serve nodes, the generators.
private final class World {
    let redis: Child
    let redisPort: Int
    var nodes: [Child]
    let generators: [Child]
    let reports: [String]
    let directory: URL
    private var baseline: [Int] = []

    var serveRange: Range<Int> { 0..<nodes.count }
    var generatorRange: Range<Int> { nodes.count..<(nodes.count + generators.count) }
    var redisIndex: Int { nodes.count + generators.count }

    private init(redis: Child, redisPort: Int, nodes: [Child], generators: [Child], reports: [String], directory: URL) {
        self.redis = redis
        self.redisPort = redisPort
        self.nodes = nodes
        self.generators = generators
        self.reports = reports
        self.directory = directory
    }

    static func start(
        _ bench: Cluster,
        executable: String,
        nodes nodeCount: Int,
        generators generatorCount: Int,
        admission: String?,
        loadArguments: [String]
    ) throws -> World {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("roomlink-cluster-\(getpid())")
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let redisPort = Int.random(in: 20_000..<30_000)
        let redis = try Child.start(
            bench.redisServer,
            [
                "--port", "\(redisPort)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--maxclients",
                "10000",
            ],
            readyWhen: "Ready to accept"
        )
        var nodes: [Child] = []
        // Shared: the first node's port, which the others share; otherwise each node's own.
        var ports: [Int] = []
        for index in 0..<nodeCount {
            let port = bench.route == .shared ? ports.first ?? 0 : 0
            var arguments = [
                "serve", "--listen", "127.0.0.1:\(port)", "--dialect", bench.dialect, "--redis",
                "redis://127.0.0.1:\(redisPort)", "--node-id", "n\(index)", "--loops", "\(bench.loops)", "--log-level",
                "warning",
            ]
            if let admission { arguments += ["--admission", admission] }
            if let period = bench.leasePeriod { arguments += ["--lease-period", period] }
            for timing in bench.timing { arguments += ["--timing", timing] }
            let node = try Child.start(executable, arguments, readyWhen: " loops ")
            if bench.route != .shared || ports.isEmpty {
                ports.append(Int(try node.servedAddress(after: "\(bench.dialect) on ").port))
            }
            nodes.append(node)
        }
        var generators: [Child] = []
        var reports: [String] = []
        for index in 0..<generatorCount {
            let report = directory.appendingPathComponent("g\(index).json").path
            reports.append(report)
            let arguments =
                [
                    "load", "--server", ports.map { "127.0.0.1:\($0)" }.joined(separator: ","), "--clock", "real",
                    "--clients", "\(bench.clients)",
                    "--rooms", "\(bench.rooms)", "--dialect", bench.dialect, "--login-over", "\(bench.loginOver)s",
                    "--latency", "0", "--shard", "\(index)/\(generatorCount)", "--source-addresses",
                    "127.0.\(index + 2).1-127.0.\(index + 2).4", "--loops", "1", "--quiet", "--report", report,
                ] + (bench.notify ? ["--notify"] : []) + (bench.route == .room ? ["--route", "room"] : [])
                + loadArguments
            generators.append(try Child.launch(executable, arguments))
        }
        let world = World(
            redis: redis,
            redisPort: redisPort,
            nodes: nodes,
            generators: generators,
            reports: reports,
            directory: directory
        )
        world.baseline = nodes.map { $0.residentBytes() }
        return world
    }

    struct Sample {
        var time: Double
        var cpu: [Double]
        var open: Int
        var maxOpen: Int
        var perNode: [Int]
        var resident: [Int]
        var redisCommands: Int
        var redisScripts: Int
    }

    func sample() -> Sample {
        let perNode = nodes.map { Self.sockets(of: $0) }
        let stats = cli("INFO", "stats") + cli("INFO", "commandstats")
        func number(after key: String) -> Int {
            guard let range = stats.range(of: key) else { return 0 }
            return Int(stats[range.upperBound...].prefix { $0.isNumber }) ?? 0
        }
        return Sample(
            time: Date().timeIntervalSince1970,
            cpu: (nodes + generators + [redis]).map { $0.cpuSeconds() },
            open: perNode.reduce(0, +),
            maxOpen: perNode.max() ?? 0,
            perNode: perNode,
            resident: nodes.map { $0.residentBytes() },
            redisCommands: number(after: "total_commands_processed:"),
            redisScripts: number(after: "cmdstat_evalsha:calls=") + number(after: "cmdstat_eval:calls=")
        )
    }

    /// Each node's RSS growth since before the load, per socket it holds.
    func memoryPerConnection(at sample: Sample) -> [Double] {
        zip(zip(sample.resident, baseline), sample.perNode).map { pair, sockets in
            sockets > 0 ? Double(pair.0 - pair.1) / Double(sockets) : 0
        }
    }

    func killNode(_ index: Int) {
        Glibc.kill(nodes[index].process.processIdentifier, SIGKILL)
        nodes[index].process.waitUntilExit()
    }

    /// Waits for the generators (each ends after its `--duration`; one still running ten minutes later is stopped
    /// with SIGTERM, which still writes its report) and merges their reports.
    func finish() throws -> RunReport {
        let deadline = Date().addingTimeInterval(600)
        for generator in generators {
            while generator.process.isRunning && Date() < deadline { usleep(100_000) }
            if generator.process.isRunning { generator.stop() }
        }
        let parts = try reports.map {
            try JSONDecoder().decode(RunReport.self, from: Data(contentsOf: URL(fileURLWithPath: $0)))
        }
        return try RunReport.merged(parts)
    }

    func stop() {
        for generator in generators where generator.process.isRunning { generator.stop() }
        for node in nodes where node.process.isRunning { node.stop() }
        redis.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private func cli(_ arguments: String...) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        process.arguments = ["-p", "\(redisPort)"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try? process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// TCP sockets a process holds (its open file descriptors that are sockets).
    private static func sockets(of child: Child) -> Int {
        let directory = "/proc/\(child.process.processIdentifier)/fd"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return entries.reduce(0) { count, entry in
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\(entry)")) ?? ""
            return count + (target.hasPrefix("socket:") ? 1 : 0)
        }
    }
}
