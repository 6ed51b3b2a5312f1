import ArgumentParser
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import RoomLink

/// `roomlink-bench callbacks`: a storm's room callbacks at scale. A population's membership changes — everyone joins,
/// half time out and come back as new sessions, everyone leaves — go through `RoomCallbacks` exactly as a server's
/// rooms report them, to real receivers over loopback (`--callback URL`, started beside the bench: a fast one, a slow
/// one, one that is down), on a scaled clock. It reports deliveries per second, the queue's peak, the delivery side's
/// CPU per attempt and its memory, and what was lost or dropped by cause.
struct Callbacks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "callbacks",
        abstract: "A storm's room callbacks at scale: deliveries per second, queue depth, CPU and memory."
    )

    @Option(help: "Clients of the storm.") var clients = 100_000
    @Option(help: "Rooms they are spread over.") var rooms = 1_000
    @Option(help: "agora, zego or livekit.") var vendor = "agora"
    @Option(help: "A receiver (repeatable).") var callback: [String] = []
    @Option(
        help:
            "Receivers the bench starts (comma-separated): fast (answers at once), slow (after 200 ms), down (refuses)."
    )
    var sinks = ""
    @Option(help: "The share played out of order (not LiveKit).") var disorder = 0.01
    @Option(help: "Pending callbacks per receiver at most.") var queue = 10_000
    @Option(help: "Real seconds per scenario second (the storm's phases, the vendors' retries).")
    var timeScale = 0.1
    @Option(help: "How long to wait for the queues to drain after the storm (scenario seconds).") var drain = 300.0

    struct Result: Codable {
        var vendor: String
        var clients: Int
        var emitted: Int
        var attempts: Int
        var delivered: Int
        var retried: Int
        var lost: Int
        var dropped: Int
        var peakPending: Int
        var wallSeconds: Double
        var deliveriesPerSecond: Double
        var cpuMicrosecondsPerAttempt: Double
        var residentGrowthMiB: Double
        var peakResidentMiB: Double
        var failures: [String: Int]
        var drops: [String: Int]
    }

    func run() async throws {
        guard let vendor = CallbackVendor(rawValue: vendor), vendor != .livekit else {
            throw ValidationError("--vendor: agora or zego")
        }
        var urls = try callback.map { try HTTPTokenSource.Endpoint(parsing: $0, flag: "--callback") }
        var children: [Process] = []
        defer {
            for child in children {
                child.terminate()
                child.waitUntilExit()
                ChildRegistry.ended(child.processIdentifier)
            }
        }
        for sink in sinks.split(separator: ",").map(String.init) {
            let port: Int
            switch sink {
            case "down":
                // A port nobody listens on: bound, then closed.
                let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_addr.s_addr = inet_addr("127.0.0.1")
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                _ = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, length) }
                }
                _ = withUnsafeMutablePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(probe, $0, &length) }
                }
                port = Int(UInt16(bigEndian: address.sin_port))
                close(probe)
            case "fast", "slow":
                let child = Process()
                child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
                child.arguments = ["callback-sink", "--delay-ms", sink == "slow" ? "200" : "0"]
                let output = Pipe()
                child.standardOutput = output
                try child.run()
                ChildRegistry.started(child.processIdentifier)
                children.append(child)
                let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
                guard
                    let number = Int(
                        line.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
                    )
                else { throw ValidationError("the \(sink) sink did not start: \(line)") }
                port = number
            default:
                throw ValidationError("--sinks: fast, slow or down, not '\(sink)'")
            }
            urls.append(try HTTPTokenSource.Endpoint(parsing: "http://127.0.0.1:\(port)/\(sink)", flag: "--sinks"))
        }
        guard !urls.isEmpty else { throw ValidationError("--callback URL or --sinks: at least one receiver") }
        let group = try LibeventLoopGroup(configuration: .init(loopCount: 2, timeScale: timeScale))
        defer { group.shutdown() }
        let format: any CallbackFormat =
            switch vendor {
            case .agora: AgoraCallbackFormat(secret: "bench-secret")
            case .zego: ZegoCallbackFormat(appID: "1234567", secret: "bench-secret")
            case .livekit: preconditionFailure("refused above")
            }
        let callbacks = try RoomCallbacks(
            settings: CallbackSettings(
                urls: urls,
                rules: .vendor(vendor, disorder: vendor == .livekit ? 0 : disorder, seed: 1, capacity: queue)
            ),
            format: format,
            loop: group.eventLoops[0]
        )
        let baseline = Memory.residentBytes()
        let cpuStart = ProcessCPU.now()
        let wallStart = Monotonic.now()
        let statistics = callbacks.statistics
        /// Plays `count` changes over `seconds` of scenario time, in steps of 10 ms.
        func spread(_ count: Int, over seconds: Double, _ change: (Int) -> Void) async throws {
            let steps = max(1, Int(seconds * 100))
            var done = 0
            for step in 1...steps {
                let until = count * step / steps
                while done < until {
                    change(done)
                    done += 1
                }
                try await Task.sleep(for: .seconds(0.01 * timeScale))
            }
        }
        var sessions = (0..<clients).map { UInt64($0 + 1) }
        func room(_ client: Int) -> String { "room-\(client % rooms)" }
        let now = { group.now }
        // Everyone joins over 10 s.
        try await spread(clients, over: 10) { client in
            callbacks.membershipChanged(
                .joined(userID: "u\(client)", session: SessionID(rawValue: sessions[client])),
                inRoom: room(client),
                roomSessionID: "life-\(client % rooms)",
                at: now()
            )
        }
        try await Task.sleep(for: .seconds(10 * timeScale))
        // Half time out over 5 s, and come back as new sessions over the next 5 s.
        try await spread(clients / 2, over: 5) { half in
            let client = half * 2
            callbacks.membershipChanged(
                .left(
                    userID: "u\(client)",
                    session: SessionID(rawValue: sessions[client]),
                    reason: .dropped,
                    kicked: nil
                ),
                inRoom: room(client),
                roomSessionID: "life-\(client % rooms)",
                at: now()
            )
        }
        try await spread(clients / 2, over: 5) { half in
            let client = half * 2
            sessions[client] += UInt64(clients)
            callbacks.membershipChanged(
                .joined(userID: "u\(client)", session: SessionID(rawValue: sessions[client])),
                inRoom: room(client),
                roomSessionID: "life-\(client % rooms)",
                at: now()
            )
        }
        try await Task.sleep(for: .seconds(10 * timeScale))
        // Everyone leaves over 10 s.
        try await spread(clients, over: 10) { client in
            callbacks.membershipChanged(
                .left(userID: "u\(client)", session: SessionID(rawValue: sessions[client]), reason: .quit, kicked: nil),
                inRoom: room(client),
                roomSessionID: "life-\(client % rooms)",
                at: now()
            )
        }
        // Until every queue drains (or the drain time runs out).
        let drainUntil = Monotonic.now() + Int64(drain * timeScale * 1e9)
        while statistics.pending > 0, Monotonic.now() < drainUntil {
            try await Task.sleep(for: .milliseconds(50))
        }
        let wall = Double(Monotonic.now() - wallStart) / 1e9
        let cpu = Double(ProcessCPU.now() - cpuStart)
        let result = Result(
            vendor: vendor.rawValue,
            clients: clients,
            emitted: statistics[.emitted],
            attempts: statistics[.attempts],
            delivered: statistics[.delivered],
            retried: statistics[.retried],
            lost: statistics[.lost],
            dropped: statistics[.dropped],
            peakPending: statistics.peakPending,
            wallSeconds: wall,
            deliveriesPerSecond: Double(statistics[.delivered]) / wall,
            cpuMicrosecondsPerAttempt: cpu / 1_000 / Double(max(1, statistics[.attempts])),
            residentGrowthMiB: Double(Memory.residentBytes() - baseline) / 1_048_576,
            peakResidentMiB: Double(Memory.peakResidentBytes()) / 1_048_576,
            failures: Dictionary(
                uniqueKeysWithValues: CallbackFailureCause.allCases.map { ($0.rawValue, statistics.failures($0)) }
                    .filter { $0.1 > 0 }
            ),
            drops: Dictionary(
                uniqueKeysWithValues: CallbackDropReason.allCases.map { ($0.rawValue, statistics.drops($0)) }
                    .filter { $0.1 > 0 }
            )
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        print(String(decoding: try encoder.encode(result), as: UTF8.self))
        print("pending at the end: \(statistics.pending); \(statistics.summary)")
    }
}

/// The process's resident memory, from /proc/self/status.
enum Memory {
    static func residentBytes() -> Int { field("VmRSS:") }
    static func peakResidentBytes() -> Int { field("VmHWM:") }

    private static func field(_ name: String) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name) })
        else { return 0 }
        return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
    }
}

/// `roomlink-bench callback-sink`: a receiver for `callbacks`, in a process of its own (its CPU is not the delivery
/// side's): answers each request `200` with the JSON body `{}` (what Agora counts as delivered), after `--delay-ms`.
struct CallbackSink: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "callback-sink",
        abstract: "A receiver of room callbacks for the callbacks benchmark (prints its port, runs until killed).",
        shouldDisplay: false
    )

    @Option(help: "Wait this long before each answer.") var delayMs = 0
    @Option(help: "The status to answer.") var status = 200

    func run() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let delay = TimeAmount.milliseconds(Int64(delayMs))
        let status = HTTPResponseStatus(statusCode: status)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(Answer(delay: delay, status: status))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        FileHandle.standardOutput.write(Data("port \(channel.localAddress?.port ?? 0)\n".utf8))
        try await channel.closeFuture.get()
    }

    final class Answer: ChannelInboundHandler, Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let delay: TimeAmount
        let status: HTTPResponseStatus

        init(delay: TimeAmount, status: HTTPResponseStatus) {
            self.delay = delay
            self.status = status
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .end = unwrapInboundIn(data) else { return }
            if delay == .zero {
                answer(context)
            } else {
                let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
                context.eventLoop.scheduleTask(in: delay) { [self] in answer(bound.value) }
            }
        }

        private func answer(_ context: ChannelHandlerContext) {
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: "2")
            headers.add(name: "Content-Type", value: "application/json")
            let head = HTTPResponseHead(version: .http1_1, status: status, headers: headers)
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            let body = context.channel.allocator.buffer(string: "{}")
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}
