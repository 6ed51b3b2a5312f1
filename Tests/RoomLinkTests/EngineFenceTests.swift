import Foundation
import RoomLinkRuntime
import Testing

@testable import RoomLink
@testable import RoomLinkEngine

/// The invariants of the storage types the engine's speed lives in (`UnretainedReference`, `LoopPinnedActor.loopEntry`,
/// `ParallelArrayAddresses`), each kept by the engine's own owner of it. Run under AddressSanitizer (`swift test
/// --sanitize=address`), a broken promise — an owner that lets go of an object its unretained reference still
/// names — is a heap use-after-free report, and the test fails; in a plain build it reads freed memory.
@Suite(.timeLimit(.minutes(2)))
struct EngineFenceTests {
    /// A client transport that is never asked anything.
    final class Idle: ClientTransport {
        func open(toRoom roomID: String, for client: any ClientEndpoint) -> (any RoomChannel)? { nil }
        func send(
            _ message: ClientMessage,
            on channel: any RoomChannel,
            from client: any ClientEndpoint
        )
            -> SendOutcome
        { .refused }
        func closed(_ channel: any RoomChannel, session: SessionID, from client: any ClientEndpoint) {}
        func abandon(_ channel: any RoomChannel, from client: any ClientEndpoint) {}
    }

    /// The environment owns the dialect's entry points its unretained reference names: with every other reference
    /// to the environment's parts gone, each client still enters the engine through it — a login, a timer — and the
    /// entry point is the dialect's.
    @Test
    func anEnvironmentKeepsTheEntryPointsItsClientsReachUnretained() async throws {
        try await SimulationRuntime.withSimulation(seed: 3) { simulation in
            try await simulation.run {
                var clients: [ZegoClient] = []
                do {
                    // The environment is made in a scope of its own: the clients hold it, nothing else does.
                    let environment = ZegoClient.Environment(transport: Idle())
                    for index in 0..<50 {
                        clients.append(ZegoClient(id: "c\(index)", loop: simulation, environment: environment))
                    }
                }
                for client in clients { #expect(await client.loginRoom("r") == .success) }
                // The logins are refused by the idle transport and retried by timers: every retry enters the engine
                // through the environment's unretained entry points.
                try await simulation.sleep(for: .seconds(30))
                for client in clients {
                    #expect(await client.phase(of: "r") != nil)
                    await client.shutdown()
                }
            }
        }
    }

    /// An interned retry policy is never freed: rules made from one policy share one object, which outlives every
    /// rules value that named it.
    @Test
    func anInternedRetryPolicyOutlivesEveryRulesValue() throws {
        let policy = try RetryPolicy(
            schedule: .exponential(base: .milliseconds(123), cap: .seconds(7), multiplier: 2, jitter: .none),
            maxAttempts: 9
        )
        var identity: ObjectIdentifier?
        do {
            let rules = RoomClientState.Rules(Zego.self, timings: ZegoTimings.default.engine, retryPolicy: policy)
            identity = rules.sharedRetryPolicy.withObject { ObjectIdentifier($0) }
        }
        let again = RoomClientState.Rules(Zego.self, timings: ZegoTimings.default.engine, retryPolicy: policy)
        #expect(again.sharedRetryPolicy.withObject { ObjectIdentifier($0) } == identity)
        #expect(again.retryPolicy == policy)
        #expect(again.sharedRetryPolicy.object.policy == policy)
    }

    /// The notes follow both arrays as they grow and shrink, and a prefetch of a stale note — the arrays moved and
    /// freed — reads nothing (AddressSanitizer sees no access).
    @Test
    func parallelArrayAddressesFollowTheArraysAndAStaleOneIsHarmless() {
        var keys: [String] = []
        var records: [UInt64] = []
        var addresses = ParallelArrayAddresses<String, UInt64>()
        #expect(addresses.noted == [0, 0])
        addresses.prefetch(slot: 0)  // nothing noted: nothing loaded
        for index in 0..<1_000 {
            keys.append("user-\(index)")
            records.append(UInt64(index))
            addresses.note(keys, records)
            #expect(addresses.noted == ParallelArrayAddresses.addresses(of: keys, records))
            #expect(!addresses.noted.contains(0))
            addresses.prefetch(slot: Int32(index))
        }
        let stale = addresses
        keys = []
        records = []  // the noted storage is freed
        stale.prefetch(slot: 500)
        stale.prefetch(slot: 1_000_000)  // far past the end
        addresses.note(keys, records)
        #expect(addresses.noted != stale.noted)
    }

    /// A loop entry called off its actor's loop's thread stops the process at the caller's check — the room's
    /// `deliver` — before the isolated code runs on a thread that is not the room's.
    @Test
    func aRoomCalledOffItsLoopsThreadStopsTheProcess() async {
        await #expect(processExitsWith: .failure) {
            try await SimulationRuntime.withSimulation(seed: 1) { simulation in
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
            try await SimulationRuntime.withSimulation(seed: 1) { simulation in
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
