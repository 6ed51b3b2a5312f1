import Foundation
import RoomLink
import RoomLinkNetwork
import RoomLinkTestSupport
import Testing

/// What a load tester owes its user about its connections, counted at the client's socket: attempts, opens,
/// failures by cause, handshake and login latency, heartbeat round trips. Counts and causes only — never how fast.
@Suite(.hangLimit(minutes: 10))
struct ConnectionMetricsTests {
    static func client(
        _ id: String,
        on group: LibeventLoopGroup,
        transport: TCPClientTransport
    ) -> ZegoClient {
        ZegoClient(
            id: id,
            loop: group.loop(for: id),
            environment: ZegoClient.Environment(transport: transport, timings: NetworkServerTests.timings)
        )
    }

    @Test func attemptsOpensLoginsAndHeartbeatsAreCounted() async throws {
        try await NetworkTest.withGroup { group in
            try NetworkTest.watchStalls(of: group)
            let (server, address) = try await NetworkTest.server(on: group)
            let statistics = ConnectionStatistics(origin: group.now)
            let transport = try TCPClientTransport(
                servers: [address],
                dialect: .zego,
                configuration: .init(sourceAddresses: ["127.0.0.2", "127.0.0.3"], observer: statistics)
            )
            let clients = (0..<6).map { Self.client("c\($0)", on: group, transport: transport) }
            for client in clients { #expect(await client.loginRoom("room-1") == .success) }
            try await NetworkTest.until("all six are in and a heartbeat came back") {
                let tally = statistics.tally(end: 1)
                return tally.login.count >= 6 && tally.heartbeatRoundTrip.count >= 1
                    && server.statistics.connectionsOpen == 6
            }
            let report = ConnectionReport(statistics.tally(end: 1))
            // What no stall can shift: every client is in, on one connection each.
            #expect(report.attempts >= 6 && report.opened >= 6 && report.loggedIn >= 6)
            #expect(server.statistics.connectionsOpen == 6, "from two source addresses, each client one connection")
            // The exact count, unless a loop stalled long enough to condemn a connection (a loaded machine's
            // late heartbeat ack is a silence, and the client dials again: a failure, another attempt).
            NetworkTest.ifNoStall(of: group, in: "attemptsOpensLoginsAndHeartbeatsAreCounted") {
                #expect(report.attempts == 6 && report.opened == 6 && report.loggedIn == 6)
                #expect(report.failures.isEmpty)
                #expect(report.tcpConnect.count == 6 && report.login.count == 6)
                #expect(report.openPeak == 6)
            }
            for client in clients { await client.shutdown() }
            await transport.close()
            await server.shutdown()
        }
    }

    /// Each failure in its place: nothing listening (refused), a full admission bucket (busy), a wrong token
    /// (auth), an address this machine does not have (other).
    @Test func failuresAreSortedByCause() async throws {
        try await NetworkTest.withGroup { group in
            var configuration = NetworkServer.Configuration(dialect: .zego, auth: ["alice": "right", "bob": "his"])
            configuration.policy = ServerPolicy(admission: AdmissionPolicy(rate: 0.001, burst: 1))
            let (server, address) = try await NetworkTest.server(on: group, configuration)
            let statistics = ConnectionStatistics(origin: group.now)
            let transport = try TCPClientTransport(
                servers: [address],
                dialect: .zego,
                configuration: .init(observer: statistics)
            )
            let alice = Self.client("alice", on: group, transport: transport)
            let bob = Self.client("bob", on: group, transport: transport)
            // Alice takes the bucket's one token with a wrong token: refused for good.
            #expect(await alice.loginRoom("room-1", config: ZegoRoomConfig(token: "wrong")) == .success)
            try await NetworkTest.until("alice is refused") { statistics.tally(end: 1).failures["auth"] == 1 }
            // Bob finds the bucket empty: busy.
            #expect(await bob.loginRoom("room-1", config: ZegoRoomConfig(token: "his")) == .success)
            try await NetworkTest.until("bob is answered busy") {
                (statistics.tally(end: 1).failures["busy"] ?? 0) >= 1
            }
            await alice.shutdown()
            await bob.shutdown()
            await transport.close()
            await server.shutdown()

            // Nothing listens on the port any more.
            let refusedStatistics = ConnectionStatistics(origin: group.now)
            let refusedTransport = try TCPClientTransport(
                servers: [address],
                dialect: .zego,
                configuration: .init(observer: refusedStatistics)
            )
            let carol = Self.client("carol", on: group, transport: refusedTransport)
            #expect(await carol.loginRoom("room-1") == .success)
            try await NetworkTest.until("carol's connection is refused") {
                (refusedStatistics.tally(end: 1).failures["refused"] ?? 0) >= 1
            }
            await carol.shutdown()
            await refusedTransport.close()

            // A source address this machine does not have.
            let otherStatistics = ConnectionStatistics(origin: group.now)
            let otherTransport = try TCPClientTransport(
                servers: [address],
                dialect: .zego,
                configuration: .init(sourceAddresses: ["192.0.2.1"], observer: otherStatistics)
            )
            let dave = Self.client("dave", on: group, transport: otherTransport)
            #expect(await dave.loginRoom("room-1") == .success)
            try await NetworkTest.until("dave's connection cannot be made") {
                (otherStatistics.tally(end: 1).failures["other"] ?? 0) >= 1
            }
            await dave.shutdown()
            await otherTransport.close()
        }
    }

    /// A load against a real server with a population login window keeps its generator's timer lateness after the
    /// fill apart, and judges it (`keptUpAfterFill`) beside the whole run's `keptUp`. Only that both are there is
    /// asserted, never their values: how late timers run is the machine's. A loop stalled for longer than an attempt's
    /// timeout fails attempts for real, and a starved run may log no one in and never fill
    /// (``NetworkTest/storyStands(of:proxy:in:)``): then only that every client tried and the whole run was judged.
    @Test func aLoadKeepsItsTimerLatenessAfterTheFillApart() async throws {
        let scenario = try Scenario(
            json: Data(
                #"""
                { "population": { "clients": 20, "rooms": 2 }, "network": { "latency": "0" },
                  "timeline": [ { "at": "0s", "user": "*", "action": "login", "over": "2s" } ], "end": "40s" }
                """#.utf8
            )
        )
        let (report, storyStands) = try await NetworkTest.withGroup { group in
            try NetworkTest.watchStalls(of: group)
            let (server, address) = try await NetworkTest.server(on: group)
            var runner = try ScenarioRunner(scenario: scenario)
            try runner.playAgainst(TCPServerTarget(servers: [address]), on: group)
            let report = try await runner.run(on: group, events: nil)
            await server.shutdown()
            return (report, NetworkTest.storyStands(of: group, in: "aLoadKeepsItsTimerLatenessAfterTheFillApart"))
        }
        let connections = try #require(report.connections)
        #expect(connections.attempts >= 20)
        #expect(report.keptUp != nil)
        guard storyStands else { return }
        #expect(connections.loggedIn >= 20)
        #expect(connections.steadyFrom != nil)
        let steady = try #require(connections.steadyTimerLateness)
        #expect(steady.count > 0 && steady.count < (report.timerLateness?.count ?? 0))
        #expect(report.keptUpAfterFill != nil && report.keptUp != nil)
    }
}
