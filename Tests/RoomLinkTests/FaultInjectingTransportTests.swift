import RoomLink
import RoomLinkRuntime
import RoomLinkTestSupport
import Testing

/// Faults wrapped around a transport that has none — the seam tests' own `DirectTransport`, as a user's transport
/// would be — in virtual time: a black hole noticed by silence alone, a link down refused and told, latency on every
/// message each way, and a path-aware transport that drops at its own socket.
@Suite(.hangLimit(minutes: 10))
struct FaultInjectingTransportTests {
    typealias DirectTransport = TransportSeamTests.DirectTransport

    /// Runs A and B (told of peers) in room "r" over `faults`, wrapped around `direct`, and hands them to `body`.
    static func withRoom(
        _ direct: DirectTransport,
        _ faults: FaultInjectingTransport,
        _ body: @escaping @Sendable (SimulationRuntime, ZegoClient, ZegoClient, EventCollector) async throws -> Void
    ) async throws {
        try await SimulationRuntime.withSimulation(seed: 1) { simulation in
            let server = RoomServer(group: simulation, transport: direct)
            let events = EventCollector()
            let environment = ZegoClient.Environment(transport: faults, sink: events.typed())
            try await simulation.run {
                let a = ZegoClient(id: "A", loop: simulation, environment: environment)
                let b = ZegoClient(id: "B", loop: simulation, environment: environment)
                await b.loginRoom("r", config: ZegoRoomConfig(isUserStatusNotify: true))
                await a.loginRoom("r")
                try await body(simulation, a, b, events)
                await a.shutdown()
                await b.shutdown()
                _ = server
            }
        }
    }

    /// The position of the first event whose compact form has `text`, if any.
    static func position(of text: String, in events: EventCollector) -> Int? {
        events.entries.map(\.compact).firstIndex { $0.hasSuffix(text) }
    }

    @Test
    func aBlackholeOnAUsersOwnTransportIsNoticedBySilenceAloneAndLiftedBackIn() async throws {
        let direct = DirectTransport()
        let faults = FaultInjectingTransport(wrapping: direct)
        try await Self.withRoom(direct, faults) { simulation, a, _, events in
            try await simulation.sleep(for: .seconds(10))
            faults.setLink(.blackhole, for: a)
            // Nobody is told: A's heartbeats go unanswered until ZEGO's detection, and the room drops A after its
            // heartbeat timeout. Meanwhile none of A's attempts reaches the server.
            try await simulation.sleep(for: .seconds(300))
            #expect(direct.logins.withLock { $0 } == ["B join", "A join"])
            let lost = Self.position(of: "A r reconnecting 1002051", in: events)
            let dropped = Self.position(of: "B r delete A", in: events)
            #expect(lost != nil && dropped != nil)
            faults.setLink(.up, for: a)
            try await simulation.sleep(for: .seconds(120))
            #expect(direct.logins.withLock { $0 }.last == "A reconnect")
            let back = Self.position(of: "A r reconnected 0", in: events)
            let seen = events.entries.map(\.compact).lastIndex { $0.hasSuffix("B r add A") }
            #expect(back != nil && seen != nil && lost! < back! && dropped! < seen!)
        }
    }

    @Test
    func aLinkDownIsToldAtOnceAndRefusesEverySendUntilUp() async throws {
        let direct = DirectTransport()
        let faults = FaultInjectingTransport(wrapping: direct)
        try await Self.withRoom(direct, faults) { simulation, a, _, events in
            try await simulation.sleep(for: .seconds(10))
            faults.setLink(.down, for: a)
            try await simulation.sleep(for: .milliseconds(1))
            // Told at once, not after a detection time.
            #expect(events.entries.map(\.compact).last == "10000 A r reconnecting 1002051")
            #expect(faults.link(of: a) == .down)
            try await simulation.sleep(for: .seconds(60))
            #expect(direct.logins.withLock { $0 } == ["B join", "A join"])
            faults.setLink(.up, for: a)
            try await simulation.sleep(for: .seconds(60))
            #expect(direct.logins.withLock { $0 }.last == "A reconnect")
            #expect(Self.position(of: "A r reconnected 0", in: events) != nil)
        }
    }

    @Test
    func latencyDelaysEveryMessageEachWayAndJitterIsDrawnPerMessage() async throws {
        let direct = DirectTransport()
        let faults = FaultInjectingTransport(wrapping: direct, latency: .milliseconds(100))
        try await Self.withRoom(direct, faults) { simulation, _, _, events in
            try await simulation.sleep(for: .seconds(1))
            // 100 ms on the path and 10 ms in the transport each way, and the server's 20 ms: 240 ms.
            #expect(events.entries.map(\.compact).contains("240 A r logined 0"))
            #expect(events.entries.map(\.compact).contains("240 B r logined 0"))
        }
        let jittery = FaultInjectingTransport(
            wrapping: DirectTransport(),
            latency: .milliseconds(100),
            jitter: .milliseconds(500),
            seed: 7
        )
        let times = try await Self.loginTimes(over: jittery, logins: 20)
        // Never sooner than the path allows, never later than its latency and jitter each way, and drawn anew per
        // message.
        #expect(times.count == 20)
        #expect(times.allSatisfy { $0 >= .milliseconds(240) && $0 <= .milliseconds(1_240) })
        #expect(Set(times).count > 10)
    }

    /// Logs `count` clients into rooms of their own at once over `faults`; returns how long each login took.
    static func loginTimes(over faults: FaultInjectingTransport, logins count: Int) async throws -> [Duration] {
        try await SimulationRuntime.withSimulation(seed: 1) { simulation in
            let server = RoomServer(group: simulation, transport: faults.base as! DirectTransport)
            let events = EventCollector()
            try await simulation.run {
                let environment = ZegoClient.Environment(transport: faults, sink: events.typed())
                let clients = (0..<count).map { ZegoClient(id: "c\($0)", loop: simulation, environment: environment) }
                for (index, client) in clients.enumerated() { await client.loginRoom("r\(index)") }
                try await simulation.sleep(for: .seconds(5))
                for client in clients { await client.shutdown() }
                _ = server
            }
            return events.entries.filter { $0.compact.hasSuffix("logined 0") }.map {
                RuntimeInstant.zero.duration(to: $0.time)
            }
        }
    }

    @Test
    func aPathAwareTransportIsHandedEveryMessageAndAsksThePathPerFrame() async throws {
        let recording = Recording()
        let faults = FaultInjectingTransport(wrapping: recording)
        try await SimulationRuntime.withSimulation(seed: 1) { simulation in
            try await simulation.run {
                let a = ZegoClient(id: "A", loop: simulation, environment: .init(transport: faults))
                await a.loginRoom("r")
                try await simulation.sleep(for: .seconds(1))
                faults.setLink(.blackhole, for: a)
                faults.setPartitioned(true, room: "elsewhere")
                try await simulation.sleep(for: .seconds(30))
                await a.shutdown()
            }
        }
        let sends = recording.sends.withLock { $0 }
        // The login crossed; the retries into the black hole were handed over all the same, each told it is lost.
        #expect(sends.first == true)
        #expect(sends.count > 1 && sends.dropFirst().allSatisfy { !$0 })
        #expect(faults.isPartitioned("elsewhere") && !faults.isPartitioned("r"))
        // What crossed: the one login.
        #expect(faults.deliveredCount == 1)
    }
}

/// A path-aware transport that answers nothing: records what it is handed, and whether the path carried it.
private final class Recording: PathAwareTransport {
    final class Channel: RoomChannel {}

    let sends = LockedBox<[Bool]>([])

    func open(toRoom roomID: String, for client: any ClientEndpoint) -> (any RoomChannel)? { Channel() }

    func send(_ message: ClientMessage, on channel: any RoomChannel, from client: any ClientEndpoint) -> SendOutcome {
        let path = client as? any ClientPath
        sends.withLock { $0.append(path?.carries(room: "r") ?? true) }
        return .sent
    }

    func closed(_ channel: any RoomChannel, session: SessionID, from client: any ClientEndpoint) {}

    func abandon(_ channel: any RoomChannel, from client: any ClientEndpoint) {}
}
