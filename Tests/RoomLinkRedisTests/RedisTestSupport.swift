import Foundation
import RoomLink
import RoomLinkNetwork
import RoomLinkRedis
import RoomLinkTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A Redis server of a test's own, on a free loopback port, with nothing saved to disk; stopped by the test.
final class RedisServer: Sendable {
    let port: Int
    private let process = LockedBox<Process?>(nil)

    static var isAvailable: Bool { executable("redis-server") != nil && executable("redis-cli") != nil }

    var endpoint: RedisEndpoint { RedisEndpoint(host: "127.0.0.1", port: port) }

    init() throws {
        // A port found free may be taken before redis-server binds it — by another test process's Redis, which would
        // then answer for ours and share its keys. The server that answers must be ours (its process ID), or another
        // port is tried.
        var lastError: any Error = RedisTestError("no free port")
        for _ in 0..<10 {
            let candidate = try Self.freePort()
            do {
                try Self.launch(on: candidate, into: process)
                port = candidate
                return
            } catch {
                lastError = error
                if let failed = process.withLock({ $0 }) {
                    kill(failed.processIdentifier, SIGKILL)
                    failed.waitUntilExit()
                }
            }
        }
        throw lastError
    }

    /// Starts the server again after ``stop()``, on its port: empty, as a restarted Redis without persistence is.
    func start() throws {
        try Self.launch(on: port, into: process)
    }

    /// Starts redis-server on `port` and waits until it answers — and is the one answering.
    private static func launch(on port: Int, into box: LockedBox<Process?>) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable("redis-server")!)
        process.arguments = [
            "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no",
            "--loglevel", "warning",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        box.withLock { $0 = process }
        // Ready when it answers (a hang limit, not a timing).
        for _ in 0..<500 {
            guard process.isRunning else { throw RedisTestError("redis-server on port \(port) exited (port taken?)") }
            if (try? cli(port: port, "PING")) == "PONG" {
                guard let info = try? cli(port: port, "INFO", "server"),
                    info.contains("process_id:\(process.processIdentifier)")
                else { throw RedisTestError("another process's Redis answers on port \(port)") }
                return
            }
            usleep(10_000)
        }
        throw RedisTestError("redis-server on port \(port) did not answer")
    }

    /// Stops the server at once (SIGKILL: what it held is gone).
    func stop() {
        guard let process = process.withLock({ $0 }) else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process.withLock { $0 = nil }
    }

    /// Runs one command with `redis-cli` and returns its output, trimmed.
    @discardableResult
    func cli(_ arguments: String...) throws -> String {
        try Self.cli(port: port, arguments)
    }

    private static func cli(port: Int, _ arguments: String...) throws -> String {
        try cli(port: port, arguments)
    }

    private static func cli(port: Int, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable("redis-cli")!)
        process.arguments = ["-p", String(port), "--no-raw"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            .replacingOccurrences(of: "\"", with: "")
    }

    /// The keys Redis holds, sorted.
    func keys() throws -> [String] {
        let output = try cli("--raw", "KEYS", "*")
        return output.split(whereSeparator: \.isNewline).map(String.init).filter { !$0.isEmpty }.sorted()
    }

    deinit { stop() }

    private static func executable(_ name: String) -> String? {
        for directory in ["/usr/bin", "/usr/local/bin", "/usr/sbin"] {
            let path = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    private static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) }
        }
        guard bound == 0 else { throw RedisTestError("cannot find a free port") }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

struct RedisTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One `serve` node of a cluster, in the test's process: its own loops, its presence in Redis, its listener. A wait
/// that fails shows what the node did with Redis by then (its description) and its loops' view of Redis.
struct ClusterNode: CustomStringConvertible {
    let group: LibeventLoopGroup
    let presence: RedisPresence
    let server: NetworkServer
    let address: SocketAddress

    static func start(
        _ nodeID: String,
        redis: RedisServer,
        configuration: NetworkServer.Configuration,
        leasePeriod: Duration = .seconds(1)
    ) async throws -> ClusterNode {
        let group = try LibeventLoopGroup(configuration: .init(loopCount: 2, timeScale: RedisTest.timeScale))
        let presence = try RedisPresence(
            group: group,
            configuration: .init(
                endpoint: redis.endpoint,
                nodeID: nodeID,
                leasePeriod: leasePeriod,
                reconnectDelay: .milliseconds(400)
            )
        )
        var configuration = configuration
        configuration.cluster = presence
        let server = NetworkServer(group: group, configuration: configuration)
        let address = try await server.listen(on: SocketAddress(host: "127.0.0.1", port: 0))
        try await RedisTest.until("node \(nodeID) reaches Redis") { await presence.isConnected }
        return ClusterNode(group: group, presence: presence, server: server, address: address)
    }

    var description: String { "node at \(address): \(presence.summary); \(presence.statistics)" }

    /// A graceful stop: goodbye to the clients, then Redis, then the loops.
    func stop() async {
        await server.shutdown()
        await presence.shutdown()
        group.shutdown()
    }

    /// A node that dies: it tells nobody (its clients and Redis stop hearing from it), and its loops stop.
    func die() async {
        await presence.shutdown()
        await server.abandon()
        group.shutdown()
    }
}

enum RedisTest {
    /// Four times faster than life, as the network tests run.
    static let timeScale = 0.25

    /// ZEGO's client timings with frequent heartbeats and timeouts a loaded machine cannot reach. A login and a
    /// reconnection keep trying for a day (``clientRetryPolicy``): Redis is away for as long as a test's own steps
    /// take, and a starved test task (AddressSanitizer beside six CPU hogs and two other test runs) took four real
    /// minutes over them, past a 600 s login timeout (150 real seconds). A login that gave up meanwhile would blame
    /// the node for the machine.
    static let clientTimings = ZegoTimings(
        heartbeatInterval: .seconds(2),
        blackholeDetection: .seconds(600),
        attemptTimeout: .seconds(60),
        loginTimeout: .seconds(24 * 3600),
        retryTimeout: .seconds(24 * 3600)
    )

    /// ZEGO's retry schedule (``RetryPolicy/zegoDefault``) with no limit of its own: the timings' day decides.
    static let clientRetryPolicy = try! RetryPolicy(
        schedule: RetryPolicy.zegoDefault.schedule,
        maxElapsed: .seconds(24 * 3600)
    )

    static func environment(_ transport: TCPClientTransport) -> ZegoClient.Environment {
        ZegoClient.Environment(transport: transport, timings: clientTimings, retryPolicy: clientRetryPolicy)
    }

    static var serverConfiguration: NetworkServer.Configuration {
        var timings = ServerTimings.zego
        // 10 real seconds, and a node's lease 11: a loaded machine stalls a loop for seconds (ThreadSanitizer with
        // CPU hogs: over 3 s), and a member dropped for it would change what every peer sees.
        timings.heartbeatTimeout = .seconds(40)
        return NetworkServer.Configuration(dialect: .zego, timings: timings)
    }

    static func client(_ id: String, userID: String? = nil, on node: ClusterNode) throws -> ZegoClient {
        try client(id, userID: userID, servers: [node.address], on: node.group)
    }

    static func client(
        _ id: String,
        userID: String? = nil,
        servers: [SocketAddress],
        on group: LibeventLoopGroup
    ) throws -> ZegoClient {
        let transport = try TCPClientTransport(servers: servers, dialect: .zego)
        return ZegoClient(
            id: id,
            userID: userID,
            loop: group.loop(for: id),
            environment: environment(transport)
        )
    }

    /// Waits until `condition` holds (``Polling/until(_:limit:showing:_:)``); on a timeout the failure lists every
    /// event of `logs`.
    static func until(
        _ what: String,
        limit: Duration = .seconds(60),
        showing logs: [any CustomStringConvertible] = [],
        nodes: [ClusterNode] = [],
        _ condition: () async -> Bool
    ) async throws {
        do {
            try await Polling.until(what, limit: limit, showing: logs, condition)
        } catch let error as Polling.TimedOut {
            for node in nodes { Issue.record("\(node)\n\(await node.presence.state)") }
            throw error
        }
    }
}

/// A ZEGO client's events as they arrive, with when (the client's loop time).
final class ClientLog: Sendable, CustomStringConvertible {
    private let events = LockedBox<[(event: ZegoEvent, at: RuntimeInstant, received: ContinuousClock.Instant)]>([])
    private let task: Task<Void, Never>
    let name: String

    init(_ client: ZegoClient) async {
        name = client.endpointID
        let stream = await client.events()
        let events = self.events
        task = Task {
            for await change in stream { events.withLock { $0.append((change.event, change.time, .now)) } }
        }
    }

    var all: [ZegoEvent] { events.withLock { $0.map(\.event) } }

    /// When the first event matching `matches` reached this log, on the real clock every node shares.
    func received(_ matches: (ZegoEvent) -> Bool) -> ContinuousClock.Instant? {
        events.withLock { $0.first { matches($0.event) }?.received }
    }

    var reasons: [ZegoRoomStateChangedReason] {
        all.compactMap {
            if case .roomStateChanged(_, let reason, _, _) = $0 { return reason }
            return nil
        }
    }

    func count(of reason: ZegoRoomStateChangedReason) -> Int { reasons.filter { $0 == reason }.count }

    /// The user updates, as `+user` and `-user`, in order.
    var presence: [String] {
        all.flatMap { event -> [String] in
            guard case .roomUserUpdate(_, let update, let users) = event else { return [] }
            return users.map { (update == .add ? "+" : "-") + $0 }
        }
    }

    /// The client's name and every event it has seen, with when: what a timed-out wait shows.
    var description: String {
        let lines = events.withLock { $0.map { "\($0.at): \($0.event)" } }
        return "\(name): " + lines.joined(separator: "; ")
    }

    deinit { task.cancel() }
}
