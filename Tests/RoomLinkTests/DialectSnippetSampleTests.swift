import RoomLink
import RoomLinkRuntime
import RoomLinkTestSupport
import Testing

/// The snippet of the Agora and LiveKit clients in the "Embedding the Engine" article, run in virtual time.
@Suite(.hangLimit(minutes: 10))
struct DialectSnippetSampleTests {
    @Test
    func theSnippetRunsAsTheArticleSays() async throws {
        try await SimulationRuntime.withSimulation(seed: 1) { simulation in
            try await simulation.run {
                let group = simulation
                let network = SimulatedNetwork(conditions: .init(latency: .milliseconds(50)), seed: 1)
                let server = RoomServer(group: group, transport: network)
                let token: String? = nil

                let agora = AgoraClient(
                    id: "A",
                    loop: group.loop(for: "A"),
                    environment: AgoraClient.Environment(transport: network)
                )
                #expect(await agora.joinChannel("c1", token: token) == 0)
                let livekit = LiveKitClient(
                    id: "B",
                    loop: group.loop(for: "B"),
                    environment: LiveKitClient.Environment(transport: network)
                )
                try await livekit.connect(to: "r1")
                let changes = await livekit.events()
                try await simulation.sleep(for: .seconds(1))
                #expect(await agora.phase(of: "c1") == .joined)
                #expect(await livekit.connectionState == .connected)
                await livekit.shutdown()
                var seen: [LiveKitEvent] = []
                for await change in changes { seen.append(change.event) }
                #expect(seen == [.connectionStateChanged(room: "r1", state: .connected, from: .connecting)])
                #expect(server.roomCount == 2)
            }
        }
    }
}
