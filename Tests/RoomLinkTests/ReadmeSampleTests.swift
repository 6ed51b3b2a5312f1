import RoomLink
import RoomLinkTestSupport
import Testing

// The README's "A short sample", verbatim apart from `print` → collecting (DocSampleTests checks that the README
// still shows these lines).

/// What the sample prints: Alice's events and the room's members at the end.
func readmeSample() async throws -> (events: [Stamped<ZegoEvent>], members: [String]) {
    // Virtual time: instant, and the same every run. (LibeventLoopGroup.withLoopGroup runs it in real time.)
    try await SimulationRuntime.withSimulation(seed: 42) { sim in
        try await sim.run {
            let network = SimulatedNetwork(conditions: .init(latency: .milliseconds(50)), seed: 42)
            let server = RoomServer(group: sim, transport: network)
            let environment = ZegoClient.Environment(transport: network)
            let alice = ZegoClient(id: "alice", loop: sim.loop(for: "alice"), environment: environment)
            let bob = ZegoClient(id: "bob", loop: sim.loop(for: "bob"), environment: environment)
            let changes = await alice.events()

            await bob.loginRoom("room-1")
            await alice.loginRoom("room-1")
            try await sim.sleep(for: .seconds(10))
            network.setLink(.down, for: alice)  // the phone loses its network…
            try await sim.sleep(for: .seconds(30))
            network.setLink(.up, for: alice)  // …and finds it again
            try await sim.sleep(for: .seconds(1))
            await alice.shutdown()  // ends the stream

            var seen: [Stamped<ZegoEvent>] = []
            for await change in changes { seen.append(change) }  // README: print(change.time, change.event)
            return (seen, await server.serverRoom("room-1").memberIDs)  // README: print(…)
        }
    }
}

@Suite(.hangLimit(minutes: 10))
struct ReadmeSampleTests {
    @Test
    func theShortSampleReconnectsAliceWithinTheServersTimeout() async throws {
        let (events, members) = try await readmeSample()
        let reasons = events.compactMap { change -> String? in
            guard case .roomStateChanged(_, let reason, _, _) = change.event else { return nil }
            return reason.description
        }
        #expect(reasons == ["logining", "logined", "reconnecting", "reconnected"])
        #expect(events.map(\.time.milliseconds) == [0, 120, 10_000, 40_120], "the times the README's comment gives")
        #expect(members == ["bob", "alice"])
    }
}
