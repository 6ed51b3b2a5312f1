import ArgumentParser
import Foundation
import Glibc
import NIOCore
import NIOHTTP1
import NIOPosix
import RoomLink
import Synchronization

/// `roomlink-bench livekit`: LiveKit's signalling against RoomLink's own protocol, side by side — the same population
/// of LiveKit-dialect clients (`roomlink load`) against `roomlink serve`, once per protocol, alternating — and the
/// webhooks' delivery rate.
struct LiveKitSignalling: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "livekit",
        abstract: "LiveKit's signalling against RoomLink's protocol, side by side; webhook deliveries per second.",
        discussion: """
            Each round runs, alternating: `roomlink serve` with RoomLink's protocol, then with LiveKit's (--protocol \
            livekit), each held by a `roomlink load` of --clients LiveKit-dialect clients pinging every --ping-ms; \
            after the fill and a settling window it reads serve's memory per held connection (RSS after less \
            before, per client) and, over --window seconds, the pings served (serve's /metrics) per CPU-second of \
            serve alone and of serve and the clients together. Then the webhooks: a join storm of --clients \
            clients against serve --webhook pointed at a sink in this process (SwiftNIO, answering 200), timed \
            from the first delivery to the last.
            """
    )

    @Option(help: "The roomlink executable (a release build).") var roomlink = "../.build/release/roomlink"
    @Option(help: "Clients held in each case.") var clients = 5_000
    @Option(help: "Ping interval of the held clients, in milliseconds.") var pingMs = 1_000
    @Option(help: "Seconds measured per case, after the fill and as long again of settling.") var window = 10.0
    @Option(help: "Rounds (each runs every case once, alternating).") var rounds = 3
    @Option(help: "Loops (threads) serve runs on.") var loops = 2

    static let key = "bench"
    static let secret = "a-benchmark-secret-of-32-bytes-or-more"

    func run() async throws {
        OpenFileLimit.raiseToHard()
        say("livekit benchmarks: \(clients) clients pinging every \(pingMs) ms, \(rounds) rounds")
        for round in 1...rounds {
            say("— round \(round)")
            for liveKit in [false, true] {
                say(try await held(liveKit: liveKit).line)
            }
            say(try await webhooks().line)
        }
    }

    private func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    // MARK: - Held connections

    struct Held {
        var name: String
        var bytesPerConnection: Double
        var pings: Double
        var serverCPU: Double
        var clientCPU: Double
        var window: Double

        var line: String {
            let perServerCore = pings / max(serverCPU, 1e-9)
            let perCore = pings / max(serverCPU + clientCPU, 1e-9)
            return String(
                format: "%@: %.0f B per held connection in serve; %.0f pings/s; %.0f pings per serve CPU-second, "
                    + "%.0f per CPU-second of serve and clients (serve %.2f, clients %.2f cores)",
                name,
                bytesPerConnection,
                pings / window,
                perServerCore,
                perCore,
                serverCPU / window,
                clientCPU / window
            )
        }
    }

    private func held(liveKit: Bool) async throws -> Held {
        let timing = ["--timing", "pingInterval=\(pingMs)ms"]
        let protocolFlags = liveKit ? ["--protocol", "livekit", "--keys", "\(Self.key):\(Self.secret)"] : []
        let server = try Child.serve(
            roomlink,
            ["--loops", "\(loops)", "--dialect", "livekit"] + protocolFlags + timing
        )
        defer { server.stop() }
        let address = try server.servedAddress(after: liveKit ? "protocol) on " : "livekit on ")
        let admin = try server.adminAddress()
        try await Task.sleep(for: .milliseconds(300))
        let baseline = server.residentBytes()
        let fill = max(5, clients / 1_000)
        let duration = Double(fill) + 3 * window + 30
        let load = try Child.launch(
            roomlink,
            [
                "load", "--clients", "\(clients)", "--rooms", "\(max(1, clients / 100))", "--dialect", "livekit",
                "--duration", "\(Int(duration))s", "--login-over", "\(fill)s", "--server",
                liveKit ? "ws://\(address)" : "\(address)", "--clock", "real", "--quiet", "--report", "/dev/null",
            ]
                + protocolFlags + timing
        )
        defer { load.stop(grace: 5) }
        try await Task.sleep(for: .seconds(Double(fill) + window))
        let bytes = Double(server.residentBytes() - baseline) / Double(clients)
        let before = try await Self.heartbeats(admin)
        let serverBefore = server.cpuSeconds()
        let clientBefore = load.cpuSeconds()
        let start = ContinuousClock.now
        try await Task.sleep(for: .seconds(window))
        let after = try await Self.heartbeats(admin)
        let elapsed = start.duration(to: .now)
        return Held(
            name: liveKit ? "LiveKit's protocol (WebSocket, protobuf)" : "RoomLink's protocol",
            bytesPerConnection: bytes,
            pings: after - before,
            serverCPU: server.cpuSeconds() - serverBefore,
            clientCPU: load.cpuSeconds() - clientBefore,
            window: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        )
    }

    /// serve's `roomlink_heartbeats_total`, from its admin API.
    static func heartbeats(_ admin: RoomLink.SocketAddress) async throws -> Double {
        let text = try await fetch(admin, "/metrics")
        let line = text.split(separator: "\n").first { $0.hasPrefix("roomlink_heartbeats_total") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
    }

    /// A `GET` of `path`, the whole answer (the admin API closes the connection after it): a blocking socket on a
    /// thread of its own, so that no HTTP client library is needed for one request.
    static func fetch(_ address: RoomLink.SocketAddress, _ path: String) async throws -> String {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<String, any Error>) in
            Thread.detachNewThread {
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                defer { close(fd) }
                var target = sockaddr_in()
                target.sin_family = sa_family_t(AF_INET)
                target.sin_port = in_port_t(address.port).bigEndian
                inet_pton(AF_INET, address.host, &target.sin_addr)
                let connected = withUnsafePointer(to: &target) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                guard connected == 0 else { return done.resume(throwing: ValidationError("cannot reach \(address)")) }
                let request = Array("GET \(path) HTTP/1.1\r\nHost: \(address)\r\nConnection: close\r\n\r\n".utf8)
                _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
                var answer: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    if count <= 0 { break }
                    answer += buffer[0..<count]
                }
                done.resume(returning: String(decoding: answer, as: UTF8.self))
            }
        }
    }

    // MARK: - Webhooks

    struct Webhooks {
        var delivered: Int
        var seconds: Double
        var serverCPU: Double

        var line: String {
            String(
                format: "webhooks: %d delivered in %.2f s, %.0f per second (serve's CPU over the storm — the joins, "
                    + "their presence updates and the webhooks: %.2f s)",
                delivered,
                seconds,
                Double(delivered) / max(seconds, 1e-9),
                serverCPU
            )
        }
    }

    private func webhooks() async throws -> Webhooks {
        let sink = try await WebhookSink.start()
        defer { sink.stop() }
        let server = try Child.start(
            roomlink,
            [
                "serve", "--listen", "127.0.0.1:0", "--loops", "\(loops)", "--log-level", "error", "--protocol",
                "livekit", "--keys", "\(Self.key):\(Self.secret)", "--webhook", "http://127.0.0.1:\(sink.port)/hook",
                "--webhook-queue", "\(4 * clients + 100)",
            ],
            readyWhen: " loops "
        )
        defer { server.stop() }
        let address = try server.servedAddress(after: "protocol) on ")
        let serverBefore = server.cpuSeconds()
        // A join storm: every client joins within a second — a room_started per room and a participant_joined each.
        let load = try Child.launch(
            roomlink,
            [
                "load", "--clients", "\(clients)", "--rooms", "\(max(1, clients / 100))", "--dialect", "livekit",
                "--duration", "60s", "--login-over", "1s", "--server", "ws://\(address)", "--protocol", "livekit",
                "--keys", "\(Self.key):\(Self.secret)", "--clock", "real", "--quiet", "--report", "/dev/null",
            ]
        )
        defer { load.stop(grace: 5) }
        let expected = clients + max(1, clients / 100)
        let deadline = ContinuousClock.now.advanced(by: .seconds(60))
        while sink.count < expected, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let (count, seconds) = sink.span()
        return Webhooks(delivered: count, seconds: seconds, serverCPU: server.cpuSeconds() - serverBefore)
    }
}

/// An HTTP sink for webhooks (SwiftNIO): answers every request 200, counts them, and notes the first and the last.
final class WebhookSink: Sendable {
    let port: Int
    private let channel: any Channel
    private let group: MultiThreadedEventLoopGroup
    private let counter: Counter

    private init(port: Int, channel: any Channel, group: MultiThreadedEventLoopGroup, counter: Counter) {
        self.port = port
        self.channel = channel
        self.group = group
        self.counter = counter
    }

    var count: Int { counter.state.withLock { $0.count } }

    /// How many arrived, and the seconds from the first to the last.
    func span() -> (Int, Double) {
        counter.state.withLock { state in
            guard let first = state.first, let last = state.last else { return (state.count, 0) }
            let elapsed = first.duration(to: last)
            return (state.count, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }
    }

    static func start() async throws -> WebhookSink {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let counter = Counter()
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(Answer(counter: counter))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return WebhookSink(port: channel.localAddress?.port ?? 0, channel: channel, group: group, counter: counter)
    }

    func stop() {
        try? channel.close().wait()
        try? group.syncShutdownGracefully()
    }

    final class Counter: Sendable {
        let state = Mutex<(count: Int, first: ContinuousClock.Instant?, last: ContinuousClock.Instant?)>(
            (0, nil, nil)
        )

        func arrived() {
            let now = ContinuousClock.now
            state.withLock { state in
                state.count += 1
                if state.first == nil { state.first = now }
                state.last = now
            }
        }
    }

    /// Answers each whole request `200 OK` on its keep-alive connection.
    final class Answer: ChannelInboundHandler, Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let counter: Counter

        init(counter: Counter) {
            self.counter = counter
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .end = unwrapInboundIn(data) else { return }
            counter.arrived()
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: "0")
            let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}
