import RoomLink
import RoomLinkNetwork
import RoomLinkTestSupport
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

    /// Waits until `condition` holds (``Polling/until(_:limit:showing:_:)``).
    static func until(
        _ what: String,
        limit: Duration = .seconds(60),
        _ condition: () async -> Bool
    ) async throws {
        try await Polling.until(what, limit: limit, condition)
    }

    /// The longest a stall can be and leave the fault tests' exact story standing, in scenario time: their closest
    /// calls are seconds apart (a 2 s heartbeat against a 6 s silence, a 3 s attempt timeout, a 12 s server drop).
    private static let exactStoryStall = Duration.seconds(1)

    /// Starts a witness of how long `group`'s loops stall (``StallWatch``), for ``ifNoStall(of:proxy:in:_:)``.
    static func watchStalls(of group: LibeventLoopGroup) throws {
        try StallWatch.start(on: group, every: watchPeriod)
    }

    private static let watchPeriod = Duration.milliseconds(250)

    /// Checks a fault test's exact story — `assertions` — unless a loop of `group`, or `proxy`'s thread, stalled long
    /// enough to write its own; then says so instead. A loaded machine that holds a loop up for seconds makes faults
    /// of its own (a heartbeat ack read late is a silence; an attempt answered late was already given up), and the
    /// test asserts only what no stall can shift: that the story ends where it must, never what happened on the way.
    static func ifNoStall(
        of group: LibeventLoopGroup,
        proxy: SilentProxy? = nil,
        in test: String,
        _ assertions: () -> Void
    ) {
        if storyStands(of: group, proxy: proxy, in: test) { assertions() }
    }

    /// Whether no loop of `group`, nor `proxy`'s thread, stalled long enough to write a story of its own
    /// (``ifNoStall(of:proxy:in:_:)``); when one did, says so.
    static func storyStands(of group: LibeventLoopGroup, proxy: SilentProxy? = nil, in test: String) -> Bool {
        // The longest stall so far in scenario time, give or take a watch period.
        let loops = Duration.milliseconds(group.timerLateness.maxMs / timeScale)
        let thread = (proxy?.longestStall ?? .zero) / timeScale
        let stall = max(loops, thread) + watchPeriod
        guard stall >= exactStoryStall else { return true }
        print("\(test): a loop stalled \(stall) of scenario time; only what no stall can shift was checked")
        return false
    }
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

    /// How many times `event` was seen.
    func count(_ event: ZegoEvent) -> Int { all.filter { $0 == event }.count }

    /// Whether the client is in its room now, as its own events tell: its last state change logged it in.
    var isIn: Bool { reasons.last == .logined || reasons.last == .reconnected }

    /// Whether the client sees `user` in `room` now: the last update naming them added them.
    func sees(_ user: String, in room: String) -> Bool {
        let last = all.last {
            if case .roomUserUpdate(room, _, let users) = $0 { users.contains(user) } else { false }
        }
        guard case .roomUserUpdate(_, .add, _) = last else { return false }
        return true
    }

    deinit { task.cancel() }
}
