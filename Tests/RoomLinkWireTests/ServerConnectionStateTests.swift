import RoomLinkEngine
import RoomLinkRuntime
import RoomLinkTestSupport
import RoomLinkWire
import Testing

/// A server connection's rules alone, in virtual time: the handshake, what a connection may carry, what closes it
/// and who hears of the close, the media watch and the keep-alives — no socket, no loop. Rooms are their names.
@Suite(.hangLimit(minutes: 10))
struct ServerConnectionStateTests {
    typealias State = ServerConnectionState

    /// A room that is only its name: the state stores it and hands it back, and never calls it.
    final class NamedRoom: RoomEndpoint {
        let roomID: String
        let roomHash: UInt64 = 0
        var loop: any RuntimeLoop { preconditionFailure("a test room runs nowhere") }
        init(_ roomID: String) { self.roomID = roomID }
        func deliver(_ message: ClientMessage, on channel: any ClientChannel) {}
        func connectionClosed(userID: String, session: SessionID, on channel: any ClientChannel) {}
        func dataResumed(userID: String, session: SessionID, on channel: any ClientChannel) {}
        func withMemberChannels(_ body: @escaping @Sendable ([any ClientChannel]) -> Void) {}
    }

    static func at(_ seconds: Double) -> RuntimeInstant { RuntimeInstant(nanoseconds: Int64(seconds * 1e9)) }

    static func limits(mediaInterval: Duration? = nil, rooms: Int = 2) -> State.Limits {
        .init(
            dialect: mediaInterval == nil ? .zego : .agora,
            maximumRoomsPerConnection: rooms,
            maximumOutputBuffer: 1_000,
            mediaInterval: mediaInterval
        )
    }

    static func hello(_ dialect: DialectName? = .zego, version: UInt32 = WireProtocol.version) -> ClientFrame {
        .hello(ClientHello(protocolVersion: version, dialect: dialect, clientID: "device-1"))
    }

    static func login(_ user: String = "alice", room: String = "r1", session: UInt64 = 1) -> ClientFrame {
        .room(room, .login(LoginRequest(userID: user, session: SessionID(rawValue: session))))
    }

    /// The room a deliver action goes to, the close a close action is, or neither.
    static func delivered(_ action: State.Action) -> String? {
        if case .deliver(_, let room) = action { room.roomID } else { nil }
    }

    static func closed(_ action: State.Action) -> State.Close? {
        if case .close(let close) = action { close } else { nil }
    }

    /// Receives `frame` at `seconds`, finding new rooms by name and counting the lookups.
    static func receive(
        _ frame: ClientFrame,
        _ state: inout State,
        at seconds: Double = 0,
        lookups: inout [String]
    ) -> State.Action {
        state.received(frame, at: at(seconds)) { room in
            lookups.append(room)
            return NamedRoom(room)
        }
    }

    static func loggedIn(mediaInterval: Duration? = nil, rooms: [String] = ["r1"]) -> State {
        var state = State(limits: limits(mediaInterval: mediaInterval, rooms: 4))
        var lookups: [String] = []
        _ = receive(hello(mediaInterval == nil ? .zego : .agora), &state, lookups: &lookups)
        for room in rooms { _ = receive(login(room: room), &state, lookups: &lookups) }
        return state
    }

    // MARK: - Handshake

    @Test
    func aHelloIsAnsweredAndAFirstLoginFindsItsRoomOnceAndTakesTheUser() {
        var state = State(limits: Self.limits())
        var lookups: [String] = []
        guard case .answerHello = Self.receive(Self.hello(), &state, lookups: &lookups) else {
            Issue.record("the hello was not answered")
            return
        }
        #expect(state.phase == .open)
        #expect(state.clientID == "device-1")
        #expect(Self.delivered(Self.receive(Self.login(), &state, lookups: &lookups)) == "r1")
        #expect(state.userID == "alice")
        // A login again (a reconnection) and a heartbeat reuse the room it found.
        #expect(Self.delivered(Self.receive(Self.login(session: 2), &state, lookups: &lookups)) == "r1")
        let heartbeat = ClientFrame.room("r1", .heartbeat(userID: "alice", session: SessionID(rawValue: 2)))
        #expect(Self.delivered(Self.receive(heartbeat, &state, lookups: &lookups)) == "r1")
        #expect(lookups == ["r1"])
        #expect(state.roomsIn == ["r1"])
    }

    @Test(arguments: [
        (
            hello(.zego, version: WireProtocol.version + 1), CloseReason.handshakeRefused,
            GoodbyeReason.unsupportedVersion
        ),
        (hello(.agora), .handshakeRefused, .wrongDialect),
        (login(), .protocolError, .protocolError),
        (ClientFrame.media(room: "r1"), .protocolError, .protocolError),
    ])
    func aWrongFirstFrameClosesWithItsGoodbye(frame: ClientFrame, reason: CloseReason, goodbye: GoodbyeReason) {
        var state = State(limits: Self.limits())
        var lookups: [String] = []
        let close = Self.closed(Self.receive(frame, &state, lookups: &lookups))
        #expect(close?.reason == reason)
        #expect(close?.goodbye == goodbye)
        #expect(close?.members.isEmpty == true)
        #expect(state.phase == .closing)
        #expect(lookups.isEmpty)
        // A closed connection serves nothing more.
        guard case .none = Self.receive(Self.hello(), &state, lookups: &lookups) else {
            Issue.record("a closed connection answered a frame")
            return
        }
    }

    @Test
    func aHelloAlreadyAnsweredWhileTheConnectionWaitedMakesItOpenAndASecondHelloCloses() {
        var state = State(limits: Self.limits(), greeted: "device-9")
        #expect(state.phase == .open)
        #expect(state.clientID == "device-9")
        var lookups: [String] = []
        let close = Self.closed(Self.receive(Self.hello(), &state, lookups: &lookups))
        #expect(close?.detail == "a second hello")
    }

    // MARK: - What a connection carries

    @Test
    func aFrameForAnotherUserOrARoomNotLoggedInToClosesAndItsRoomsHearIt() {
        var state = Self.loggedIn(rooms: ["r1", "r2"])
        var lookups: [String] = []
        let close = Self.closed(Self.receive(Self.login("mallory", room: "r3"), &state, lookups: &lookups))
        #expect(close?.reason == .protocolError)
        #expect(close?.detail == "a frame for user 'mallory' on the connection of user 'alice'")
        #expect(close?.members.map(\.room.roomID).sorted() == ["r1", "r2"])
        #expect(close?.members.allSatisfy { $0.userID == "alice" && $0.session == SessionID(rawValue: 1) } == true)

        var other = Self.loggedIn()
        let heartbeat = ClientFrame.room("r9", .heartbeat(userID: "alice", session: SessionID(rawValue: 1)))
        let unknown = Self.closed(Self.receive(heartbeat, &other, lookups: &lookups))
        #expect(unknown?.detail == "a frame for room 'r9', which this connection has not logged in to")
        #expect(lookups.isEmpty)
    }

    @Test
    func aConnectionCarriesAtMostItsLimitOfRooms() {
        var state = State(limits: Self.limits(rooms: 2))
        var lookups: [String] = []
        _ = Self.receive(Self.hello(), &state, lookups: &lookups)
        #expect(Self.delivered(Self.receive(Self.login(room: "a"), &state, lookups: &lookups)) == "a")
        #expect(Self.delivered(Self.receive(Self.login(room: "b"), &state, lookups: &lookups)) == "b")
        let close = Self.closed(Self.receive(Self.login(room: "c"), &state, lookups: &lookups))
        #expect(close?.detail == "more than 2 rooms on one connection")
        #expect(lookups == ["a", "b"])
    }

    @Test
    func aMemberThatLoggedOutIsNotToldOfTheClose() {
        var state = Self.loggedIn(rooms: ["r1", "r2"])
        var lookups: [String] = []
        // A logout of an older session leaves the member in; its own session's logout takes it out.
        _ = Self.receive(
            .room("r1", .logout(userID: "alice", session: SessionID(rawValue: 7))),
            &state,
            lookups: &lookups
        )
        #expect(state.roomsIn == ["r1", "r2"])
        _ = Self.receive(
            .room("r1", .logout(userID: "alice", session: SessionID(rawValue: 1))),
            &state,
            lookups: &lookups
        )
        #expect(state.roomsIn == ["r2"])
        let close = state.peerClosed(endOfStream: true)
        #expect(close?.reason == .peerClosed)
        #expect(close?.detail == "end of stream")
        #expect(close?.members.map(\.room.roomID) == ["r2"])
        // Closed once.
        #expect(state.peerClosed(endOfStream: false) == nil)
    }

    @Test
    func aResumptionOnANewConnectionJoinsTheRoomForTheSessionItNames() {
        var state = State(limits: Self.limits())
        var lookups: [String] = []
        _ = Self.receive(Self.hello(), &state, lookups: &lookups)
        let resumed = ClientFrame.room("r1", .connectionResumed(userID: "alice", session: SessionID(rawValue: 5)))
        #expect(Self.delivered(Self.receive(resumed, &state, lookups: &lookups)) == "r1")
        #expect(state.userID == "alice")
        #expect(state.closeMembers().map(\.session) == [SessionID(rawValue: 5)])
    }

    // MARK: - Timeouts and slow readers

    @Test
    func theLoginTimeoutClosesOnlyAConnectionThatHasNotLoggedIn() {
        var waiting = State(limits: Self.limits())
        var lookups: [String] = []
        _ = Self.receive(Self.hello(), &waiting, lookups: &lookups)
        let close = waiting.loginTimedOut()
        #expect(close?.reason == .loginTimeout)
        #expect(close?.goodbye == .loginTimeout)

        var loggedIn = Self.loggedIn()
        #expect(loggedIn.loginTimedOut() == nil)
        #expect(loggedIn.isOpen)
    }

    @Test
    func aReaderTooSlowIsClosedWithoutAGoodbyeThatCouldNotGetThrough() {
        var state = Self.loggedIn()
        #expect(state.wrote(at: nil, pending: 1_000) == nil)
        let close = state.wrote(at: nil, pending: 1_001)
        #expect(close?.reason == .slowReader)
        #expect(close?.goodbye == nil)
        #expect(close?.members.map(\.room.roomID) == ["r1"])
        #expect(state.phase == .closing)
        let first = state.freed()
        #expect(first)
        #expect(state.phase == .closed)
        let again = state.freed()
        #expect(!again)
    }

    // MARK: - Media and keep-alives

    @Test
    func mediaMissingForThreeIntervalsStopsTheMemberOnceAndItsReturnResumesIt() {
        var state = Self.loggedIn(mediaInterval: .milliseconds(500), rooms: ["r1", "r2"])
        var lookups: [String] = []
        #expect(state.tracksWrites)
        _ = Self.receive(.media(room: "r2"), &state, at: 1.4, lookups: &lookups)
        // r1's media last arrived at its login (0 s): 1.5 s is not more than three intervals; 1.6 s is.
        #expect(state.checkMedia(at: Self.at(1.5)).stopped.isEmpty)
        #expect(state.checkMedia(at: Self.at(1.6)).stopped.map(\.room.roomID) == ["r1"])
        // Told once per stop.
        #expect(state.checkMedia(at: Self.at(2.0)).stopped.isEmpty)
        let back = Self.receive(.media(room: "r1"), &state, at: 2.1, lookups: &lookups)
        guard case .resumed(let member) = back, member.room.roomID == "r1" else {
            Issue.record("the room did not hear the member's media resume: \(back)")
            return
        }
        #expect(member.userID == "alice" && member.session == SessionID(rawValue: 1))
        // A stopped member's room was already told: a close tells only the others.
        #expect(state.checkMedia(at: Self.at(3.0)).stopped.map(\.room.roomID) == ["r2"])
        #expect(state.closeMembers().map(\.room.roomID) == ["r1"])
    }

    @Test
    func aQuietConnectionWithALoggedInRoomGetsAKeepAliveAfterHalfAnInterval() {
        var state = Self.loggedIn(mediaInterval: .milliseconds(500))
        #expect(state.wrote(at: Self.at(1.0), pending: 0) == nil)
        #expect(!state.checkMedia(at: Self.at(1.2)).keepAlive)
        #expect(state.checkMedia(at: Self.at(1.25)).keepAlive)

        // Nothing to keep alive before a login, nor for a dialect without continuous media.
        var greeted = State(limits: Self.limits(mediaInterval: .milliseconds(500)), greeted: "device-1")
        #expect(!greeted.checkMedia(at: Self.at(10)).keepAlive)
        var zego = Self.loggedIn()
        #expect(!zego.tracksWrites)
        let check = zego.checkMedia(at: Self.at(10))
        #expect(check.stopped.isEmpty && !check.keepAlive)
    }
}

extension ServerConnectionState {
    /// Closes for a shutdown and returns who is told.
    fileprivate mutating func closeMembers() -> [Member] {
        if case .close(let close) = close(.serverShutdown, goodbye: .serverShutdown, detail: "shutting down") {
            close.members.sorted { $0.room.roomID < $1.room.roomID }
        } else {
            []
        }
    }
}
