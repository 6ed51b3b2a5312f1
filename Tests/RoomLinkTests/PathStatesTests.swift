import RoomLink
import RoomLinkEngine
import RoomLinkRuntime
import RoomLinkTestSupport
import Synchronization
import Testing

/// Where a transport keeps its clients' link states: in a ``RoomClient`` itself (`InProcessClient.keptLinkState`),
/// read without a lock, and in a table for a client that keeps none — with the same answers either way.
@Suite(.hangLimit(minutes: 10))
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
            #expect(a.keptLinkState == .up)

            #expect(states.setLink(.down, for: a))
            #expect(!states.setLink(.down, for: a), "setting the state it has changes nothing")
            #expect(a.keptLinkState == .down)
            #expect(states.link(of: a) == .down)
            #expect(states.link(of: b) == .up)
            #expect(states.setLink(.blackhole, for: a))
            #expect(states.link(of: a) == .blackhole)
            #expect(states.setLink(.up, for: a))
            #expect(states.link(of: a) == .up)
            #expect(a.keptLinkState == .up)
            #expect(b.keptLinkState == .up)
        }
    }

    @Test func aClientThatKeepsNoLinkIsInTheTableBesideOnesThatDo() async {
        await SimulationRuntime.withSimulation(seed: 1) { simulation in
            let environment = ZegoClient.Environment(transport: SimulatedNetwork())
            let kept = ZegoClient(id: "A", loop: simulation, environment: environment)
            let bare = Bare("B", loop: simulation)
            let states = PathStates()
            let key = ObjectIdentifier(bare)

            #expect(states.setLink(.blackhole, for: key))
            #expect(states.setLink(.down, for: kept))
            #expect(states.link(of: key) == .blackhole, "the table, by key")
            #expect(states.link(of: kept) == .down)
            #expect(kept.keptLinkState == .down, "the client, in place")
            // One back up: the other still reads as it was (the count of links not up is not a flag).
            #expect(states.setLink(.up, for: kept))
            #expect(states.link(of: key) == .blackhole)
            #expect(states.setLink(.up, for: key))
            #expect(states.link(of: key) == .up)
        }
    }

    @Test func whileEveryLinkIsUpNothingIsReadFromTheClients() async {
        await Self.withTwoClients { a, b, states in
            // A state written behind the paths' back is not read while they count no link down…
            #expect(a.exchangeKeptLinkState(.down) == .up)
            #expect(states.link(of: a) == .up)
            // …and is once another link goes down.
            #expect(states.setLink(.blackhole, for: b))
            #expect(states.link(of: a) == .down)
            #expect(states.setLink(.up, for: b))
            #expect(states.link(of: a) == .up)
        }
    }

    /// A room that is not the engine's: it passes everything on to a room of the engine's and counts how often a
    /// transport reads its loop (what a network reads of a room to route a message to it).
    final class WatchedRoom: RoomEndpoint {
        let inner: any RoomEndpoint
        let reads = Atomic<Int>(0)

        init(_ inner: any RoomEndpoint) { self.inner = inner }

        var roomID: String { inner.roomID }
        var roomHash: UInt64 { inner.roomHash }
        var loop: any RuntimeLoop {
            reads.add(1, ordering: .relaxed)
            return inner.loop
        }
        func deliver(_ message: ClientMessage, on channel: any ClientChannel) { inner.deliver(message, on: channel) }
        func connectionClosed(userID: String, session: SessionID, on channel: any ClientChannel) {
            inner.connectionClosed(userID: userID, session: session, on: channel)
        }
        func dataResumed(userID: String, session: SessionID, on channel: any ClientChannel) {
            inner.dataResumed(userID: userID, session: session, on: channel)
        }
        func withMemberChannels(_ body: @escaping @Sendable ([any ClientChannel]) -> Void) {
            inner.withMemberChannels(body)
        }
    }

    /// A channel no network opened: neither a room nor anything a network knows.
    final class StrayChannel: RoomChannel {}

    @Test func aDownLinkRefusesAMessageWithoutLookingAtItsRoom() async throws {
        try await ZegoClientTests.withWorld { world in
            let a = world.client("A")
            await a.loginRoom("r")
            try await world.simulation.sleep(for: .seconds(1))
            let room = try #require(world.network.open(toRoom: "r", for: a) as? any RoomEndpoint)
            let watched = WatchedRoom(room)
            let heartbeat = ClientMessage.heartbeat(userID: "A", session: SessionID(rawValue: 1))

            world.network.setLink(.down, for: a)
            let before = world.network.deliveredCount
            // A storm's retries: at scale the room is in no cache, and refusing needs nothing of it.
            #expect(world.network.send(heartbeat, on: watched, from: a) == .refused)
            #expect(watched.reads.load(ordering: .relaxed) == 0)
            #expect(world.network.deliveredCount == before)

            world.network.setLink(.up, for: a)
            let up = world.network.deliveredCount  // the client may answer its link's return at once
            #expect(world.network.send(heartbeat, on: watched, from: a) == .sent)
            #expect(watched.reads.load(ordering: .relaxed) >= 1, "a message that leaves goes to the channel's room")
            #expect(world.network.deliveredCount == up + 1)
        }
    }

    @Test func aChannelOrClientTheNetworkDoesNotKnowIsRefusedNotACrash() async throws {
        try await ZegoClientTests.withWorld { world in
            let a = world.client("A")
            await a.loginRoom("r")
            try await world.simulation.sleep(for: .seconds(1))
            let heartbeat = ClientMessage.heartbeat(userID: "A", session: SessionID(rawValue: 1))
            let before = world.network.deliveredCount
            #expect(world.network.send(heartbeat, on: StrayChannel(), from: a) == .refused)
            let room = try #require(world.network.open(toRoom: "r", for: a))
            let stranger = Bare("S", loop: world.simulation)
            #expect(world.network.send(heartbeat, on: room, from: stranger) == .refused)
            world.network.closed(room, session: SessionID(rawValue: 1), from: stranger)
            // A client of another kind still has a link the network keeps for it.
            world.network.setLink(.blackhole, for: stranger)
            #expect(world.network.link(of: stranger) == .blackhole)
            #expect(world.network.deliveredCount == before)
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
            #expect(a.keptLinkState == .down)
            #expect(world.network.link(of: a) == .down)
            #expect(world.network.link(of: b) == .up)
            try await world.simulation.sleep(for: .seconds(1))
            world.network.setLink(.up, for: a)
            #expect(a.keptLinkState == .up)
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
