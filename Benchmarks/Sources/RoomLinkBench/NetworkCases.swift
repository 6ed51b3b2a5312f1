import ArgumentParser
import CRawNet
import Foundation
import Glibc
import Histogram
import RoomLink
import Synchronization

/// `roomlink-bench network`: `roomlink serve` and RoomLink's TCP clients against raw C libevent sockets (an echo
/// server, a connect-and-echo storm, ping-pong), side by side in one run, alternating.
struct Network: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The network: serve + RoomLink clients against raw C libevent, side by side.",
        discussion: """
            Three cases, each in two processes (a server, and this process as the clients; the machine's open-file \
            limit does not hold both ends of 15,000 connections in one): a login storm (every client connects and \
            logs in at once: logins per second, connect→logined p50/p99, against raw C's connect→echo), memory per \
            held connection in serve's process (RSS after the storm less before it, per connection), and heartbeat \
            round trips (CPU of both processes per round trip, against raw C ping-pong). The storm runs serve with \
            each accept mode.
            """
    )

    @Option(help: "The roomlink executable to serve with (a release build).") var roomlink =
        "../.build/release/roomlink"
    @Option(help: "Clients in the login storm.") var clients = 15_000
    @Option(help: "Connections in the heartbeat case.") var pingClients = 2_000
    @Option(help: "Heartbeat (ping) period, in milliseconds.") var pingPeriodMs = 100
    @Option(help: "Seconds measured per heartbeat case, after as long again of warm-up.") var window = 10.0
    @Option(help: "Rounds (each runs every case once, alternating).") var rounds = 3
    @Option(help: "Loops (threads) each side runs on.") var loops = 2
    @Flag(
        help: """
            Also storm serve over TLS (serve --tls-cert, the clients over tls://, the test certificates), beside the \
            same storm in plain TCP: logins a second and a CPU-second of both processes, and serve's RSS per held \
            connection.
            """
    )
    var tls = false
    @Option(help: "The folder of the test certificates (ca.pem, server.pem, server-key.pem) for --tls.")
    var certificates = "../Tests/Fixtures/tls"
    @Flag(help: "Only the storms in plain TCP and TLS (reusePort), with --tls: no raw C, no heartbeats.")
    var tlsOnly = false

    func run() async throws {
        OpenFileLimit.raiseToHard()
        let own = URL(fileURLWithPath: CommandLine.arguments[0]).path
        say(
            "network benchmarks: \(clients)-client storm, \(pingClients) × \(pingPeriodMs) ms heartbeats, \(rounds) rounds"
        )
        for round in 1...rounds {
            say("— round \(round)")
            if tls {
                // Plain and TLS side by side, alternating which goes first from round to round.
                for secure in round.isMultiple(of: 2) ? [true, false] : [false, true] {
                    say(try await roomLinkStorm(accept: .reusePort, tls: secure).line)
                }
                if tlsOnly { continue }
            }
            // The storm and the memory.
            let raw = try rawStorm(own)
            say(raw.line)
            for mode in NetworkServer.AcceptMode.allCases {
                let served = try await roomLinkStorm(accept: mode)
                say(served.line)
            }
            // Heartbeat round trips.
            say(try rawPingPong(own).line)
            say(try await roomLinkHeartbeats().line)
        }
    }

    /// A line of results, written at once (a long run shows its progress).
    private func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    // MARK: - Storm

    struct StormResult {
        var name: String
        var completed: Int
        var failed: Int
        var seconds: Double
        var latency: Histogram<UInt64>
        var bytesPerConnection: Double?
        /// CPU seconds of both processes over the storm, when measured.
        var cpuSeconds: Double?

        var line: String {
            let rate = Double(completed) / seconds
            let memory = bytesPerConnection.map { String(format: ", serve RSS %.0f B per connection", $0) } ?? ""
            let cpu = cpuSeconds.map { String(format: ", %.0f per CPU-second", Double(completed) / $0) } ?? ""
            return String(
                format: "storm %-22@ %6d ok %4d failed in %6.3f s: %7.0f /s, p50 %6.1f ms, p99 %6.1f ms%@%@",
                name as NSString,
                completed,
                failed,
                seconds,
                rate,
                Double(latency.valueAtPercentile(50)) / 1e6,
                Double(latency.valueAtPercentile(99)) / 1e6,
                memory as NSString,
                cpu as NSString
            )
        }
    }

    private func rawStorm(_ own: String) throws -> StormResult {
        let server = try Child.start(own, ["raw-server", "--threads", "\(loops)"], readyWhen: "port ")
        defer { server.stop() }
        let port = Int32(server.firstLine.split(separator: " ").last.flatMap { Int32($0) } ?? 0)
        var latencies = [Int64](repeating: 0, count: clients)
        let result = latencies.withUnsafeMutableBufferPointer {
            CRawNet_storm("127.0.0.1", port, clients, Int32(loops), 32, $0.baseAddress)
        }
        defer { CRawNet_storm_close() }
        var histogram = Histogram<UInt64>(
            highestTrackableValue: 600_000_000_000,
            numberOfSignificantValueDigits: .three
        )
        for value in latencies where value >= 0 { histogram.record(UInt64(value)) }
        return StormResult(
            name: "raw C connect+echo",
            completed: result.completed,
            failed: result.failed,
            seconds: result.seconds,
            latency: histogram
        )
    }

    private func roomLinkStorm(accept: NetworkServer.AcceptMode, tls: Bool = false) async throws -> StormResult {
        let certificates = URL(fileURLWithPath: self.certificates)
        let tlsFlags =
            tls
            ? [
                "--tls-cert", certificates.appendingPathComponent("server.pem").path,
                "--tls-key", certificates.appendingPathComponent("server-key.pem").path,
            ] : []
        let server = try Child.start(
            roomlink,
            [
                "serve", "--listen", "127.0.0.1:0", "--loops", "\(loops)", "--accept", accept.rawValue, "--log-level",
                "error",
            ] + tlsFlags,
            readyWhen: " loops "
        )
        defer { server.stop() }
        let address = try server.servedAddress()
        try await Task.sleep(for: .milliseconds(300))
        let baseline = server.residentBytes()
        let timings = ZegoTimings(attemptTimeout: .seconds(120), loginTimeout: .seconds(600))
        let recorder = LoginRecorder(count: clients)
        let seconds: Double
        let histogram: Histogram<UInt64>
        let completed: Int
        let bytes: Double
        let cpuBefore = ProcessCPU.now()
        let serverBefore = server.cpuSeconds()
        let cpu: Double
        (seconds, histogram, completed, bytes, cpu) = try await LibeventLoopGroup.withLoopGroup(
            configuration: .init(loopCount: loops)
        ) { group in
            let configuration = TCPClientTransport.Configuration(
                tls: tls ? TLSClientConfiguration(caFile: certificates.appendingPathComponent("ca.pem").path) : nil
            )
            let transport = try TCPClientTransport(server: address, dialect: .zego, configuration: configuration)
            let environment = ZegoClient.Environment(transport: transport, timings: timings, sink: recorder)
            let clients = (0..<self.clients).map { index in
                ZegoClient(id: "u\(index)", loop: group.loop(for: "room-\(index % 150)"), environment: environment)
            }
            let start = group.now
            recorder.start(at: start)
            await withTaskGroup(of: Void.self) { tasks in
                for slice in 0..<loops {
                    tasks.addTask {
                        for index in stride(from: slice, to: clients.count, by: loops) {
                            recorder.called(index, at: group.now)
                            _ = await clients[index].loginRoom("room-\(index % 150)")
                        }
                    }
                }
            }
            let deadline = ContinuousClock.now.advanced(by: .seconds(120))
            while recorder.done < clients.count, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            let cpu = Double(ProcessCPU.now() - cpuBefore) / 1e9 + server.cpuSeconds() - serverBefore
            try await Task.sleep(for: .milliseconds(500))
            let bytes = Double(server.residentBytes() - baseline) / Double(max(1, recorder.done))
            let summary = recorder.summary()
            for client in clients { await client.shutdown() }
            await transport.close()
            return (summary.seconds, summary.histogram, recorder.done, bytes, cpu)
        }
        return StormResult(
            name: "serve (\(accept.rawValue))\(tls ? " TLS" : "")",
            completed: completed,
            failed: clients - completed,
            seconds: seconds,
            latency: histogram,
            bytesPerConnection: bytes,
            cpuSeconds: cpu
        )
    }

    /// When each client called `loginRoom` and when it was told `logined`.
    final class LoginRecorder: EventSink, @unchecked Sendable {
        // Safe: slot `i` is written by client i's loop only (`called` from its one task, `record` from its loop),
        // and read after `done` reached the count; `done` is atomic.
        private let calledAt: UnsafeMutableBufferPointer<Int64>
        private let loginedAt: UnsafeMutableBufferPointer<Int64>
        private let completed = Mutex(0)
        private let origin = Mutex(Int64(0))

        init(count: Int) {
            calledAt = .allocate(capacity: count)
            calledAt.initialize(repeating: 0)
            loginedAt = .allocate(capacity: count)
            loginedAt.initialize(repeating: -1)
        }

        deinit {
            calledAt.deallocate()
            loginedAt.deallocate()
        }

        func start(at instant: RuntimeInstant) { origin.withLock { $0 = instant.nanoseconds } }
        func called(_ index: Int, at instant: RuntimeInstant) { calledAt[index] = instant.nanoseconds }
        var done: Int { completed.withLock { $0 } }

        func record(_ event: Stamped<ZegoEvent>, from client: String) {
            guard case .roomStateChanged(_, .logined, _, _) = event.event, let index = Int(client.dropFirst()) else {
                return
            }
            loginedAt[index] = event.time.nanoseconds
            completed.withLock { $0 += 1 }
        }

        func summary() -> (seconds: Double, histogram: Histogram<UInt64>) {
            var histogram = Histogram<UInt64>(
                highestTrackableValue: 600_000_000_000,
                numberOfSignificantValueDigits: .three
            )
            var last = origin.withLock { $0 }
            for index in 0..<calledAt.count where loginedAt[index] >= 0 {
                histogram.record(UInt64(max(0, loginedAt[index] - calledAt[index])))
                last = max(last, loginedAt[index])
            }
            return (Double(last - origin.withLock { $0 }) / 1e9, histogram)
        }
    }

    // MARK: - Heartbeats

    struct RoundTrips {
        var name: String
        var roundTrips: Double
        var cpuSeconds: Double
        var window: Double

        var line: String {
            String(
                format: "heartbeats %-20@ %8.0f round trips in %5.2f s (%7.0f /s): %6.2f µs CPU per round trip",
                name as NSString,
                roundTrips,
                window,
                roundTrips / window,
                cpuSeconds / roundTrips * 1e6
            )
        }
    }

    private func rawPingPong(_ own: String) throws -> RoundTrips {
        let server = try Child.start(own, ["raw-server", "--threads", "\(loops)"], readyWhen: "port ")
        defer { server.stop() }
        let port = Int32(server.firstLine.split(separator: " ").last.flatMap { Int32($0) } ?? 0)
        // The server's CPU over the same window: sampled around the C call's window by a timer thread.
        let serverCPU = CPUWindow(child: server, warmup: window)
        let result = CRawNet_pingpong(
            "127.0.0.1",
            port,
            pingClients,
            Int32(loops),
            Int64(pingPeriodMs) * 1_000_000,
            window,
            window,
            32
        )
        return RoundTrips(
            name: "raw C ping-pong",
            roundTrips: result.round_trips,
            cpuSeconds: result.cpu_seconds + serverCPU.seconds(),
            window: result.window_seconds
        )
    }

    private func roomLinkHeartbeats() async throws -> RoundTrips {
        let server = try Child.serve(roomlink, ["--loops", "\(loops)"])
        defer { server.stop() }
        let address = try server.servedAddress()
        let adminAddress = try server.adminAddress()
        let timings = ZegoTimings(
            heartbeatInterval: .milliseconds(Int64(pingPeriodMs)),
            attemptTimeout: .seconds(120),
            loginTimeout: .seconds(600)
        )
        // The clients' loops keep the tick `run` and `load` use (about 4 ms): 2,000 heartbeats per 100 ms then wake
        // a loop once per tick, not once per heartbeat.
        let configuration = LibeventLoopGroup.Configuration(
            loopCount: loops,
            wheelTickShift: LibeventLoopGroup.Configuration.scenarioTickShift(timeScale: 1)
        )
        return try await LibeventLoopGroup.withLoopGroup(configuration: configuration) { group in
            let admin = AdminClient(address: adminAddress, token: nil, loop: group.eventLoops[0])
            let transport = try TCPClientTransport(server: address, dialect: .zego)
            let environment = ZegoClient.Environment(transport: transport, timings: timings)
            let clients = (0..<pingClients).map { index in
                ZegoClient(id: "u\(index)", loop: group.loop(for: "room-\(index % 20)"), environment: environment)
            }
            for (index, client) in clients.enumerated() { _ = await client.loginRoom("room-\(index % 20)") }
            try await Task.sleep(for: .seconds(window))
            func heartbeats() async -> Double {
                let text = await admin.request("GET", "/metrics").body
                let line = text.split(separator: "\n").first { $0.hasPrefix("roomlink_heartbeats_total") }
                return line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
            }
            let before = await heartbeats()
            let cpuBefore = ProcessCPU.now()
            let serverBefore = server.cpuSeconds()
            let start = ContinuousClock.now
            try await Task.sleep(for: .seconds(window))
            let after = await heartbeats()
            let cpu = Double(ProcessCPU.now() - cpuBefore) / 1e9 + server.cpuSeconds() - serverBefore
            let elapsed = start.duration(to: .now)
            for client in clients { await client.shutdown() }
            await transport.close()
            return RoundTrips(
                name: "serve + RoomLink",
                roundTrips: after - before,
                cpuSeconds: cpu,
                window: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            )
        }
    }
}

/// The raw C echo server, in its own process: `roomlink-bench raw-server` (the network cases start it).
struct RawServer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "raw-server",
        abstract: "Raw C libevent echo server (for the network cases).",
        shouldDisplay: false
    )

    @Option var threads = 2

    func run() throws {
        OpenFileLimit.raiseToHard()
        let port = CRawNet_server_start("127.0.0.1", 0, Int32(threads))
        guard port > 0 else { throw ExitCode(1) }
        FileHandle.standardOutput.write(Data("port \(port)\n".utf8))
        while true { sleep(3600) }
    }
}

/// A child process started for a case: its first lines of output, its CPU time and memory, and stopping it.
final class Child: @unchecked Sendable {
    // Safe: used from the benchmark's one task.
    let process: Process
    private(set) var lines: [String] = []
    var firstLine: String { lines.first ?? "" }

    private init(process: Process) {
        self.process = process
    }

    static func start(_ path: String, _ arguments: [String], readyWhen marker: String) throws -> Child {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        ChildRegistry.started(process.processIdentifier)
        let child = Child(process: process)
        let handle = pipe.fileHandleForReading
        var buffer = Data()
        while !child.lines.contains(where: { $0.contains(marker) }) {
            let chunk = handle.availableData
            guard !chunk.isEmpty else { throw ValidationError("\(path) \(arguments) ended before it was ready") }
            buffer.append(chunk)
            child.lines = String(decoding: buffer, as: UTF8.self).split(separator: "\n").map(String.init)
        }
        // Keep reading what the child prints after it is ready: a pipe nobody drains fills, and the child then blocks
        // on its next write (a log line at shutdown, say) and never exits.
        Thread.detachNewThread {
            while !handle.availableData.isEmpty {}
        }
        return child
    }

    /// `roomlink serve` at `path` on ephemeral loopback ports, with its admin API and errors-only logging, and
    /// `arguments` besides; returns once it says where it listens (``servedAddress(after:)``, ``adminAddress()``).
    static func serve(_ path: String, _ arguments: [String]) throws -> Child {
        try start(
            path,
            ["serve", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--log-level", "error"] + arguments,
            readyWhen: " loops "
        )
    }

    /// Where the admin API of a child started by ``serve(_:_:)`` listens.
    func adminAddress() throws -> SocketAddress { try servedAddress(after: "http://") }

    /// Starts a child without waiting for anything it prints (its output is discarded).
    static func launch(_ path: String, _ arguments: [String]) throws -> Child {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        ChildRegistry.started(process.processIdentifier)
        return Child(process: process)
    }

    /// The first `HOST:PORT` after `marker` in the child's lines (`roomlink serve` prints where it listens).
    func servedAddress(after marker: String = "zego on ") throws -> SocketAddress {
        for line in lines {
            guard let range = line.range(of: marker) else { continue }
            let word = line[range.upperBound...].split(separator: " ").first.map(String.init) ?? ""
            if let address = try? SocketAddress(parsing: word) { return address }
        }
        throw ValidationError("no address after '\(marker)' in \(lines)")
    }

    /// Asks the child to stop (SIGTERM: `roomlink serve` shuts down gracefully) and kills it if it has not exited
    /// after `grace` seconds, so a case never waits forever on a child that is stuck.
    func stop(grace: Double = 15) {
        process.terminate()
        let deadline = Date().addingTimeInterval(grace)
        while process.isRunning && Date() < deadline { usleep(50_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        ChildRegistry.ended(process.processIdentifier)
    }

    /// Resident memory (VmRSS), in bytes.
    func residentBytes() -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0) * 1024
    }

    /// User plus system CPU time, in seconds.
    func cpuSeconds() -> Double {
        let stat = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8)) ?? ""
        // Fields after the command's closing parenthesis: utime is the 14th field of the line, stime the 15th.
        guard let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return ((Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)) / ticks
    }
}

/// A child's CPU time over the window that starts `warmup` seconds from now and ends when asked.
final class CPUWindow: @unchecked Sendable {
    // Safe: `start` is written once by the timer thread before `seconds()` reads it after the window.
    private let child: Child
    private var start: Double = 0
    private let thread: Thread

    init(child: Child, warmup: Double) {
        self.child = child
        let box = StartBox()
        thread = Thread {
            Thread.sleep(forTimeInterval: warmup)
            box.value = child.cpuSeconds()
        }
        self.box = box
        thread.start()
    }

    private let box: StartBox

    private final class StartBox: @unchecked Sendable {
        // Safe: written by the timer thread, read after the window (seconds later).
        var value: Double = 0
    }

    func seconds() -> Double {
        child.cpuSeconds() - box.value
    }
}
