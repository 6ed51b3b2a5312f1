import RoomLink
import RoomLinkNetwork
import Testing

/// What the network tests share: a server on loopback with an ephemeral port, and waiting without sleeping blind.
enum NetworkTest {
    /// Four times faster than life: ZEGO's 2 s test heartbeat is half a real second. Not faster: the clients'
    /// timeouts are real time too, and a loaded machine must not make them expire.
    static let timeScale = 0.25

    static func withGroup<T: Sendable>(
        loops: Int = 2,
        _ body: (LibeventLoopGroup) async throws -> T
    ) async throws -> T {
        try await LibeventLoopGroup.withLoopGroup(configuration: .init(loopCount: loops, timeScale: timeScale)) {
            try await body($0)
        }
    }

    static func server(
        on group: LibeventLoopGroup,
        _ configuration: NetworkServer.Configuration = .init(dialect: .zego),
        host: String = "127.0.0.1",
        port: UInt16 = 0
    ) async throws -> (NetworkServer, SocketAddress) {
        let server = NetworkServer(group: group, configuration: configuration)
        let address = try await server.listen(on: SocketAddress(host: host, port: port))
        return (server, address)
    }

    /// Waits until `condition` holds, checking it every 10 real milliseconds, at most `limit / 10 ms` times (a limit
    /// for hangs, not a timing). It counts checks, not real time: on a loaded machine this task may wait a minute for
    /// a thread, and a wait that ran out while nothing could run would blame the code under test for the machine.
    /// The suite's time limit still bounds the whole.
    static func until(
        _ what: String,
        limit: Duration = .seconds(60),
        _ condition: () async -> Bool
    ) async throws {
        let checks = max(1, Int(limit / .milliseconds(10)))
        for _ in 0..<checks {
            if await condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        if await condition() { return }
        Issue.record("timed out waiting until \(what)")
        throw TimedOut()
    }

    struct TimedOut: Error {}
}

/// A ZEGO client's events as they arrive, for tests to wait on.
final class EventLog: Sendable {
    private let events = LockedBox<[ZegoEvent]>([])
    private let task: Task<Void, Never>

    init(_ client: ZegoClient) async {
        let stream = await client.events()
        let events = self.events
        task = Task { for await change in stream { events.withLock { $0.append(change.event) } } }
    }

    var all: [ZegoEvent] { events.withLock { $0 } }

    /// The state reasons seen so far, in order.
    var reasons: [ZegoRoomStateChangedReason] {
        all.compactMap {
            if case .roomStateChanged(_, let reason, _, _) = $0 { return reason }
            return nil
        }
    }

    func count(of reason: ZegoRoomStateChangedReason) -> Int { reasons.filter { $0 == reason }.count }

    deinit { task.cancel() }
}
