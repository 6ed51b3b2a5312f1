import RoomLink
import RoomLinkRuntime
import Testing

/// A client room's decisions alone.
struct ZegoRoomSessionTests {
    static func session(notify: Bool = true) -> ZegoRoomSession {
        ZegoRoomSession(
            roomID: "r1",
            config: ZegoRoomConfig(isUserStatusNotify: notify),
            session: SessionID(rawValue: 1),
            now: .zero,
            retry: RetryPolicy.zegoDefault.makeIterator(random: SeededRandom(seed: 1))
        )
    }

    static func state(_ reason: ZegoRoomStateChangedReason, _ code: ZegoErrorCode) -> ZegoEvent {
        .roomStateChanged(roomID: "r1", reason: reason, errorCode: code, extendedData: [:])
    }

    @Test
    func aReconnectionReportsWhatChangedWhileAway() {
        var room = Self.session()
        let first = room.accepted(roomSessionID: "7", present: ["C", "B"], at: .zero)
        #expect(
            first == [
                .roomStateChanged(
                    roomID: "r1",
                    reason: .logined,
                    errorCode: .success,
                    extendedData: ["room_session_id": "7"]
                ),
                .roomUserUpdate(roomID: "r1", update: .add, users: ["C", "B"]),
            ]
        )
        #expect(room.userUpdate(.add, users: ["D"]) != nil)
        #expect(room.peers == ["B", "C", "D"])
        let lost = room.connectionLost(
            at: .zero,
            retry: RetryPolicy.zegoDefault.makeIterator(random: SeededRandom(seed: 2))
        )
        #expect(lost == Self.state(.reconnecting, .connectionInterrupted))
        #expect(
            room.connectionLost(at: .zero, retry: RetryPolicy.zegoDefault.makeIterator(random: SeededRandom(seed: 2)))
                == nil
        )
        let back = room.accepted(roomSessionID: "7", present: ["B", "E"], at: .zero)
        #expect(
            back == [
                Self.state(.reconnected, .success), .roomUserUpdate(roomID: "r1", update: .delete, users: ["C", "D"]),
                .roomUserUpdate(roomID: "r1", update: .add, users: ["E"]),
            ]
        )
        #expect(room.peers == ["B", "E"])
    }

    @Test
    func refusalsAndKicksMapToZegosReasonsAndCodes() {
        var room = Self.session()
        #expect(room.rejected(.tokenInvalid) == Self.state(.loginFailed, .tokenInvalid))
        #expect(room.rejected(.memberCapReached) == Self.state(.loginFailed, .roomMemberCapReached))
        _ = room.accepted(roomSessionID: "1", present: [], at: .zero)
        _ = room.connectionLost(at: .zero, retry: RetryPolicy.zegoDefault.makeIterator(random: SeededRandom(seed: 1)))
        #expect(room.rejected(.tokenInvalid) == Self.state(.kickOut, .kickedByTokenExpiry))
        #expect(room.rejected(.memberCapReached) == Self.state(.reconnectFailed, .roomMemberCapReached))
        #expect(room.kicked(.duplicateLogin) == Self.state(.kickOut, .kickedByDuplicateLogin))
        #expect(room.kicked(.admin) == Self.state(.kickOut, .kickedByAdmin))
        #expect(room.kicked(.tokenExpired) == Self.state(.kickOut, .kickedByTokenExpiry))
        #expect(room.giveUpEvent == Self.state(.reconnectFailed, .networkTimeout))
    }

    @Test
    func attemptsFollowThePolicyAndAnAttemptLimitGivesUpAtOnce() throws {
        var room = ZegoRoomSession(
            roomID: "r1",
            config: ZegoRoomConfig(),
            session: SessionID(rawValue: 1),
            now: .zero,
            retry: try RetryPolicy(schedule: .fixed([.zero, .seconds(2)]), maxAttempts: 2).makeIterator(
                random: SeededRandom(seed: 1)
            )
        )
        #expect(room.attemptFailed(at: .zero, maxAttempts: 2) == .retry(after: .seconds(2)))
        #expect(room.attemptFailed(at: .zero, maxAttempts: 2) == .giveUp(Self.state(.loginFailed, .networkTimeout)))
        var zego = Self.session()
        guard case .retry(let delay) = zego.attemptFailed(at: .zero, maxAttempts: nil) else {
            Issue.record("the default policy retries")
            return
        }
        #expect(delay >= .milliseconds(500) && delay <= .seconds(1), "equal jitter on a 1 s base")
        #expect(
            zego.attemptFailed(at: RuntimeInstant(nanoseconds: 1_200 * 1_000_000_000), maxAttempts: nil)
                == .awaitDeadline,
            "no attempt may start at or after 20 minutes: the deadline timer ends the episode"
        )
    }

    @Test
    func onlyALoggedInRoomIsCheckedForSilence() {
        var room = Self.session()
        let late = RuntimeInstant(nanoseconds: 60_000_000_000)
        #expect(!room.isSilent(at: late, detection: .seconds(45)), "still logging in")
        _ = room.accepted(roomSessionID: "1", present: [], at: .zero)
        #expect(room.isSilent(at: late, detection: .seconds(45)))
        #expect(!room.isSilent(at: late, detection: .seconds(61)))
    }
}
