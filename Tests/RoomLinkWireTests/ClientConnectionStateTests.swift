import RoomLinkRuntime
import RoomLinkTestSupport
import RoomLinkWire
import Testing

/// A client connection's rules alone, in virtual time: when a room's silence condemns the connection, when the
/// server's data counts as stopped, and when it flows again — no socket, no loop.
@Suite(.hangLimit(minutes: 10))
struct ClientConnectionStateTests {
    static func at(_ seconds: Double) -> RuntimeInstant { RuntimeInstant(nanoseconds: Int64(seconds * 1e9)) }

    static func open(rooms: [String] = ["r1"], mediaInterval: Duration? = nil) -> ClientConnectionState {
        var state = ClientConnectionState()
        for room in rooms { state.add(room: room) }
        state.connected()
        state.hello(mediaInterval: mediaInterval)
        return state
    }

    @Test
    func aConnectionThatHeardNothingSinceTheRoomsLastMessageIsClosedAndItsOtherRoomsTold() {
        var state = Self.open(rooms: ["r1", "r2"])
        _ = state.received(at: Self.at(1))
        state.sent(room: "r1", at: Self.at(2))
        #expect(state.abandon(room: "r1", at: Self.at(7)) == .close(others: ["r2"], held: false))
        #expect(state.phase == .closed)
        // Closed once: a second verdict keeps what is already gone.
        #expect(state.abandon(room: "r2", at: Self.at(8)) == .keep)
    }

    @Test
    func aConnectionThatHeardSomethingSinceIsKeptOnlyTheRoomsPathIsSilent() {
        var state = Self.open(rooms: ["r1", "r2"])
        state.sent(room: "r1", at: Self.at(2))
        _ = state.received(at: Self.at(3))  // r2's heartbeat answer, say
        #expect(state.abandon(room: "r1", at: Self.at(7)) == .keep)
        #expect(state.phase == .open)
    }

    @Test
    func aDialThatNeverConnectedIsClosed() {
        var state = ClientConnectionState()
        state.add(room: "r1")
        state.sent(room: "r1", at: Self.at(0))
        #expect(state.abandon(room: "r1", at: Self.at(5)) == .close(others: [], held: false))
    }

    /// Given up while the path carries nothing (a black hole), the close is held — lost on the path too — so that
    /// the server hears it only when the path carries again; a path that carries closes at once.
    @Test
    func aConnectionGivenUpIntoABlackHoleIsHeldAndOneOnACarryingPathIsNot() {
        var blackHoled = Self.open(rooms: ["r1", "r2"])
        blackHoled.sent(room: "r1", at: Self.at(2))
        #expect(
            blackHoled.abandon(room: "r1", at: Self.at(7), pathCarries: false) == .close(others: ["r2"], held: true)
        )
        var carrying = Self.open(rooms: ["r1"])
        carrying.sent(room: "r1", at: Self.at(2))
        #expect(carrying.abandon(room: "r1", at: Self.at(7), pathCarries: true) == .close(others: [], held: false))
        // Alive (something arrived since): kept, whatever the path.
        var alive = Self.open(rooms: ["r1"])
        alive.sent(room: "r1", at: Self.at(2))
        _ = alive.received(at: Self.at(3))
        #expect(alive.abandon(room: "r1", at: Self.at(7), pathCarries: false) == .keep)
    }

    @Test
    func theServersDataCountsAsStoppedAfterThreeIntervalsOnceAndFromItsLastFrame() {
        var state = Self.open(rooms: ["r2", "r1"], mediaInterval: .milliseconds(500))
        _ = state.received(at: Self.at(10))
        #expect(state.watch(at: Self.at(11.4)) == nil, "not yet three intervals")
        let stopped = state.watch(at: Self.at(11.5))
        #expect(stopped?.since == Self.at(10) && stopped?.rooms == ["r1", "r2"])
        #expect(state.watch(at: Self.at(12)) == nil, "said once per silence")
        #expect(state.received(at: Self.at(13)) == ["r1", "r2"], "flowing again: every room hears it")
        #expect(state.received(at: Self.at(13.5)).isEmpty)
    }

    @Test
    func withoutAMediaIntervalOrBeforeItIsOpenThereIsNoWatch() {
        var heartbeats = Self.open(mediaInterval: nil)
        _ = heartbeats.received(at: Self.at(0))
        #expect(heartbeats.watch(at: Self.at(100)) == nil)
        var dialing = ClientConnectionState()
        dialing.hello(mediaInterval: .milliseconds(500))
        _ = dialing.received(at: Self.at(0))
        #expect(dialing.watch(at: Self.at(100)) == nil)
    }
}
