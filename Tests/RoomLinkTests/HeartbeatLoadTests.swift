import RoomLink
import RoomLinkTestSupport
import Testing

// A limit to catch hangs, not to time anything: ThreadSanitizer on two shared cores runs these several times slower.
@Suite(.hangLimit(minutes: 10))
struct HeartbeatLoadTests {
    @Test
    func inVirtualTimeEveryBeatDueBeforeTheEndFiresOnTime() async throws {
        // 100 clients, first beats spread over 5–10 s, every 5 s until 60 s: client i beats at
        // 5 s + 5 s × i/100 + k × 5 s < 60 s, which is 11 beats for each client.
        let load = try HeartbeatLoad(clients: 100, period: .seconds(5), duration: .seconds(60))
        let report = try await SimulationRuntime.withSimulation(seed: 1) { try await load.run(on: $0) }
        #expect(report.expectedFires == 1_100)
        #expect(report.fires == 1_100)
        #expect(report.latenessMaxMilliseconds == 0, "virtual time is never late")
        #expect(report.scenarioSeconds == 60 && report.loops == 1)
    }

    @Test
    func badArgumentsNameTheField() {
        for (make, field) in [
            ({ try HeartbeatLoad(clients: 0, duration: .seconds(60)) }, "clients"),
            ({ try HeartbeatLoad(clients: 1, period: .zero, duration: .seconds(60)) }, "period"),
            ({ try HeartbeatLoad(clients: 1, period: .seconds(5), duration: .seconds(5)) }, "duration"),
        ] as [(() throws -> HeartbeatLoad, String)] {
            let error = #expect(throws: RoomLinkError.self) { try make() }
            #expect(error?.message.hasPrefix(field + ":") == true)
        }
    }
}
