import Foundation
import RoomLink
import RoomLinkRuntime
import RoomLinkTestSupport
import Testing

@testable import RoomLinkScenarios

/// What one shard's world of a run holds: the clients it makes, and which participants it says it runs.
@Suite(.hangLimit(minutes: 10))
struct ScenarioWorldTests {
    /// A population of 1,000 in 37 rooms, after two named users, on an unlimited server or a modelled one (whose
    /// rooms go to shards by node, not by index).
    static func scenario(modelled: Bool) throws -> Scenario {
        let server = modelled ? #""server": { "nodes": 3, "capacity": "workers=4,login=2ms" },"# : ""
        let json = """
            {
              "dialect": "zego",
              "seed": 5,
              \(server)
              "users": [ { "id": "A" }, { "id": "B" } ],
              "population": { "clients": 1000, "rooms": 37 },
              "timeline": [ { "at": "0s", "user": "*", "action": "login", "over": "10s" } ],
              "end": "1m"
            }
            """
        return try Scenario(json: Data(json.utf8))
    }

    /// A timeline cursor skips the participants another shard runs by their index alone; that answer is the one the
    /// world's own clients give, on every shard of every split, and the shards' clients together are everyone.
    @Test(arguments: [1, 2, 3])
    func aWorldRunsExactlyTheParticipantsItMadeClientsFor(shards: Int) async throws {
        for modelled in [false, true] {
            let scenario = try Self.scenario(modelled: modelled)
            await SimulationRuntime.withSimulation(seed: 1) { simulation in
                var everyone: [Int] = []
                for shard in 0..<shards {
                    let world = ScenarioWorld<Zego>(
                        scenario: scenario,
                        group: simulation,
                        forward: nil,
                        statistics: nil,
                        network: ScenarioRunner.simulatedNetwork,
                        shard: shard,
                        of: shards
                    )
                    let made = world.clients.indices.filter { world.clients[$0] != nil }
                    #expect(world.clients.indices.filter { world.runs($0) } == made, "shard \(shard) of \(shards)")
                    #expect(world.clients.count == 1_002)
                    #expect(world.clientCount == made.count)
                    for index in made {
                        let expected = index < 2 ? ["A", "B"][index] : Scenario.Population.userName(index - 2)
                        #expect(world.clients[index]?.endpointID == expected)
                    }
                    everyone += made
                }
                #expect(everyone.sorted() == Array(0..<1_002), "every participant is some shard's, once")
            }
        }
    }
}
