import Foundation
import RoomLinkEngine
import SwiftProtobuf
import Testing

@testable import RoomLinkLiveKit

/// RoomLink's LiveKit client rules alone, played against the server's (``LiveKitSignalState``): what a client's dial
/// and requests become on the wire, and what the server's answers mean to the client — the two are inverses.
@Suite
struct LiveKitClientStateTests {
    static let keys = LiveKitKeys(["devkey": "secret"])
    static let now: Int64 = 1_800_000_000
    static let clientSession = SessionID(rawValue: 0x51)

    static func token(_ identity: String = "alice", room: String = "r1", secret: String = "secret") -> String {
        LiveKitAccessToken(
            apiKey: "devkey",
            identity: identity,
            expires: now + 600,
            video: .init(roomJoin: true, room: room)
        ).signed(with: secret)
    }

    static func login(_ kind: LoginRequest.Kind = .join, attempt: UInt32 = 0) -> LoginRequest {
        LoginRequest(userID: "alice", session: clientSession, userStatusNotify: true, kind: kind, attempt: attempt)
    }

    /// The query of a request target.
    static func query(_ target: String) -> [String: String] {
        var query: [String: String] = [:]
        for pair in target.split(separator: "?")[1].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            query[String(parts[0])] = String(parts[1]).removingPercentEncoding
        }
        return query
    }

    /// The server's side of a dial: the join it parses from the client's request, answered by the room with
    /// `message`.
    static func serve(
        _ target: String,
        session: SessionID = SessionID(rawValue: 0xabc),
        answer message: (SessionID) -> ServerMessage
    ) throws -> [Livekit_SignalResponse] {
        let join = try LiveKitJoin.parse(query(target), keys: keys, now: now, session: session)
        var server = LiveKitSignalState(join: join, pingInterval: .seconds(5), pingTimeout: .seconds(15))
        return server.answer(message(join.session), at: now * 1000, room: { "RM_\($0)" }, sid: { "PA_\($0)" })
            .compactMap { if case .respond(let response) = $0 { response } else { nil } }
    }

    /// The server's side of a dial, joined: its state after the room accepted the login with `present`, and the
    /// responses that acceptance made.
    static func joinedServer(
        _ target: String,
        session: SessionID,
        present: [String] = []
    ) throws -> (LiveKitSignalState, [Livekit_SignalResponse]) {
        let parsed = try LiveKitJoin.parse(query(target), keys: keys, now: now, session: session)
        var server = LiveKitSignalState(join: parsed, pingInterval: .seconds(5), pingTimeout: .seconds(15))
        let accepted = server.answer(
            .loginAccepted(session: parsed.session, attempt: 0, roomSessionID: "life", present: present),
            at: 0,
            room: { $0 },
            sid: { $0 }
        )
        return (server, accepted.compactMap { if case .respond(let response) = $0 { response } else { nil } })
    }

    static func received(
        _ client: inout LiveKitClientState,
        _ responses: [Livekit_SignalResponse]
    )
        -> [LiveKitClientState.Output]
    {
        responses.flatMap { client.received($0, at: now * 1000 + 7) }
    }

    @Test func aJoinIsADialWhoseJoinResponseAcceptsTheClientsOwnSession() throws {
        var client = LiveKitClientState(identity: "alice", room: "r1")
        let target = client.dial(Self.login(attempt: 2), token: Self.token())
        #expect(target.hasPrefix("/rtc?"))
        #expect(Self.query(target)["reconnect"] == nil)
        let responses = try Self.serve(target) {
            .loginAccepted(session: $0, attempt: 0, roomSessionID: "life", present: ["carol", "bob"])
        }
        let outputs = Self.received(&client, responses)
        // The server's session is its own (the participant's sid); the client hears its own, and its attempt.
        #expect(
            outputs == [
                .deliver(
                    .loginAccepted(
                        session: Self.clientSession,
                        attempt: 2,
                        roomSessionID: "RM_life",
                        present: ["bob", "carol"]
                    )
                )
            ]
        )
        #expect(client.participantSID == "PA_abc" && client.isJoined)
    }

    @Test func aResumeNamesTheSidTheJoinGaveAndLearnsWhoCameAndWentMeanwhile() throws {
        var client = LiveKitClientState(identity: "alice", room: "r1")
        let join = client.dial(Self.login(), token: Self.token())
        _ = Self.received(
            &client,
            try Self.serve(join) { .loginAccepted(session: $0, attempt: 0, roomSessionID: "life", present: ["bob"]) }
        )
        client.closed()
        let resume = client.dial(Self.login(.resume, attempt: 1), token: Self.token())
        #expect(Self.query(resume)["reconnect"] == "1" && Self.query(resume)["sid"] == "PA_abc")
        // The server finds the session the sid names, and answers; bob left and dave came while alice was away.
        let responses = try Self.serve(resume) {
            #expect($0 == SessionID(rawValue: 0xabc))
            return .loginAccepted(session: $0, attempt: 0, roomSessionID: "life", present: ["dave"])
        }
        #expect(
            Self.received(&client, responses) == [
                .deliver(
                    .loginAccepted(session: Self.clientSession, attempt: 1, roomSessionID: "RM_life", present: ["bob"])
                ),
                .deliver(.userUpdate(.delete, users: ["bob"], reason: .dropped)),
                .deliver(.userUpdate(.add, users: ["dave"], reason: nil)),
            ]
        )
        #expect(client.peers == ["dave"])
    }

    @Test func aResumeOfASessionTheServerLostIsAnUnknownSession() throws {
        var client = LiveKitClientState(identity: "alice", room: "r1")
        let join = client.dial(Self.login(), token: Self.token())
        _ = Self.received(
            &client,
            try Self.serve(join) { .loginAccepted(session: $0, attempt: 0, roomSessionID: "life", present: []) }
        )
        let resume = client.dial(Self.login(.resume, attempt: 1), token: Self.token())
        let outputs = Self.received(&client, try Self.serve(resume) { .sessionUnknown(session: $0) })
        #expect(outputs == [.deliver(.sessionUnknown(session: Self.clientSession)), .close(nil)])
    }

    @Test func aResumeBeforeAnyJoinJoins() {
        var client = LiveKitClientState(identity: "alice", room: "r1")
        let target = client.dial(Self.login(.resume), token: Self.token())
        #expect(Self.query(target)["reconnect"] == nil && !client.resumes)
    }

    @Test func heartbeatsArePingsAndPongsTheirAcks() throws {
        var client = LiveKitClientState(identity: "alice", room: "r1")
        let join = client.dial(Self.login(), token: Self.token())
        var (server, accepted) = try Self.joinedServer(join, session: SessionID(rawValue: 9))
        for response in accepted { _ = client.received(response, at: 0) }

        let ping = try #require(
            client.request(for: .heartbeat(userID: "alice", session: Self.clientSession), at: 1_000)
        )
        #expect(ping.pingReq.timestamp == 1_000)
        // The server takes it for a heartbeat of its session, and its ack becomes a pong carrying the timestamp.
        let actions = server.received(ping)
        guard case .deliver(.heartbeat(_, let heard)) = actions.first else {
            Issue.record("not a heartbeat: \(actions)")
            return
        }
        #expect(heard == server.join.session)
        let pongs = server.answer(.heartbeatAck(session: heard), at: 1_030, room: { $0 }, sid: { $0 })
        guard case .respond(let pong) = pongs.first else {
            Issue.record("no pong")
            return
        }
        #expect(client.received(pong, at: 1_040) == [.deliver(.heartbeatAck(session: Self.clientSession))])
        // The next ping reports the round trip, as the SDKs' do.
        #expect(
            client.request(for: .heartbeat(userID: "alice", session: Self.clientSession), at: 2_000)?.pingReq.rtt == 40
        )
        // Another session's heartbeat (an old room's) is not this connection's.
        #expect(client.request(for: .heartbeat(userID: "alice", session: SessionID(rawValue: 1)), at: 0) == nil)
    }

    @Test func aLogoutIsALeaveTheServerTakesForALogout() throws {
        var client = LiveKitClientState(identity: "alice", room: "r1")
        _ = client.dial(Self.login(), token: Self.token())
        let leave = try #require(client.request(for: .logout(userID: "alice", session: Self.clientSession), at: 0))
        #expect(leave.leave.reason == .clientInitiated && leave.leave.action == .disconnect)
    }

    @Test func theServersLeavesMeanWhatTheyMeantOnTheServer() throws {
        // Each of the room's words, through the server's rules and back through the client's.
        let cases: [(ServerMessage, [LiveKitClientState.Output])] = [
            (
                .kicked(session: SessionID(rawValue: 0xabc), reason: .duplicateLogin),
                [.deliver(.kicked(session: Self.clientSession, reason: .duplicateLogin)), .close(nil)]
            ),
            (
                .kicked(session: SessionID(rawValue: 0xabc), reason: .admin),
                [.deliver(.kicked(session: Self.clientSession, reason: .admin)), .close(nil)]
            ),
            (
                .kicked(session: SessionID(rawValue: 0xabc), reason: .tokenExpired),
                [.deliver(.kicked(session: Self.clientSession, reason: .tokenExpired)), .close(nil)]
            ),
            (
                .reconnectRequested(session: SessionID(rawValue: 0xabc)),
                [.deliver(.reconnectRequested(session: Self.clientSession)), .close(nil)]
            ),
        ]
        for (message, expected) in cases {
            var client = LiveKitClientState(identity: "alice", room: "r1")
            let target = client.dial(Self.login(), token: Self.token())
            let join = try Self.serve(target) {
                .loginAccepted(session: $0, attempt: 0, roomSessionID: "life", present: [])
            }
            _ = Self.received(&client, join)
            // The server's state is fresh for each message: joined first, then told.
            var (server, _) = try Self.joinedServer(target, session: SessionID(rawValue: 0xabc))
            let responses = server.answer(message, at: 0, room: { $0 }, sid: { $0 })
                .compactMap { if case .respond(let response) = $0 { response } else { nil } }
            #expect(Self.received(&client, responses) == expected, "\(message)")
        }
    }

    @Test func refusedJoinsAreLoginRejectionsOrBusyAttempts() throws {
        var client = LiveKitClientState(identity: "alice", room: "r1")
        let target = client.dial(Self.login(attempt: 3), token: Self.token())
        // Over the member cap, and turned away by admission control.
        #expect(
            Self.received(
                &client,
                try Self.serve(target) { .loginRejected(session: $0, attempt: 0, reason: .memberCapReached) }
            ) == [
                .deliver(.loginRejected(session: Self.clientSession, attempt: 3, reason: .memberCapReached)),
                .close(nil),
            ]
        )
        _ = client.dial(Self.login(attempt: 4), token: Self.token())
        #expect(
            Self.received(&client, try Self.serve(target) { .busy(session: $0, attempt: 0, retryAfter: .seconds(1)) })
                == [.deliver(.busy(session: Self.clientSession, attempt: 4, retryAfter: .zero)), .close(nil)]
        )
        // A token the server refuses (HTTP 401) is a rejected login; anything else a refused attempt.
        _ = client.dial(Self.login(attempt: 5), token: Self.token(secret: "wrong"))
        #expect(
            client.refused(status: 401)
                == .loginRejected(session: Self.clientSession, attempt: 5, reason: .tokenInvalid)
        )
        _ = client.dial(Self.login(attempt: 6), token: Self.token())
        #expect(client.refused(status: 503) == nil)
    }

    @Test func updatesAreUserUpdatesWithTheirReasons() throws {
        var client = LiveKitClientState(identity: "alice", room: "r1")
        let target = client.dial(Self.login(), token: Self.token())
        _ = Self.received(
            &client,
            try Self.serve(target) { .loginAccepted(session: $0, attempt: 0, roomSessionID: "life", present: ["bob"]) }
        )
        var (server, _) = try Self.joinedServer(target, session: SessionID(rawValue: 1), present: ["bob"])
        var outputs: [LiveKitClientState.Output] = []
        for message: ServerMessage in [
            .userUpdate(.add, users: ["carol", "bob"], reason: nil),
            .userUpdate(.delete, users: ["bob"], reason: .quit),
            .userUpdate(.delete, users: ["carol"], reason: .dropped),
            .userUpdate(.delete, users: ["nobody"], reason: .dropped),
        ] {
            for case .respond(let response) in server.answer(message, at: 0, room: { $0 }, sid: { $0 }) {
                outputs += client.received(response, at: 0)
            }
        }
        // bob was known already; nobody never was.
        #expect(
            outputs == [
                .deliver(.userUpdate(.add, users: ["carol"], reason: nil)),
                .deliver(.userUpdate(.delete, users: ["bob"], reason: .quit)),
                .deliver(.userUpdate(.delete, users: ["carol"], reason: .dropped)),
            ]
        )
    }

    @Test func aLeaveToResumeOrForAShutdownClosesTheConnectionForTheClientsPolicy() {
        for (action, reason, cause) in [
            (
                Livekit_LeaveRequest.Action.resume, Livekit_DisconnectReason.unknownReason,
                ConnectionCloseCause.endOfStream
            ),
            (.reconnect, .serverShutdown, .serverShutdown),
        ] {
            var client = LiveKitClientState(identity: "alice", room: "r1")
            _ = client.dial(Self.login(), token: Self.token())
            let leave = Livekit_SignalResponse.with {
                $0.leave = .with {
                    $0.action = action
                    $0.reason = reason
                }
            }
            #expect(client.received(leave, at: 0) == [.close(cause)])
        }
    }

    @Test func answersForNoLoginAreIgnored() {
        var client = LiveKitClientState(identity: "alice", room: "r1")
        #expect(client.received(.with { $0.pongResp = .with { $0.lastPingTimestamp = 1 } }, at: 2).isEmpty)
        #expect(client.refused(status: 401) == nil)
    }
}
