import RoomLink
import RoomLinkRuntime
import RoomLinkTestSupport
import Testing

/// ZEGO's calls through the embedding API, in virtual time: the error codes of refused calls, member caps, login
/// timeouts, kicks, tokens, switchRoom, multi-room logout, and the event stream.
@Suite(.hangLimit(minutes: 10))
struct ZegoClientTests {
    /// A server, a simulated network and a shared sink on one simulation.
    struct World {
        let simulation: SimulationRuntime
        let network: SimulatedNetwork
        let server: RoomServer
        let environment: ZegoClient.Environment
        let events = EventCollector()

        init(simulation: SimulationRuntime, auth: AuthTable? = nil, timings: ZegoTimings = .default) {
            self.simulation = simulation
            network = SimulatedNetwork(conditions: .init(latency: .milliseconds(50)), seed: 1)
            server = RoomServer(group: simulation, transport: network, timings: timings.server, auth: auth)
            environment = ZegoClient.Environment(transport: network, timings: timings, sink: events.typed())
        }

        func client(_ id: String, userID: String? = nil, mode: Scenario.RoomMode = .single) -> ZegoClient {
            ZegoClient(id: id, userID: userID, roomMode: mode, loop: simulation, environment: environment)
        }
    }

    /// Runs `body` on a fresh simulation with a world.
    static func withWorld(
        auth: AuthTable? = nil,
        _ body: @escaping @Sendable (World) async throws -> Void
    ) async throws {
        try await SimulationRuntime.withSimulation(seed: 1) { simulation in
            let world = World(simulation: simulation, auth: auth)
            try await simulation.run { try await body(world) }
        }
    }

    @Test
    func anEmptyRoomIDFailsWith1002011() async throws {
        try await Self.withWorld { world in
            let a = world.client("A")
            #expect(await a.loginRoom("") == .roomIDEmpty)
            #expect(world.events.lines == ["0 A  loginFailed 1002011"])
            #expect(await a.roomIDs.isEmpty)
        }
    }

    @Test
    func singleRoomModeRefusesASecondRoomAndTheSameRoomTwice() async throws {
        try await Self.withWorld { world in
            let a = world.client("A")
            #expect(await a.loginRoom("r1") == .success)
            #expect(await a.loginRoom("r1") == .roomCountExceeded, "already logging in to r1: the call fails")
            #expect(await a.loginRoom("r2") == .roomCountExceeded)
            try await world.simulation.sleep(for: .seconds(1))
            #expect(world.events.lines == ["0 A r1 logining 0", "0 A r2 loginFailed 1002001", "120 A r1 logined 0"])
        }
    }

    @Test
    func multiRoomModeJoinsSeveralRoomsAndRefusesToLeaveAnUnknownOne() async throws {
        try await Self.withWorld { world in
            let m = world.client("M", mode: .multi)
            await m.loginRoom("r1")
            await m.loginRoom("r2")
            try await world.simulation.sleep(for: .seconds(1))
            #expect(await m.logoutRoom("r9") == .userNotInRoom)
            #expect(await m.switchRoom(from: "r9", to: "r3") == .userNotInRoom)
            await m.logoutRoom()
            #expect(await m.roomIDs.isEmpty)
            #expect(
                world.events.lines == [
                    "0 M r1 logining 0", "0 M r2 logining 0", "120 M r1 logined 0", "120 M r2 logined 0",
                    "1000 M r9 logoutFailed 1002002", "1000 M r9 logoutFailed 1002002", "1000 M r1 logout 0",
                    "1000 M r2 logout 0",
                ]
            )
        }
    }

    @Test
    func switchRoomLeavesOneRoomAndJoinsTheOtherAndPeersOfBothSeeIt() async throws {
        try await Self.withWorld { world in
            let a = world.client("A")
            let b = world.client("B")
            let c = world.client("C")
            await b.loginRoom("r1", config: ZegoRoomConfig(isUserStatusNotify: true))
            await c.loginRoom("r2", config: ZegoRoomConfig(isUserStatusNotify: true))
            await a.loginRoom("r1")
            try await world.simulation.sleep(for: .seconds(10))
            #expect(await a.switchRoom(from: "r1", to: "r2") == .success)
            try await world.simulation.sleep(for: .seconds(1))
            #expect(await a.roomIDs == ["r2"])
            #expect(
                world.events.lines(of: "A") == [
                    "0 A r1 logining 0", "120 A r1 logined 0", "10000 A r1 logout 0", "10000 A r2 logining 0",
                    "10120 A r2 logined 0",
                ]
            )
            #expect(world.events.lines(of: "B").suffix(1) == ["10200 B r1 delete A"])
            #expect(world.events.lines(of: "C").suffix(1) == ["10220 C r2 add A"])
        }
    }

    @Test
    func theFirstMemberSetsTheCapAndTheNextLoginOverItFailsWith1002034() async throws {
        try await Self.withWorld { world in
            await world.client("A").loginRoom("r1", config: ZegoRoomConfig(maxMemberCount: 2))
            try await world.simulation.sleep(for: .seconds(1))
            await world.client("B").loginRoom("r1")
            try await world.simulation.sleep(for: .seconds(1))
            await world.client("C").loginRoom("r1", config: ZegoRoomConfig(maxMemberCount: 10))
            try await world.simulation.sleep(for: .seconds(1))
            #expect(world.events.lines(of: "C") == ["2000 C r1 logining 0", "2120 C r1 loginFailed 1002034"])
            #expect(await world.server.serverRoom("r1").memberIDs == ["A", "B"])
        }
    }

    @Test
    func aLoginThatCannotReachTheServerFailsAtTheLoginTimeoutWith1002053() async throws {
        try await Self.withWorld { world in
            let a = world.client("A")
            world.network.setLink(.down, for: a)
            await a.loginRoom("r1")
            try await world.simulation.sleep(for: .seconds(40))
            #expect(world.events.lines == ["0 A r1 logining 0", "30000 A r1 loginFailed 1002053"])
        }
    }

    @Test
    func aLoginRetriesWhileTheNetworkIsDownAndSucceedsWhenItReturns() async throws {
        try await Self.withWorld { world in
            let a = world.client("A")
            world.network.setLink(.down, for: a)
            await a.loginRoom("r1")
            try await world.simulation.sleep(for: .seconds(5))
            world.network.setLink(.up, for: a)
            try await world.simulation.sleep(for: .seconds(5))
            #expect(world.events.lines == ["0 A r1 logining 0", "5120 A r1 logined 0"])
        }
    }

    @Test
    func theNewerLoginOfAUserWinsAndTheOlderDeviceIsKickedWith1002050() async throws {
        try await Self.withWorld { world in
            let phone = world.client("A-phone", userID: "A")
            let tablet = world.client("A-tablet", userID: "A")
            let b = world.client("B")
            await b.loginRoom("r1", config: ZegoRoomConfig(isUserStatusNotify: true))
            await phone.loginRoom("r1")
            try await world.simulation.sleep(for: .seconds(10))
            await tablet.loginRoom("r1")
            try await world.simulation.sleep(for: .seconds(100))
            #expect(world.events.lines(of: "A-phone").last == "10120 A-phone r1 kickOut 1002050")
            #expect(world.events.lines(of: "A-tablet").last == "10120 A-tablet r1 logined 0")
            #expect(world.events.lines(of: "B") == ["0 B r1 logining 0", "120 B r1 logined 0", "220 B r1 add A"])
            #expect(await phone.roomIDs.isEmpty, "a kicked client does not reconnect")
        }
    }

    @Test
    func anAdminKickEndsTheSessionWith1002055AndPeersSeeTheUserLeave() async throws {
        try await Self.withWorld { world in
            let a = world.client("A")
            let b = world.client("B")
            await b.loginRoom("r1", config: ZegoRoomConfig(isUserStatusNotify: true))
            await a.loginRoom("r1")
            try await world.simulation.sleep(for: .seconds(10))
            world.server.kickOut(roomID: "r1", userIDs: ["A"])
            try await world.simulation.sleep(for: .seconds(200))
            #expect(world.events.lines(of: "A").last == "10050 A r1 kickOut 1002055")
            #expect(world.events.lines(of: "B").last == "10150 B r1 delete A")
            #expect(await a.roomIDs.isEmpty)
        }
    }

    @Test
    func aWrongTokenFailsWith1002033AndAnExpiredOneKicksWith1002056UnlessRenewed() async throws {
        try await Self.withWorld(auth: AuthTable(tokens: ["A": ["a1"], "B": ["b1", "b2"], "C": ["c1"]])) { world in
            let a = world.client("A")
            let b = world.client("B")
            let c = world.client("C")
            await a.loginRoom("r1", config: ZegoRoomConfig(token: "a1"))
            await b.loginRoom("r1", config: ZegoRoomConfig(token: "b1"))
            await c.loginRoom("r1", config: ZegoRoomConfig(token: "wrong"))
            try await world.simulation.sleep(for: .seconds(10))
            world.server.expireToken(userID: "A")
            world.server.expireToken(userID: "B")
            try await world.simulation.sleep(for: .seconds(10))
            #expect(await b.renewToken("b2", roomID: "r1") == .success)
            #expect(await c.renewToken("c2", roomID: "r1") == .userNotInRoom)
            try await world.simulation.sleep(for: .seconds(60))
            await a.loginRoom("r1", config: ZegoRoomConfig(token: "a1"))
            try await world.simulation.sleep(for: .seconds(1))
            #expect(world.events.lines(of: "C") == ["0 C r1 logining 0", "120 C r1 loginFailed 1002033"])
            #expect(
                world.events.lines(of: "A") == [
                    "0 A r1 logining 0", "120 A r1 logined 0", "10050 A r1 tokenWillExpire 30",
                    "40050 A r1 kickOut 1002056", "80000 A r1 logining 0", "80120 A r1 loginFailed 1002033",
                ]
            )
            #expect(
                world.events.lines(of: "B") == [
                    "0 B r1 logining 0", "120 B r1 logined 0", "10050 B r1 tokenWillExpire 30",
                ],
                "B renewed in time and stays"
            )
            #expect(await b.roomIDs == ["r1"])
        }
    }

    @Test
    func theStreamDeliversStampedEventsInOrderAndEndsAtShutdown() async throws {
        try await Self.withWorld { world in
            let a = world.client("A")
            let stream = await a.events()
            await a.loginRoom("r1")
            try await world.simulation.sleep(for: .seconds(1))
            world.network.setLink(.down, for: a)
            world.network.setLink(.up, for: a)
            try await world.simulation.sleep(for: .seconds(1))
            await a.shutdown()
            var seen: [Stamped<ZegoEvent>] = []
            for await event in stream { seen.append(event) }
            #expect(seen.map(\.sequence) == [0, 1, 2, 3])
            #expect(seen.map(\.time.milliseconds) == [0, 120, 1000, 1120])
            #expect(seen.map(\.event.eventLogLine) == world.events.entries.map(\.line), "the sink saw the same events")
            #expect(await a.loginRoom("r1") == .roomCountExceeded, "a shut-down client refuses calls")
        }
    }

    @Test
    func aKickThatNeverReachedTheClientIsRepeatedWhenItComesBack() async throws {
        try await Self.withWorld { world in
            let a = world.client("A")
            let c = world.client("C")
            await a.loginRoom("r1")
            await c.loginRoom("r1")
            try await world.simulation.sleep(for: .seconds(61))
            world.network.setLink(.blackhole, for: a)  // A does not know, and misses the kick
            world.network.setLink(.down, for: c)  // C reconnects when its network returns
            try await world.simulation.sleep(for: .seconds(9))
            world.server.kickOut(roomID: "r1", userIDs: ["A", "C"])
            try await world.simulation.sleep(for: .seconds(10))
            world.network.setLink(.up, for: a)
            world.network.setLink(.up, for: c)
            try await world.simulation.sleep(for: .seconds(60))
            // A's 90.12 s heartbeat (29.9 s after the last answer: not yet silent) is answered by the kick; C, back
            // at 80 s, reconnects and is answered by it.
            #expect(world.events.lines(of: "A").suffix(2) == ["120 A r1 logined 0", "90220 A r1 kickOut 1002055"])
            #expect(
                world.events.lines(of: "C").suffix(2) == [
                    "61000 C r1 reconnecting 1002051", "80120 C r1 kickOut 1002055",
                ]
            )
            #expect(await world.server.serverRoom("r1").memberIDs.isEmpty)
        }
    }
}
