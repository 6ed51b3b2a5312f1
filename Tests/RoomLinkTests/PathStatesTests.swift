import RoomLink
import RoomLinkEngine
import RoomLinkRuntime
import Synchronization
import Testing

/// Where a transport keeps its clients' link states: in a ``RoomClient`` itself (``ClientEndpoint/_keptLinkState``),
/// read without a lock, and in a table for a client that keeps none — with the same answers either way.
@Suite(.timeLimit(.minutes(10)))
struct PathStatesTests {
    /// A client as a transport sees it, keeping no link state of its own.
    final class Bare: ClientEndpoint {
        let endpointID: String
        let loop: any RuntimeLoop
        var endpointHash: UInt64 { 0 }
        var userID: String { endpointID }

        init(_ id: String, loop: any RuntimeLoop) {
            endpointID = id
            self.loop = loop
        }

        func deliver(_ message: ServerMessage, from room: String) {}
        func linkChanged(to state: LinkState) {}
        func connectionChanged(_ event: ConnectionEvent, room: String) {}
    }

    /// Runs `body` on a fresh simulation with ZEGO clients A and B (never logged in) and fresh path states.
    static func withTwoClients(_ body: (ZegoClient, ZegoClient, PathStates) -> Void) async {
        await SimulationRuntime.withSimulation(seed: 1) { simulation in
            let environment = ZegoClient.Environment(transport: SimulatedNetwork())
            let a = ZegoClient(id: "A", loop: simulation, environment: environment)
            let b = ZegoClient(id: "B", loop: simulation, environment: environment)
            body(a, b, PathStates())
        }
    }

    @Test func aRoomClientKeepsItsOwnLinkAndOtherClientsAreUnaffected() async {
        await Self.withTwoClients { a, b, states in
            #expect(a._keptLinkState == .up)

            #expect(states.setLink(.down, for: a))
            #expect(!states.setLink(.down, for: a), "setting the state it has changes nothing")
            #expect(a._keptLinkState == .down)
            #expect(states.link(of: a) == .down)
            #expect(states.link(of: b) == .up)
            #expect(states.setLink(.blackhole, for: a))
            #expect(states.link(of: a) == .blackhole)
            #expect(states.setLink(.up, for: a))
            #expect(states.link(of: a) == .up)
            #expect(a._keptLinkState == .up)
            #expect(b._keptLinkState == .up)
        }
    }

    @Test func aClientThatKeepsNoLinkIsInTheTableBesideOnesThatDo() async {
        await SimulationRuntime.withSimulation(seed: 1) { simulation in
            let environment = ZegoClient.Environment(transport: SimulatedNetwork())
            let kept = ZegoClient(id: "A", loop: simulation, environment: environment)
            let bare = Bare("B", loop: simulation)
            let states = PathStates()
            #expect(bare._keptLinkState == nil)
            #expect(bare._exchangeKeptLinkState(.down) == nil)

            #expect(states.setLink(.blackhole, for: bare))
            #expect(states.setLink(.down, for: kept))
            #expect(states.link(of: bare) == .blackhole)
            #expect(states.link(of: ObjectIdentifier(bare)) == .blackhole, "the table, by key")
            #expect(states.link(of: kept) == .down)
            // One back up: the other still reads as it was (the count of links not up is not a flag).
            #expect(states.setLink(.up, for: kept))
            #expect(states.link(of: bare) == .blackhole)
            #expect(states.setLink(.up, for: bare))
            #expect(states.link(of: bare) == .up)
        }
    }

    @Test func whileEveryLinkIsUpNothingIsReadFromTheClients() async {
        await Self.withTwoClients { a, b, states in
            // A state written behind the paths' back is not read while they count no link down…
            #expect(a._exchangeKeptLinkState(.down) == .up)
            #expect(states.link(of: a) == .up)
            // …and is once another link goes down.
            #expect(states.setLink(.blackhole, for: b))
            #expect(states.link(of: a) == .down)
            #expect(states.setLink(.up, for: b))
            #expect(states.link(of: a) == .up)
        }
    }

    /// A room's channel that counts how often a transport asks it for its room.
    final class WatchedChannel: RoomChannel {
        let room: any RoomEndpoint
        let reads = Atomic<Int>(0)

        init(_ room: any RoomEndpoint) { self.room = room }

        var _inProcessRoom: (any RoomEndpoint)? {
            reads.add(1, ordering: .relaxed)
            return room
        }
    }

    @Test func aDownLinkRefusesAMessageWithoutLookingAtItsRoom() async throws {
        try await ZegoClientTests.withWorld { world in
            let a = world.client("A")
            await a.loginRoom("r")
            try await world.simulation.sleep(for: .seconds(1))
            let room = try #require(world.network.open(toRoom: "r", for: a)?._inProcessRoom)
            let channel = WatchedChannel(room)
            let heartbeat = ClientMessage.heartbeat(userID: "A", session: SessionID(rawValue: 1))

            world.network.setLink(.down, for: a)
            // A storm's retries: at scale the room is in no cache, and refusing needs nothing of it.
            #expect(world.network.send(heartbeat, on: channel, from: a) == .refused)
            #expect(channel.reads.load(ordering: .relaxed) == 0)

            world.network.setLink(.up, for: a)
            #expect(world.network.send(heartbeat, on: channel, from: a) == .sent)
            #expect(channel.reads.load(ordering: .relaxed) == 1, "a message that leaves goes to the channel's room")
        }
    }

    @Test func aSimulatedNetworkKeepsTheLinkInTheClientAndTellsIt() async throws {
        try await ZegoClientTests.withWorld { world in
            let a = world.client("A")
            let b = world.client("B")
            await a.loginRoom("r")
            await b.loginRoom("r")
            try await world.simulation.sleep(for: .seconds(1))
            world.network.setLink(.down, for: a)
            #expect(a._keptLinkState == .down)
            #expect(world.network.link(of: a) == .down)
            #expect(world.network.link(of: b) == .up)
            try await world.simulation.sleep(for: .seconds(1))
            world.network.setLink(.up, for: a)
            #expect(a._keptLinkState == .up)
            try await world.simulation.sleep(for: .seconds(5))
            #expect(
                world.events.lines(of: "A") == [
                    "0 A r logining 0", "120 A r logined 0", "1000 A r reconnecting 1002051",
                    "2120 A r reconnected 0",
                ]
            )
            #expect(world.events.lines(of: "B") == ["0 B r logining 0", "120 B r logined 0"])
        }
    }
}
