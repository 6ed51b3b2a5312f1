import RoomLinkTestSupport
import Testing

@_spi(RoomLinkInternals) @testable import RoomLinkRuntime

/// `LoopPinnedActor` on the simulation: the same contract as on a libevent loop, in virtual time.
@Suite(.hangLimit(minutes: 10))
struct LoopPinnedActorSimulationTests {
    /// Three timer firings each enter the actor twice, in order, on the simulation's thread, at their virtual times.
    @Test
    func onLoopEntersTheActorFromTheSimulationsThread() async throws {
        try await SimulationRuntime.withSimulation(seed: 1) { sim in
            let counter = PinnedCounter(loop: sim)
            let calls = try await sim.run {
                for milliseconds in [1, 2, 3] { try sim.schedule(after: .milliseconds(milliseconds), handler: counter) }
                try await sim.sleep(for: .seconds(1))
                return await counter.calls
            }
            #expect(counter.log.snapshot.order == [3, 6, 9])
            #expect(counter.log.snapshot.times[9] == [.zero.advanced(by: .milliseconds(3))])
            #expect(calls == [2, 1, 2, 1, 2, 1])
        }
    }
}
