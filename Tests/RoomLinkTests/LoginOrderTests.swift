import RoomLink
import RoomLinkRuntime
import RoomLinkTestSupport
import Testing

/// What a connection sends after its login takes effect after that login, though the server answers a login only
/// after its processing time.
@Suite(.hangLimit(minutes: 10))
struct LoginOrderTests {
    /// A logout that reaches the server while its login is still being processed is handled after that login, so
    /// the member leaves at once — not after a heartbeat timeout, as it would if the logout overtook the login.
    @Test
    func aLogoutRightBehindItsLoginTakesEffectAfterIt() async throws {
        try await SimulationRuntime.withSimulation(seed: 1) { simulation in
            let network = SimulatedNetwork(conditions: .init(latency: .milliseconds(50)), seed: 1)
            let server = RoomServer(group: simulation, transport: network)
            let environment = ZegoClient.Environment(transport: network)
            try await simulation.run {
                let stays = ZegoClient(id: "stays", loop: simulation, environment: environment)
                let leaves = ZegoClient(id: "leaves", loop: simulation, environment: environment)
                await stays.loginRoom("r1")
                await leaves.loginRoom("r1")
                try await simulation.sleep(until: .zero.advanced(by: .milliseconds(5)))
                // The logout arrives at 55 ms, while the login (arrived at 50 ms) is processed until 70 ms.
                await leaves.logoutRoom("r1")
                try await simulation.sleep(until: .zero.advanced(by: .seconds(1)))
                #expect(await server.serverRoom("r1").memberIDs == ["stays"])
                await stays.shutdown()
                await leaves.shutdown()
            }
        }
    }
}
