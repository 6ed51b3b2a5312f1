import RoomLinkEngine
import RoomLinkRuntime
import RoomLinkTestSupport
import RoomLinkWire
import Testing

/// A client connection's round trips alone, in virtual time: logins and heartbeats timed to their answers, failures
/// named by their answers, a login sent again counted as timed out, and logins left waiting counted when the
/// connection ends — no socket, no observer.
@Suite(.hangLimit(minutes: 10))
struct ConnectionRoundTripsTests {
    static func at(_ milliseconds: Int64) -> RuntimeInstant { RuntimeInstant(nanoseconds: milliseconds * 1_000_000) }
    static let session = SessionID(rawValue: 7)
    static func login(_ user: String = "alice") -> ClientMessage {
        .login(LoginRequest(userID: user, session: session))
    }

    @Test
    func aLoginAndAHeartbeatAreTimedToTheirAnswersOnce() {
        var trips = ConnectionRoundTrips()
        #expect(trips.sending(Self.login(), room: "r1", at: Self.at(100)).isEmpty)
        let accepted = ServerMessage.loginAccepted(session: Self.session, attempt: 1, roomSessionID: "s", present: [])
        #expect(
            trips.answered(accepted, room: "r1", at: Self.at(160)) == [
                .loginAnswered(after: .milliseconds(60), accepted: true)
            ]
        )
        #expect(trips.answered(accepted, room: "r1", at: Self.at(170)).isEmpty, "an answer to nothing waiting")
        #expect(
            trips.sending(.heartbeat(userID: "alice", session: Self.session), room: "r1", at: Self.at(1_000)).isEmpty
        )
        let ack = ServerMessage.heartbeatAck(session: Self.session)
        #expect(trips.answered(ack, room: "r2", at: Self.at(1_010)).isEmpty, "another room's ack")
        #expect(trips.answered(ack, room: "r1", at: Self.at(1_025)) == [.heartbeatAnswered(after: .milliseconds(25))])
        #expect(trips.answered(ack, room: "r1", at: Self.at(1_030)).isEmpty)
    }

    @Test
    func aLoginThatDidNotGetInIsAFailureNamedByItsAnswerBeforeItsLatency() {
        let answers: [(ServerMessage, ConnectionFailure)] = [
            (.loginRejected(session: Self.session, attempt: 1, reason: .tokenInvalid), .auth),
            (.loginRejected(session: Self.session, attempt: 1, reason: .memberCapReached), .other),
            (.busy(session: Self.session, attempt: 1, retryAfter: .seconds(1)), .busy),
            (.kicked(session: Self.session, reason: .duplicateLogin), .other),
            (.sessionUnknown(session: Self.session), .other),
        ]
        for (answer, failure) in answers {
            var trips = ConnectionRoundTrips()
            _ = trips.sending(Self.login(), room: "r1", at: Self.at(0))
            let reports = trips.answered(answer, room: "r1", at: Self.at(40))
            #expect(
                reports == [.failed(failure), .loginAnswered(after: .milliseconds(40), accepted: false)],
                "\(answer)"
            )
        }
    }

    @Test
    func aLoginSentAgainBeforeItsAnswerTimedOutAndIsTimedFromTheNewOne() {
        var trips = ConnectionRoundTrips()
        _ = trips.sending(Self.login(), room: "r1", at: Self.at(0))
        #expect(trips.sending(Self.login(), room: "r1", at: Self.at(5_000)) == [.failed(.timeout)])
        #expect(trips.sending(Self.login(), room: "r2", at: Self.at(5_000)).isEmpty, "another room's first login")
        let accepted = ServerMessage.loginAccepted(session: Self.session, attempt: 2, roomSessionID: "s", present: [])
        #expect(
            trips.answered(accepted, room: "r1", at: Self.at(5_030)) == [
                .loginAnswered(after: .milliseconds(30), accepted: true)
            ]
        )
    }

    @Test
    func loginsLeftWaitingWhenTheConnectionEndsFailOnceEach() {
        var trips = ConnectionRoundTrips()
        _ = trips.sending(Self.login(), room: "r1", at: Self.at(0))
        _ = trips.sending(Self.login(), room: "r2", at: Self.at(1))
        _ = trips.sending(.heartbeat(userID: "alice", session: Self.session), room: "r3", at: Self.at(2))
        #expect(trips.loginsWaiting == 2)
        #expect(trips.unanswered(.reset) == [.failed(.reset), .failed(.reset)])
        #expect(trips.unanswered(.timeout).isEmpty, "they wait no more")
    }
}

/// Which server a client's next connection goes to, alone: its routing's pick until a connection fails, then round
/// the list; nowhere else with one server.
@Suite(.hangLimit(minutes: 10))
struct ServerFailoverTests {
    @Test
    func aClientMovesRoundTheServersAndOthersKeepTheirRouting() {
        var failover = ServerFailover<String>(count: 3)
        #expect(failover.server(for: "a", routed: 1) == 1)
        failover.moveOn("a", from: 1)
        #expect(failover.server(for: "a", routed: 1) == 2)
        failover.moveOn("a", from: 2)
        #expect(failover.server(for: "a", routed: 1) == 0, "round the list")
        #expect(failover.server(for: "b", routed: 2) == 2, "another client keeps its routing's pick")
    }

    @Test
    func withOneServerThereIsNowhereElse() {
        var failover = ServerFailover<String>(count: 1)
        failover.moveOn("a", from: 0)
        #expect(failover.server(for: "a", routed: 0) == 0)
    }
}
