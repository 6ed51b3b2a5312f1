import RoomLink
import RoomLinkRuntime
import RoomLinkTestSupport
import Testing

/// A client room's decisions alone, and how the ZEGO dialect words them.
@Suite(.hangLimit(minutes: 10))
struct RoomConnectionTests {
    static func connection(notify: Bool = true, policy: RetryPolicy = .zegoDefault) -> RoomConnection {
        RoomConnection(
            roomID: "r1",
            options: JoinOptions(notifiesPeers: notify),
            session: SessionID(rawValue: 1),
            now: .zero,
            retry: policy.makeIterator(random: SeededRandom(seed: 1))
        )
    }

    static func zego(_ transitions: RoomTransition...) -> [ZegoEvent] {
        var events: [ZegoEvent] = []
        for transition in transitions { Zego.report(transition, room: "r1") { events.append($0) } }
        return events
    }

    static func state(_ reason: ZegoRoomStateChangedReason, _ code: ZegoErrorCode) -> ZegoEvent {
        .roomStateChanged(roomID: "r1", reason: reason, errorCode: code, extendedData: [:])
    }

    static let fresh = RetryPolicy.zegoDefault.makeIterator(random: SeededRandom(seed: 2))

    @Test
    func aReconnectionReportsWhatChangedWhileAway() {
        var room = Self.connection()
        let first = room.accepted(roomSessionID: "7", present: ["C", "B"], at: .zero)
        #expect(first == [.joined(roomSessionID: "7"), .peersChanged(.add, users: ["C", "B"], reason: nil)])
        #expect(
            Self.zego(first[0], first[1]) == [
                .roomStateChanged(
                    roomID: "r1",
                    reason: .logined,
                    errorCode: .success,
                    extendedData: ["room_session_id": "7"]
                ),
                .roomUserUpdate(roomID: "r1", update: .add, users: ["C", "B"]),
            ]
        )
        let added = room.userUpdate(.add, users: ["D"], reason: nil)
        #expect(added != nil)
        #expect(room.peers == ["B", "C", "D"])
        let started = room.connectionLost(at: .zero, retry: Self.fresh)
        #expect(started && room.phase == .reconnecting)
        let again = room.connectionLost(at: .zero, retry: Self.fresh)
        #expect(!again, "already reconnecting")
        #expect(Self.zego(.lost(.closed)) == [Self.state(.reconnecting, .connectionInterrupted)])
        let back = room.accepted(roomSessionID: "7", present: ["B", "E"], at: .zero)
        #expect(
            back == [
                .rejoined(.quick), .peersChanged(.delete, users: ["C", "D"], reason: .dropped),
                .peersChanged(.add, users: ["E"], reason: nil),
            ]
        )
        #expect(room.peers == ["B", "E"])
    }

    @Test
    func zegoWordsRefusalsKicksAndGivingUpWithItsCodes() {
        #expect(Self.zego(.rejected(.tokenInvalid, from: .joining)) == [Self.state(.loginFailed, .tokenInvalid)])
        #expect(
            Self.zego(.rejected(.memberCapReached, from: .joining)) == [Self.state(.loginFailed, .roomMemberCapReached)]
        )
        #expect(
            Self.zego(.rejected(.tokenInvalid, from: .reconnecting)) == [Self.state(.kickOut, .kickedByTokenExpiry)]
        )
        #expect(
            Self.zego(.rejected(.memberCapReached, from: .reconnecting))
                == [Self.state(.reconnectFailed, .roomMemberCapReached)]
        )
        #expect(
            Self.zego(.kicked(.duplicateLogin, from: .joined)) == [Self.state(.kickOut, .kickedByDuplicateLogin)]
        )
        #expect(Self.zego(.kicked(.admin, from: .joined)) == [Self.state(.kickOut, .kickedByAdmin)])
        #expect(Self.zego(.kicked(.tokenExpired, from: .joined)) == [Self.state(.kickOut, .kickedByTokenExpiry)])
        #expect(Self.zego(.gaveUp(from: .reconnecting)) == [Self.state(.reconnectFailed, .networkTimeout)])
        #expect(Self.zego(.gaveUp(from: .joining)) == [Self.state(.loginFailed, .networkTimeout)])
        #expect(Self.zego(.stillLost, .reconnectMode(.quick), .peersCleared(["B"])).isEmpty, "no ZEGO callback")
    }

    @Test
    func attemptsFollowThePolicyAndAnAttemptLimitGivesUpAtOnce() throws {
        var room = Self.connection(
            policy: try RetryPolicy(schedule: .fixed([.zero, .seconds(2)]), maxAttempts: 2)
        )
        let second = room.attemptFailed(at: .zero, maxAttempts: 2)
        #expect(second == .retry(after: .seconds(2)))
        let third = room.attemptFailed(at: .zero, maxAttempts: 2)
        #expect(third == .giveUp)
        var once = Self.connection()
        let onlyOne = once.attemptFailed(at: .zero, maxAttempts: 1)
        #expect(onlyOne == .giveUp, "a limit of one attempt, the first made")
        var zego = Self.connection()
        guard case .retry(let delay) = zego.attemptFailed(at: .zero, maxAttempts: nil) else {
            Issue.record("the default policy retries")
            return
        }
        #expect(delay >= .milliseconds(500) && delay <= .seconds(1), "equal jitter on a 1 s base")
        let late = zego.attemptFailed(at: RuntimeInstant(nanoseconds: 1_200 * 1_000_000_000), maxAttempts: nil)
        #expect(
            late == .awaitDeadline,
            "no attempt may start at or after 20 minutes: the deadline timer ends the episode"
        )
    }

    @Test
    func onlyAJoinedRoomIsCheckedForSilence() {
        var room = Self.connection()
        let late = RuntimeInstant(nanoseconds: 60_000_000_000)
        #expect(!room.isSilent(at: late, timeout: .seconds(45)), "still joining")
        _ = room.accepted(roomSessionID: "1", present: [], at: .zero)
        #expect(room.isSilent(at: late, timeout: .seconds(45)))
        #expect(!room.isSilent(at: late, timeout: .seconds(61)))
    }

    @Test
    func peersAreTrackedOnlyWhenTheRoomHearsOfThem() {
        var deaf = Self.connection(notify: false)
        _ = deaf.accepted(roomSessionID: "1", present: ["B"], at: .zero)
        let unheard = deaf.userUpdate(.add, users: ["C"], reason: nil)
        #expect(unheard == nil)
        #expect(deaf.peers.isEmpty)
        var room = Self.connection()
        _ = room.accepted(roomSessionID: "1", present: [], at: .zero)
        let joined = room.userUpdate(.add, users: ["X"], reason: .quit)
        #expect(joined == .peersChanged(.add, users: ["X"], reason: nil), "an arrival has no departure reason")
        let left = room.userUpdate(.delete, users: ["X"], reason: .quit)
        #expect(left == .peersChanged(.delete, users: ["X"], reason: .quit))
    }

    /// What the client already knows is no change: a peer its login answer listed, told of again by a batch sent
    /// before that answer (a login repeated while the first was answered), is not reported twice; of a batch, only
    /// the peers it changes are; a departure of a peer never present is none.
    @Test
    func anUpdateOfWhatTheClientKnowsIsNotReportedAgain() {
        var room = Self.connection()
        _ = room.accepted(roomSessionID: "1", present: ["B"], at: .zero)
        #expect(room.userUpdate(.add, users: ["B"], reason: nil) == nil)
        #expect(
            room.userUpdate(.add, users: ["B", "C"], reason: nil) == .peersChanged(.add, users: ["C"], reason: nil)
        )
        #expect(room.userUpdate(.delete, users: ["X"], reason: .quit) == nil)
        #expect(room.peers == ["B", "C"])
    }

    /// A client's room packs into 144 bytes (its one-byte fields in the options' tail, its peers one word): a
    /// million-client run keeps a million, each client's first inline in its actor.
    @Test func aRoomStaysPacked() {
        #expect(MemoryLayout<RoomConnection>.size <= 144)
    }
}
