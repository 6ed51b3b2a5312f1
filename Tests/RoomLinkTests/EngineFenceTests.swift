import Foundation
import RoomLinkFenceChecks
import RoomLinkRuntime
import RoomLinkTestSupport
import Testing

@testable import RoomLink
@testable import RoomLinkEngine

/// The invariants of the storage types the engine's speed lives in (`UnretainedReference`, `LoopPinnedActor.loopEntry`,
/// `ParallelArrayAddresses`), each kept by the engine's own owner of it. The memory invariants are `FenceChecks`,
/// which CI also runs in a process built with AddressSanitizer (`roomlink-fence-checks`), where a broken promise — an
/// owner that lets go of an object its unretained reference still names — is a heap use-after-free report; here they
/// run in the plain and ThreadSanitizer suites. A loop entry's thread is checked here, in processes of their own.
@Suite(.hangLimit(minutes: 10))
struct EngineFenceTests {
    @Test(arguments: FenceChecks.all.filter { !$0.simulatesTraffic })
    func theInvariantHolds(_ check: FenceChecks.Check) async throws {
        try await check.run()
    }

    /// The checks that play clients' traffic in a simulation: one thread, nothing for ThreadSanitizer (AddressSanitizer
    /// runs them in `roomlink-fence-checks`).
    @Test(
        .enabled(if: !Sanitizers.threadSanitizerIsOn, "a simulation plays on one thread"),
        arguments: FenceChecks.all.filter(\.simulatesTraffic)
    )
    func theInvariantHoldsUnderTraffic(_ check: FenceChecks.Check) async throws {
        try await check.run()
    }

    /// A loop entry called off its actor's loop's thread stops the process at the caller's check — the room's
    /// `deliver` — before the isolated code runs on a thread that is not the room's.
    @Test
    func aRoomCalledOffItsLoopsThreadStopsTheProcess() async {
        await #expect(processExitsWith: .failure) {
            await SimulationRuntime.withSimulation(seed: 1) { simulation in
                let network = SimulatedNetwork()
                let server = RoomServer(group: simulation, transport: network)
                let room = server.serverRoom("r")
                // This test's thread is not the simulation's.
                room.deliver(.heartbeat(userID: "u", session: SessionID(rawValue: 1)), on: RemoteMemberChannel.shared)
            }
        }
    }

    /// The same for a client: a timer's entry off the client's loop's thread stops the process.
    @Test
    func aClientEnteredOffItsLoopsThreadStopsTheProcess() async {
        await #expect(processExitsWith: .failure) {
            await SimulationRuntime.withSimulation(seed: 1) { simulation in
                let client = ZegoClient(
                    id: "c",
                    loop: simulation,
                    environment: ZegoClient.Environment(transport: SimulatedNetwork())
                )
                client.timerFired(TimerHandle(packed: 1)!)
            }
        }
    }
}
