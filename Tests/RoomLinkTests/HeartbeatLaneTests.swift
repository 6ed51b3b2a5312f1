import RoomLink
@_spi(RoomLinkInternals) import RoomLinkRuntime
import RoomLinkTestSupport
import Synchronization
import Testing

@testable import RoomLinkEngine

/// Heartbeats in a simulation ride one lane per interval, not a periodic timer each: a client that stops beating and
/// starts again beats once per period from its new start — its old beat gone, never two at once.
@Suite(.hangLimit(minutes: 10))
struct HeartbeatLaneTests {
    /// The simulated network, noting when each client's heartbeats leave.
    final class CountingTransport: InProcessTransport {
        let network: SimulatedNetwork
        let beats = Mutex<[String: [RuntimeInstant]]>([:])

        init(_ network: SimulatedNetwork) { self.network = network }

        /// Notes when `message` leaves `client`, if it is a heartbeat.
        private func note(_ message: ClientMessage, from client: any ClientEndpoint) {
            guard case .heartbeat = message else { return }
            let now = client.loop.now
            beats.withLock { $0[client.endpointID, default: []].append(now) }
        }

        func open(toRoom roomID: String, for client: any ClientEndpoint) -> (any RoomChannel)? {
            network.open(toRoom: roomID, for: client)
        }

        func send(
            _ message: ClientMessage,
            on channel: any RoomChannel,
            from client: any ClientEndpoint
        )
            -> SendOutcome
        {
            note(message, from: client)
            return network.send(message, on: channel, from: client)
        }

        /// The engine's clients send here (a wrapper of the in-process network carries them as it does).
        func send(
            _ message: ClientMessage,
            on channel: any RoomChannel,
            from client: any InProcessClient
        )
            -> SendOutcome
        {
            note(message, from: client)
            return network.send(message, on: channel, from: client)
        }

        func closed(_ channel: any RoomChannel, session: SessionID, from client: any ClientEndpoint) {
            network.closed(channel, session: session, from: client)
        }

        func abandon(_ channel: any RoomChannel, from client: any ClientEndpoint) {
            network.abandon(channel, from: client)
        }

        func carry(_ message: ServerMessage, from room: any RoomEndpoint, to client: any InProcessClient) {
            network.carry(message, from: room, to: client)
        }
        func closed(_ channel: any RoomChannel, session: SessionID, from client: any InProcessClient) {
            network.closed(channel, session: session, from: client)
        }
    }

    /// A server on `simulation` behind a network of 50 ms each way, and an environment of ZEGO clients beating every
    /// second, whose heartbeats the transport notes.
    static func world(
        on simulation: SimulationRuntime
    ) -> (server: RoomServer, transport: CountingTransport, environment: ZegoClient.Environment) {
        let network = SimulatedNetwork(conditions: .init(latency: .milliseconds(50)), seed: 1)
        let server = RoomServer(group: simulation, transport: network)
        let transport = CountingTransport(network)
        let timings = ZegoTimings(heartbeatInterval: .seconds(1))
        return (server, transport, ZegoClient.Environment(transport: transport, timings: timings))
    }

    @Test
    func aClientThatStopsBeatingAndStartsAgainBeatsOncePerPeriodFromItsNewStart() async throws {
        try await SimulationRuntime.withSimulation(seed: 1) { simulation in
            let (server, transport, environment) = Self.world(on: simulation)
            try await simulation.run {
                let steady = ZegoClient(id: "steady", loop: simulation, environment: environment)
                let back = ZegoClient(id: "back", loop: simulation, environment: environment)
                await steady.loginRoom("r1")
                await back.loginRoom("r1")
                try await simulation.sleep(until: .zero.advanced(by: .milliseconds(5_200)))
                await back.logoutRoom("r1")
                try await simulation.sleep(until: .zero.advanced(by: .milliseconds(7_500)))
                await back.loginRoom("r1")
                try await simulation.sleep(until: .zero.advanced(by: .seconds(12)))
                _ = server
            }
            let beats = transport.beats.withLock { $0 }
            func gaps(_ client: String) -> [Duration] {
                let times = beats[client] ?? []
                return zip(times, times.dropFirst()).map { $0.duration(to: $1) }
            }
            // Joined at 100 ms (two trips of 50 ms): a beat every second from 1.1 s to 11.1 s.
            #expect(beats["steady"]?.count == 11)
            #expect(gaps("steady").allSatisfy { $0 == .seconds(1) })
            // Beats at 1.1 … 5.1 s; logged out at 5.2 s, so at 6.1 s, in no room, it stops beating; back in at 7.6 s,
            // it beats at 8.6 … 11.6 s.
            #expect(beats["back"]?.count == 9, "\(beats["back"] ?? [])")
            let backGaps = gaps("back")
            #expect(backGaps.filter { $0 != .seconds(1) } == [.milliseconds(3_500)], "\(backGaps)")
        }
    }

    /// A client is the handler of every timer it arms, and the handle says which one fired: a handle that is none of
    /// its timers does nothing — not a heartbeat (which it was when a client's only timer of its own was its
    /// heartbeat).
    @Test
    func aTimerHandleThatIsNoneOfTheClientsTimersIsIgnored() async throws {
        try await SimulationRuntime.withSimulation(seed: 1) { simulation in
            let (server, transport, environment) = Self.world(on: simulation)
            try await simulation.run {
                let client = ZegoClient(id: "c", loop: simulation, environment: environment)
                await client.loginRoom("r1")
                for (index, raw) in [UInt64(0x7777_0000_0001), 1, UInt64.max].enumerated() {
                    try simulation.schedule(at: .zero.advanced(by: .milliseconds(1_500 + 1_000 * index))) {
                        client.timerFired(TimerHandle(rawValue: raw))
                    }
                }
                try await simulation.sleep(until: .zero.advanced(by: .seconds(6)))
                _ = server
            }
            // Joined at 100 ms: beats at 1.1 … 5.1 s, a second apart, and no other.
            let beats = transport.beats.withLock { $0["c"] ?? [] }
            #expect(beats.count == 5, "\(beats)")
            #expect(zip(beats, beats.dropFirst()).allSatisfy { $0.duration(to: $1) == .seconds(1) })
        }
    }

    /// Clients of one environment on one simulation, then on another after the first has ended: each simulation
    /// gets a lane of its own (the first one's, handed out again, would belong to a simulation that is over).
    @Test func oneEnvironmentBeatsOnASimulationAfterAnotherEnded() async throws {
        let network = SimulatedNetwork(conditions: .init(latency: .milliseconds(50)), seed: 1)
        let transport = CountingTransport(network)
        let environment = ZegoClient.Environment(
            transport: transport,
            timings: ZegoTimings(heartbeatInterval: .seconds(1))
        )
        for name in ["first", "second"] {
            try await SimulationRuntime.withSimulation(seed: 1) { simulation in
                let server = RoomServer(group: simulation, transport: network)
                try await simulation.run {
                    let client = ZegoClient(id: name, loop: simulation, environment: environment)
                    await client.loginRoom("r1")
                    // Its heartbeats ride this simulation's lane, not the ended one's.
                    let lane = simulation.heartbeatBatch(every: .seconds(1)) as? SimulationLane<BatchedHeartbeat>
                    #expect(lane?.loop as? SimulationRuntime === simulation)
                    try await simulation.sleep(until: .zero.advanced(by: .milliseconds(3_500)))
                    await client.logoutRoom("r1")
                    _ = server
                }
            }
        }
        let beats = transport.beats.withLock { $0 }
        // A beat a second from its login, three before the logout at 3.5 s — on each simulation's clock alike.
        let first = beats["first"] ?? []
        #expect(first.count == 3)
        #expect(zip(first, first.dropFirst()).allSatisfy { $0.duration(to: $1) == .seconds(1) })
        #expect(beats["second"] == first)
    }
}
