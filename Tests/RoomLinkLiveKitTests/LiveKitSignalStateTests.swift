import RoomLinkEngine
import SwiftProtobuf
import Testing

@testable import RoomLinkLiveKit

/// A LiveKit signalling connection's rules alone: what the participant's requests ask of the room, and what the
/// room's answers become — no socket, no loop.
@Suite
struct LiveKitSignalStateTests {
    static let session = SessionID(rawValue: 0xabc)

    static func state(resume: Bool = false) -> LiveKitSignalState {
        let join = LiveKitJoin(
            apiKey: "devkey",
            identity: "alice",
            name: "",
            room: "r1",
            session: session,
            isResume: resume,
            hidden: false,
            joinedAt: 1_800_000_000
        )
        return LiveKitSignalState(join: join, pingInterval: .seconds(5), pingTimeout: .seconds(15))
    }

    static func answer(_ state: inout LiveKitSignalState, _ message: ServerMessage) -> [LiveKitSignalState.Action] {
        state.answer(message, at: 42, room: { "RM_\($0)" }, sid: { "PA_\($0)" })
    }

    static func responses(_ actions: [LiveKitSignalState.Action]) -> [Livekit_SignalResponse] {
        actions.compactMap { if case .respond(let response) = $0 { response } else { nil } }
    }

    static func accepted(present: [String] = []) -> ServerMessage {
        .loginAccepted(session: session, attempt: 0, roomSessionID: "life-1", present: present)
    }

    @Test func theJoinIsALoginAndItsAnswerAJoinResponse() throws {
        var state = Self.state()
        guard case .login(let login) = state.login() else {
            Issue.record("not a login")
            return
        }
        #expect(
            login.userID == "alice" && login.session == Self.session && login.kind == .join && login.userStatusNotify
        )
        let response = try #require(Self.responses(Self.answer(&state, Self.accepted(present: ["bob"]))).first)
        #expect(response.join.participant.sid == "PA_abc")
        #expect(response.join.participant.identity == "alice")
        #expect(response.join.otherParticipants.map(\.identity) == ["bob"])
        #expect(response.join.room.sid == "RM_life-1" && response.join.room.name == "r1")
        #expect(response.join.pingInterval == 5 && response.join.pingTimeout == 15)
        #expect(state.isInRoom)
        // The participant's sid names its session: a resume's `sid` finds it again.
        #expect(LiveKitSignalState.session(ofParticipant: state.participantSID) == Self.session)
    }

    @Test func aResumeIsAnsweredByAReconnectResponseOrALeaveForAStateMismatch() throws {
        var resumed = Self.state(resume: true)
        guard case .login(let login) = resumed.login() else {
            Issue.record("not a login")
            return
        }
        #expect(login.kind == .resume)
        let answers = Self.responses(Self.answer(&resumed, Self.accepted(present: ["bob"])))
        let reconnect = try #require(answers.first)
        #expect(reconnect.message.map { if case .reconnect = $0 { true } else { false } } == true)
        // Then everyone present, the participant among them (livekit-server's ResumeParticipant does the same).
        #expect(answers.count == 2)
        #expect(answers.last?.update.participants.map(\.identity) == ["alice", "bob"])
        #expect(answers.last?.update.participants.allSatisfy { $0.state == .active } == true)

        var unknown = Self.state(resume: true)
        let actions = Self.answer(&unknown, .sessionUnknown(session: Self.session))
        let leave = try #require(Self.responses(actions).first).leave
        #expect(leave.reason == .stateMismatch && leave.action == .reconnect)
        #expect(actions.contains { if case .close = $0 { true } else { false } })
    }

    @Test func aRefreshedTokenIsTheJoinsOwnSignedByItsKeyForTenMinutes() throws {
        var state = Self.state()
        // Not in the room yet: nothing to refresh.
        #expect(state.refreshedToken(secret: "secret", now: 1_800_000_000).isEmpty)
        _ = Self.answer(&state, Self.accepted())
        let actions = state.refreshedToken(secret: "secret", now: 1_800_000_000)
        let response = try #require(Self.responses(actions).first)
        guard case .refreshToken(let text) = response.message else {
            Issue.record("not a refresh_token: \(response)")
            return
        }
        // The server's own check takes it: same identity and room, valid for LiveKit's ten minutes.
        let token = try LiveKitKeys(["devkey": "secret"]).verify(text, at: 1_800_000_001)
        #expect(token.identity == "alice" && token.video.room == "r1" && token.video.roomJoin == true)
        #expect(token.apiKey == "devkey" && token.expires == 1_800_000_600)
        #expect(throws: LiveKitTokenError.invalidSignature) {
            try LiveKitKeys(["devkey": "another"]).verify(text, at: 1_800_000_001)
        }
    }

    @Test func pingsAreHeartbeatsAnsweredInOrderByPongs() throws {
        var state = Self.state()
        _ = Self.answer(&state, Self.accepted())
        let first = state.received(.with { $0.pingReq = .with { $0.timestamp = 100 } })
        _ = state.received(.with { $0.ping = 200 })
        guard case .deliver(.heartbeat("alice", Self.session)) = first.first else {
            Issue.record("no heartbeat")
            return
        }
        let pong = try #require(Self.responses(Self.answer(&state, .heartbeatAck(session: Self.session))).first)
        #expect(pong.pongResp.lastPingTimestamp == 100 && pong.pongResp.timestamp == 42)
        let legacy = try #require(Self.responses(Self.answer(&state, .heartbeatAck(session: Self.session))).first)
        #expect(legacy.pong == 200)
        // An acknowledgement with no ping waiting (a resumed member's first) writes nothing.
        #expect(Self.answer(&state, .heartbeatAck(session: Self.session)).isEmpty)
    }

    @Test func peersJoiningAndLeavingAreParticipantUpdates() throws {
        var state = Self.state()
        _ = Self.answer(&state, Self.accepted())
        let joined = try #require(
            Self.responses(Self.answer(&state, .userUpdate(.add, users: ["bob"], reason: nil))).first
        )
        #expect(joined.update.participants.map(\.state) == [.active])
        #expect(joined.update.participants.map(\.sid) == ["PA_bob"])
        let left = try #require(
            Self.responses(Self.answer(&state, .userUpdate(.delete, users: ["bob", "carol"], reason: .quit))).first
        )
        #expect(left.update.participants.map(\.state) == [.disconnected, .disconnected])
        #expect(left.update.participants.map(\.disconnectReason) == [.clientInitiated, .clientInitiated])
    }

    @Test func kicksAndReconnectRequestsAreLeavesWithTheirReasonAndAction() throws {
        let cases: [(ServerMessage, Livekit_DisconnectReason, Livekit_LeaveRequest.Action)] = [
            (.kicked(session: Self.session, reason: .admin), .participantRemoved, .disconnect),
            (.kicked(session: Self.session, reason: .duplicateLogin), .duplicateIdentity, .disconnect),
            (.reconnectRequested(session: Self.session), .migration, .reconnect),
            (.loginRejected(session: Self.session, attempt: 0, reason: .memberCapReached), .joinFailure, .disconnect),
        ]
        for (message, reason, action) in cases {
            var state = Self.state()
            _ = Self.answer(&state, Self.accepted())
            let leave = try #require(Self.responses(Self.answer(&state, message)).first).leave
            #expect(leave.reason == reason && leave.action == action, "\(message)")
            #expect(leave.canReconnect == (action != .disconnect))
            #expect(!state.isInRoom)
            // Closed: nothing more reaches the room, and nothing more is written.
            #expect(state.received(.with { $0.pingReq = .init() }).isEmpty)
            #expect(Self.answer(&state, .userUpdate(.add, users: ["x"], reason: nil)).isEmpty)
        }
    }

    @Test func aLeaveIsALogoutAndTheClose() {
        var state = Self.state()
        _ = Self.answer(&state, Self.accepted())
        let actions = state.received(.with { $0.leave = .init() })
        guard case .deliver(.logout("alice", Self.session)) = actions.first, case .close = actions.last else {
            Issue.record("\(actions)")
            return
        }
        // Another session's answers (an earlier login of the identity) are not this connection's.
        var other = Self.state()
        #expect(Self.answer(&other, .kicked(session: SessionID(rawValue: 1), reason: .admin)).isEmpty)
    }

    @Test func requestsBeforeTheJoinIsAnsweredAreIgnored() {
        var state = Self.state()
        #expect(state.received(.with { $0.pingReq = .init() }).isEmpty)
        #expect(Self.answer(&state, .userUpdate(.add, users: ["bob"], reason: nil)).isEmpty)
    }

    @Test func aJoinIsCheckedAsLiveKitChecksItAndNamesTheRefusal() throws {
        let keys = LiveKitKeysTests.keys
        let now = LiveKitKeysTests.now
        let token = LiveKitKeysTests.token()
        let session = SessionID(rawValue: 9)
        let join = try LiveKitJoin.parse(["access_token": token], keys: keys, now: now, session: session)
        #expect(join.identity == "alice" && join.room == "r1" && join.session == session && !join.isResume)
        // The SDKs send the token as a bearer header.
        let header = try LiveKitJoin.parse(
            [:],
            authorization: "Bearer \(token)",
            keys: keys,
            now: now,
            session: session
        )
        #expect(header == join)
        // A resume names its session by its sid; one this server did not hand out names none.
        let resume = try LiveKitJoin.parse(
            ["access_token": token, "reconnect": "1", "sid": "PA_abc"],
            keys: keys,
            now: now,
            session: session
        )
        #expect(resume.isResume && resume.session == SessionID(rawValue: 0xabc))
        let stranger = try LiveKitJoin.parse(
            ["access_token": token, "reconnect": "1", "sid": "nonsense"],
            keys: keys,
            now: now,
            session: session
        )
        #expect(stranger.session == SessionID(rawValue: 0))
        func refusal(_ query: [String: String]) -> LiveKitJoin.Refusal? {
            do {
                _ = try LiveKitJoin.parse(query, keys: keys, now: now, session: session)
                return nil
            } catch {
                return error
            }
        }
        #expect(refusal([:]) == .init(status: 401, message: "no access token"))
        #expect(refusal(["access_token": token, "room": "r2"])?.status == 401)
        #expect(refusal(["access_token": LiveKitKeysTests.token(room: nil)])?.message.contains("roomJoin") == true)
        #expect(refusal(["access_token": LiveKitKeysTests.token(secret: "x")])?.message == "invalid token signature")
    }
}
