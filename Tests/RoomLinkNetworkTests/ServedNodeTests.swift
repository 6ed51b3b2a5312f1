import RoomLink
import RoomLinkNetwork
import RoomLinkTestSupport
import Testing

/// A served node's life, as `roomlink serve` lives it: a start that fails shuts down what it started and says why;
/// a node runs until told to stop, then says goodbye to its clients before it lets its presence go. Over loopback,
/// with a presence that records what happened to it (a real Redis is `ClusterPresenceTests`' part).
@Suite(.hangLimit(minutes: 10))
struct ServedNodeTests {
    /// A presence store that answers the start with `readiness` and records the order of what happened.
    final class RecordingPresence: NodePresence {
        let readiness: NodePresenceReadiness
        let server: NetworkServer
        let record = LockedBox<[String]>([])
        init(_ readiness: NodePresenceReadiness, server: NetworkServer) {
            self.readiness = readiness
            self.server = server
        }
        var nodeID: String { "node-a" }
        var summary: String { "recorded" }
        func awaitFirstConnections(within limit: Duration) async -> NodePresenceReadiness {
            record.withLock { $0.append("awaited") }
            return readiness
        }
        func shutdown() async {
            let open = server.statistics.connectionsOpen
            record.withLock { $0.append("shutdown with \(open) connections open") }
        }
    }

    static let loopback = SocketAddress(host: "127.0.0.1", port: 0)
    /// One listener, without `SO_REUSEPORT`: a port another listener holds is refused.
    static let configuration = NetworkServer.Configuration(dialect: .zego, acceptMode: .handOff)

    @Test func aNodeIDInUseFailsTheStartAndShutsDownWhatStarted() async throws {
        try await NetworkTest.withGroup { group in
            let server = NetworkServer(group: group, configuration: Self.configuration)
            let presence = RecordingPresence(.nodeIDInUse, server: server)
            let node = ServedNode(server: server, presence: presence)
            do throws(ServedNode.StartFailure) {
                _ = try await node.start(listen: Self.loopback, admin: Self.loopback)
                Issue.record("a node whose ID is in use started")
            } catch {
                guard case .nodeIDInUse("node-a") = error else {
                    Issue.record("not the node's ID: \(error)")
                    return
                }
                #expect(error.description.contains("--node-id node-a"))
            }
            // The listener it had opened is closed: another server binds its address.
            let bound = try #require(server.localAddress)
            let (next, _) = try await NetworkTest.server(
                on: group,
                Self.configuration,
                host: bound.host,
                port: bound.port
            )
            await next.shutdown()
            #expect(presence.record.withLock { $0 } == ["awaited", "shutdown with 0 connections open"])
        }
    }

    @Test func aPortInUseIsAListenFailureNamingTheAddress() async throws {
        try await NetworkTest.withGroup { group in
            let (other, taken) = try await NetworkTest.server(on: group, Self.configuration)
            let server = NetworkServer(group: group, configuration: Self.configuration)
            let presence = RecordingPresence(.reached, server: server)
            let node = ServedNode(server: server, presence: presence)
            do throws(ServedNode.StartFailure) {
                _ = try await node.start(listen: taken)
                Issue.record("a second server listened on \(taken)")
            } catch {
                guard case .listen = error else {
                    Issue.record("not a listen failure: \(error)")
                    return
                }
                #expect(presence.record.withLock { $0 } == ["shutdown with 0 connections open"], "never awaited")
            }
            await other.shutdown()
        }
    }

    @Test func aNodeRunsUntilToldThenSaysGoodbyeBeforeItLetsItsPresenceGo() async throws {
        try await NetworkTest.withGroup { group in
            let server = NetworkServer(group: group, configuration: Self.configuration)
            let presence = RecordingPresence(.notReachedYet, server: server)
            let node = ServedNode(server: server, presence: presence)
            let addresses = try await node.start(listen: Self.loopback, admin: Self.loopback)
            #expect(addresses.admin != nil && addresses.server.port != 0)
            #expect(addresses.presenceReached == false)
            let alice = try NetworkServerTests.client("alice", on: group, to: addresses.server)
            #expect(await alice.loginRoom("room-1") == .success)
            let stop = AsyncStream<String>.makeStream()
            let running = Task { await node.run(until: { await stop.stream.first { _ in true } ?? "ended" }) }
            try await NetworkTest.until("alice's login counted") { server.statistics[.loginsAccepted] == 1 }
            stop.continuation.yield("drill")
            let (reason, statistics) = await running.value
            #expect(reason == "drill")
            #expect(statistics.connectionsClosed(by: .serverShutdown) == 1, "alice heard the goodbye")
            // The presence went last: no connection was open when it was let go.
            #expect(presence.record.withLock { $0 } == ["awaited", "shutdown with 0 connections open"])
            await alice.shutdown()
        }
    }
}
