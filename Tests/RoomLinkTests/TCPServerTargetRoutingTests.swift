import Foundation
import Testing

@testable import RoomLink
@testable import RoomLinkScenarios

/// What `roomlink run|load --route` sets on the target reaches the clients' transport (the routing itself is tested
/// where it acts: `ServerRoutingTests`, and with real clients on two nodes in `ClusterPresenceTests`).
struct TCPServerTargetRoutingTests {
    @Test(arguments: ServerRouting.allCases)
    func theTargetsRoutingIsTheTransports(_ routing: ServerRouting) async throws {
        let scenario = try Scenario(
            json: Data(
                #"""
                { "users": [ { "id": "A" } ], "timeline": [ { "at": "0s", "user": "A", "action": "login", "room": "r" } ], "end": "1m" }
                """#.utf8
            )
        )
        try await LibeventLoopGroup.withLoopGroup(configuration: .init(loopCount: 1)) { group in
            let servers = [try SocketAddress(parsing: "127.0.0.1:9"), try SocketAddress(parsing: "127.0.0.1:10")]
            var runner = try ScenarioRunner(scenario: scenario)
            try runner.playAgainst(TCPServerTarget(servers: servers, routing: routing), on: group)
            let plan = ScenarioRunner.NetworkPlan(conditions: scenario.network, seed: scenario.seed, group: group)
            let network = try #require(runner.remote?.network(plan) as? FaultInjectingTransport)
            let transport = try #require(network.base as? TCPClientTransport)
            #expect(transport.configuration.routing == routing)
            #expect(transport.servers == servers)
        }
    }
}
