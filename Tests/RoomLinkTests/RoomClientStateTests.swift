import RoomLinkRuntime
import RoomLinkTestSupport
import Testing

@testable import RoomLink
@testable import RoomLinkEngine
@testable import RoomLinkScenarios

/// The client's decisions alone: no clock, loop, transport or actor — the test says what happens and when, and reads
/// the actions that come out, as `ServerRoomStateTests` does for the server.
@Suite(.hangLimit(minutes: 10))
struct RoomClientStateTests {
    typealias Action = RoomClientState.Action

    /// Collects actions; sends are refused while `refusing` (the client's link is down).
    final class Recorder {
        var actions: [Action] = []
        var refusing = false

        func perform(_ action: Action, _ attachment: inout RoomConnection.Attachment) -> SendOutcome {
            actions.append(action)
            if case .send = action, refusing { return .refused }
            return .sent
        }

        /// The actions since the last call.
        func take() -> [Action] {
            defer { actions = [] }
            return actions
        }
    }

    /// A client of `Dialect` with the recorder and rules the tests drive it by.
    struct Driver<Dialect: RoomDialect> {
        var state = RoomClientState(clientID: "A", userID: "A", seed: 7)
        let rules: RoomClientState.Rules
        let recorder = Recorder()

        init(timings: EngineTimings = Dialect.Timings.default.engine, policy: RetryPolicy = RoomClientStateTests.policy)
        {
            rules = RoomClientState.Rules(Dialect.self, timings: timings, retryPolicy: policy, logsAttempts: true)
        }

        mutating func join(_ room: String = "r", notify: Bool = false, at seconds: Double) -> [Action] {
            let recorder = recorder
            state.join(
                room,
                options: JoinOptions(notifiesPeers: notify),
                at: RoomClientStateTests.at(seconds),
                rules: rules
            ) {
                recorder.perform($0, &$1)
            }
            return recorder.take()
        }

        mutating func receive(_ message: ServerMessage, room: String = "r", at seconds: Double) -> [Action] {
            let recorder = recorder
            state.receive(message, from: room, at: RoomClientStateTests.at(seconds), rules: rules) {
                recorder.perform($0, &$1)
            }
            return recorder.take()
        }

        mutating func link(_ link: LinkState, at seconds: Double) -> [Action] {
            let recorder = recorder
            state.linkChanged(to: link, at: RoomClientStateTests.at(seconds), rules: rules) {
                recorder.perform($0, &$1)
            }
            return recorder.take()
        }

        mutating func route(_ room: String = "r", reachable: Bool, at seconds: Double) -> [Action] {
            let recorder = recorder
            state.routeChanged(toRoom: room, reachable: reachable, at: RoomClientStateTests.at(seconds), rules: rules) {
                recorder.perform($0, &$1)
            }
            return recorder.take()
        }

        mutating func connection(_ event: ConnectionEvent, room: String = "r", at seconds: Double) -> [Action] {
            let recorder = recorder
            state.connectionChanged(event, room: room, at: RoomClientStateTests.at(seconds), rules: rules) {
                recorder.perform($0, &$1)
            }
            return recorder.take()
        }

        mutating func heartbeat(at seconds: Double) -> [Action] {
            let recorder = recorder
            state.heartbeatDue(at: RoomClientStateTests.at(seconds), rules: rules) { recorder.perform($0, &$1) }
            return recorder.take()
        }

        mutating func fire(_ timer: RoomClientState.Timer, at instant: RuntimeInstant) -> [Action] {
            let recorder = recorder
            state.timerFired(timer, at: instant, rules: rules) { recorder.perform($0, &$1) }
            return recorder.take()
        }

        /// Joins `room` and has the server accept the first attempt at `seconds + 0.1`.
        mutating func joined(_ room: String = "r", notify: Bool = false, present: [String] = [], at seconds: Double) {
            let login = RoomClientStateTests.logins(join(room, notify: notify, at: seconds))[0]
            _ = receive(
                .loginAccepted(session: login.session, attempt: login.attempt, roomSessionID: "s", present: present),
                room: room,
                at: seconds + 0.1
            )
        }

        var session: SessionID { state.rooms[0].session }
    }

    /// No jitter: attempt 1 at once, attempt 2 one second after a failure, then two seconds each.
    static let policy = try! RetryPolicy(schedule: .fixed([.zero, .seconds(1), .seconds(2)]))

    static func at(_ seconds: Double) -> RuntimeInstant {
        RuntimeInstant(nanoseconds: Int64((seconds * 1e9).rounded()))
    }

    static func logins(_ actions: [Action]) -> [LoginRequest] {
        actions.compactMap { action in
            guard case .send(.login(let request), _) = action else { return nil }
            return request
        }
    }

    static func reports(_ actions: [Action]) -> [RoomTransition] {
        actions.compactMap { action in
            guard case .report(let transition, _) = action else { return nil }
            return transition
        }
    }

    static func armed(_ actions: [Action]) -> [(RoomClientState.Timer, RuntimeInstant)] {
        actions.compactMap { action in
            guard case .arm(let timer, let deadline) = action else { return nil }
            return (timer, deadline)
        }
    }

    static func sent(_ actions: [Action]) -> [ClientMessage] {
        actions.compactMap { action in
            guard case .send(let message, _) = action else { return nil }
            return message
        }
    }

    // MARK: - Rules

    /// The rules are handed to a client's state on every message and heartbeat: they hold no counted reference (a
    /// copy is a copy of bytes), and the policy they keep for the clients' iterators is one per policy, whatever rules
    /// hold it.
    @Test
    func rulesAreBytesAndShareOnePolicyPerPolicy() throws {
        #expect(_isPOD(RoomClientState.Rules.self))
        var rules = RoomClientState.Rules(Zego.self, timings: ZegoTimings.default.engine, retryPolicy: Self.policy)
        let again = RoomClientState.Rules(Agora.self, timings: AgoraTimings.default.engine, retryPolicy: Self.policy)
        #expect(rules.sharedRetryPolicy.object === again.sharedRetryPolicy.object)
        #expect(rules.retryPolicy == Self.policy)
        // A new policy is the rules' own from then on; the copy made before keeps the old one.
        let before = rules
        let other = try RetryPolicy(schedule: .fixed([.seconds(3)]), maxAttempts: 2)
        rules.retryPolicy = other
        #expect(rules.retryPolicy == other && rules.sharedRetryPolicy.object.policy == other)
        #expect(before.retryPolicy == Self.policy)
        var shared = rules.sharedRetryPolicy.object.makeIterator(random: SeededRandom(seed: 1))
        var own = other.makeIterator(random: SeededRandom(seed: 1))
        for _ in 0..<3 { #expect(shared.next(elapsed: .zero) == own.next(elapsed: .zero)) }
    }

    // MARK: - Joining

    @Test
    func aFirstJoinReportsJoiningAndSendsOneAttemptWithItsAnswerTimeout() {
        var client = Driver<Zego>()
        let actions = client.join(at: 2)
        let login = Self.logins(actions)[0]
        #expect(login.kind == .join && login.attempt == 1 && login.userID == "A")
        #expect(login.answerBy == Self.at(7))  // ZEGO's 5 s attempt timeout
        #expect(
            actions == [
                .report(.joining, room: "r"),
                .send(.login(login), room: "r"),
                .attemptSent(room: "r", reconnecting: false, number: 1),
                .arm(.room("r", .answer(attempt: 1)), at: Self.at(7)),
            ]
        )
        #expect(client.state.rooms[0].phase == .joining)
    }

    @Test
    func anAcceptedJoinReportsThePeersPresentAndStartsTheHeartbeat() {
        var client = Driver<Zego>()
        let login = Self.logins(client.join(notify: true, at: 0))[0]
        let actions = client.receive(
            .loginAccepted(session: login.session, attempt: 1, roomSessionID: "s1", present: ["C", "B"]),
            at: 0.12
        )
        #expect(
            actions == [
                .attemptEnded(
                    AttemptRecord(
                        room: "r",
                        number: 1,
                        reconnecting: false,
                        after: .zero,
                        outcome: .ok,
                        busyCode: 1_002_099
                    )
                ),
                .cancel(.room("r", .answer(attempt: 1))),
                .report(.joined(roomSessionID: "s1"), room: "r"),
                .report(.peersChanged(.add, users: ["C", "B"], reason: nil), room: "r"),
                .startHeartbeat(every: .seconds(30)),
            ]
        )
        #expect(client.state.rooms[0].phase == .joined && client.state.rooms[0].peers == ["B", "C"])
        #expect(client.state.isBeating)
    }

    /// The heartbeat starts with the attachment of the room whose join started it — its channel is what a
    /// simulation's heartbeat lane loads ahead of each beat — not with an empty one.
    @Test
    func theHeartbeatStartsWithTheJoinedRoomsAttachment() {
        var state = RoomClientState(clientID: "A", userID: "A", seed: 7)
        let rules = RoomClientState.Rules(Zego.self, timings: Zego.Timings.default.engine, retryPolicy: Self.policy)
        let marker = TimerHandle(packed: 0x42)
        var login: LoginRequest?
        var startedWith: [TimerHandle?] = []
        // Marks the room's attachment when its login goes out (as a client notes the channel it opened), and notes
        // which attachment the heartbeat starts with.
        let perform: RoomClientState.Perform = { action, attachment in
            switch action {
            case .send(.login(let request), _):
                login = request
                attachment.notice = marker
            case .startHeartbeat:
                startedWith.append(attachment.notice)
            default:
                break
            }
            return .sent
        }
        state.join("r", options: JoinOptions(), at: Self.at(0), rules: rules, perform: perform)
        guard let request = login else {
            Issue.record("the join sent no login")
            return
        }
        state.receive(
            .loginAccepted(session: request.session, attempt: 1, roomSessionID: "s1", present: []),
            from: "r",
            at: Self.at(0.12),
            rules: rules,
            perform: perform
        )
        #expect(marker != nil && startedWith == [marker])
    }

    @Test
    func unansweredAttemptsFollowThePolicyAndAFirstJoinGivesUpAtTheLoginTimeout() {
        var client = Driver<Zego>()
        var actions = client.join(at: 0)
        var attemptsAt: [Double] = [0]
        // Fire whatever timer is armed, at its deadline, until the room ends.
        while client.state.rooms.count == 1, let (timer, deadline) = Self.armed(actions).last {
            actions = client.fire(timer, at: deadline)
            if !Self.logins(actions).isEmpty { attemptsAt.append(deadline.milliseconds) }
        }
        // 5 s unanswered, then 1 s, 2 s, 2 s … of waiting; the login timeout (30 s) ends it, not the last answer
        // timeout (27 + 5 = 32 s).
        #expect(attemptsAt == [0, 6000, 13_000, 20_000, 27_000])
        #expect(Self.reports(actions) == [.gaveUp(from: .joining)])
        #expect(actions.last == .ended(room: "r"))
        #expect(client.state.rooms.isEmpty)
    }

    @Test
    func aLateAnswerToAnAttemptGivenUpOnIsIgnoredAndTheNextOneCounts() {
        var client = Driver<Zego>()
        let first = Self.logins(client.join(at: 0))[0]
        #expect(
            client.fire(.room("r", .answer(attempt: 1)), at: Self.at(5)).contains(
                .arm(.room("r", .nextAttempt(after: 1)), at: Self.at(6))
            )
        )
        let late = ServerMessage.loginAccepted(session: first.session, attempt: 1, roomSessionID: "s", present: [])
        #expect(Self.reports(client.receive(late, at: 5.5)).isEmpty)
        #expect(client.state.rooms[0].phase == .joining)
        let second = Self.logins(client.fire(.room("r", .nextAttempt(after: 1)), at: Self.at(6)))[0]
        #expect(second.attempt == 2 && second.session == first.session)
        let answer = ServerMessage.loginAccepted(session: first.session, attempt: 2, roomSessionID: "s", present: [])
        #expect(Self.reports(client.receive(answer, at: 6.1)) == [.joined(roomSessionID: "s")])
    }

    @Test
    func aLoginThatCannotLeaveFailsAtOnceAndATimerForAnotherAttemptIsIgnored() {
        var client = Driver<Zego>()
        client.recorder.refusing = true
        let actions = client.join(at: 0)
        // No attempt counted as sent, no answer timeout: the next attempt waits for the policy's delay.
        #expect(!actions.contains { if case .attemptSent = $0 { true } else { false } })
        #expect(Self.armed(actions).map(\.0) == [.room("r", .nextAttempt(after: 1))])
        #expect(Self.armed(actions).map(\.1) == [Self.at(1)])
        #expect(client.fire(.room("r", .answer(attempt: 1)), at: Self.at(5)).isEmpty)
    }

    @Test
    func aRejectedOrKickedRoomEndsWithItsReason() {
        var client = Driver<Zego>()
        let login = Self.logins(client.join(at: 0))[0]
        let rejected = client.receive(
            .loginRejected(session: login.session, attempt: 1, reason: .tokenInvalid),
            at: 0.1
        )
        #expect(Self.reports(rejected) == [.rejected(.tokenInvalid, from: .joining)])
        #expect(rejected.last == .ended(room: "r") && rejected.contains(.cancel(.room("r", .answer(attempt: 1)))))
        #expect(client.state.rooms.isEmpty)

        var other = Driver<Zego>()
        other.joined(at: 0)
        // A kick of another session changes nothing.
        #expect(other.receive(.kicked(session: SessionID(rawValue: 1), reason: .admin), at: 1).isEmpty)
        let kicked = other.receive(.kicked(session: other.session, reason: .admin), at: 1)
        #expect(kicked == [.report(.kicked(.admin, from: .joined), room: "r"), .ended(room: "r")])
    }

    @Test
    func leavingTellsTheServerAndShutdownForgetsEveryRoomSilently() {
        var client = Driver<Zego>()
        client.joined("r1", at: 0)
        let session = client.session
        let recorder = client.recorder
        #expect(client.state.leave("r1", rules: client.rules) { recorder.perform($0, &$1) })
        #expect(
            recorder.take() == [
                .send(.logout(userID: "A", session: session), room: "r1"), .report(.left(from: .joined), room: "r1"),
                .ended(room: "r1"),
            ]
        )
        #expect(!client.state.leave("r1", rules: client.rules) { recorder.perform($0, &$1) } && recorder.take().isEmpty)
        // The heartbeat stops at its next beat once no room is left.
        #expect(client.heartbeat(at: 30) == [.stopHeartbeat])

        _ = client.join("r2", at: 40)
        _ = client.join("r3", at: 40)
        client.state.shutdown { recorder.perform($0, &$1) }
        let actions = recorder.take()
        #expect(Self.sent(actions).isEmpty)
        #expect(
            actions.filter { if case .ended = $0 { true } else { false } } == [.ended(room: "r3"), .ended(room: "r2")]
        )
        #expect(client.state.rooms.isEmpty)
    }

    // MARK: - Heartbeats and silence

    @Test
    func heartbeatsAreAnsweredAndSilenceLosesTheConnectionNeverEarly() {
        var client = Driver<Zego>()
        client.joined(at: 0)
        let session = client.session
        #expect(client.heartbeat(at: 30) == [.send(.heartbeat(userID: "A", session: session), room: "r")])
        #expect(client.receive(.heartbeatAck(session: session), at: 30.05).isEmpty)
        #expect(Self.sent(client.heartbeat(at: 60)) == [.heartbeat(userID: "A", session: session)])
        // Heard at 30.05; ZEGO's blackhole detection is 45 s: not lost at 75.04, lost at 75.05.
        #expect(Self.reports(client.heartbeat(at: 75.04)).isEmpty)
        let lost = client.heartbeat(at: 75.05)
        #expect(Self.reports(lost) == [.lost(.silent)])
        let login = Self.logins(lost)[0]
        #expect(login.kind == .reconnect && login.session == session && login.attempt == 2)
        #expect(lost.contains(.attemptSent(room: "r", reconnecting: true, number: 1)))
        #expect(!lost.contains(.closed(room: "r", session: session)))  // silence closes nothing
    }

    @Test
    func aHeartbeatThatCannotLeaveIsAClosedConnection() {
        var client = Driver<Zego>()
        client.joined(at: 0)
        let session = client.session
        client.recorder.refusing = true
        let actions = client.heartbeat(at: 30)
        #expect(
            actions.prefix(2) == [
                .send(.heartbeat(userID: "A", session: session), room: "r"), .closed(room: "r", session: session),
            ]
        )
        #expect(Self.reports(actions) == [.lost(.closed)])
        #expect(Self.armed(actions).map(\.0) == [.room("r", .nextAttempt(after: 2))])
    }

    // MARK: - Links and routes

    @Test
    func aConnectionTheTransportSawCloseIsLostAtOnceAndReopenedByTheNextAttempt() {
        var client = Driver<Zego>()
        client.joined(at: 0)
        let session = client.session
        #expect(client.connection(.connected, at: 5).isEmpty)
        let actions = client.connection(.closed(.reset), at: 10)
        // The channel is dropped before the reconnection's login, which reopens it; the server heard the close from
        // its own side of the transport, so the client sends no close of its own.
        #expect(actions.first == .reopen(room: "r"))
        #expect(Self.reports(actions) == [.lost(.closed)])
        let login = Self.logins(actions)
        #expect(login.count == 1 && login[0].kind == .reconnect && login[0].session == session)
        #expect(!actions.contains(.closed(room: "r", session: session)))
        #expect(client.connection(.closed(.endOfStream), room: "elsewhere", at: 11).isEmpty)
    }

    @Test
    func aConnectionThatCannotBeOpenedFailsTheAttemptWaitingOnIt() {
        var client = Driver<Zego>()
        let first = Self.logins(client.join(at: 0))[0]
        let refused = client.connection(.refused, at: 0.5)
        #expect(refused.first == .reopen(room: "r"))
        #expect(Self.reports(refused).isEmpty, "still joining: a failed attempt, not a lost connection")
        #expect(Self.armed(refused).map(\.0) == [.room("r", .nextAttempt(after: first.attempt))])
        #expect(Self.armed(refused).map(\.1) == [Self.at(1.5)], "the policy's second delay is 1 s")
        #expect(Self.logins(refused).isEmpty)
    }

    @Test
    func aDownLinkIsLostAtOnceAndAnUpLinkRetriesAtOnce() {
        var client = Driver<Zego>()
        client.joined(at: 0)
        client.recorder.refusing = true
        let down = client.link(.down, at: 10)
        #expect(Self.reports(down) == [.lost(.closed)])
        #expect(Self.armed(down).map(\.1) == [Self.at(11)])
        // A blackhole says nothing: only silence reveals it.
        #expect(client.link(.blackhole, at: 10.2).isEmpty)
        client.recorder.refusing = false
        let up = client.link(.up, at: 10.5)
        #expect(up.first == .cancel(.room("r", .nextAttempt(after: 2))))
        #expect(Self.logins(up).map(\.attempt) == [3])
        #expect(Self.armed(up).map(\.1) == [Self.at(15.5)])
    }

    @Test
    func agoraNoticesADownLinkByItsDataAfterTheDetectionTimeAndThenStillLost() {
        var client = Driver<Agora>()
        client.joined(at: 0)
        let session = client.session
        client.recorder.refusing = true
        let down = client.link(.down, at: 10)
        #expect(
            down == [
                .closed(room: "r", session: session), .arm(.dataSilence, at: Self.at(14)),
            ]
        )
        client.recorder.refusing = false
        // Back within 4 s: the client never noticed, and the server hears its data again.
        #expect(
            client.link(.up, at: 12) == [
                .cancel(.dataSilence), .send(.connectionResumed(userID: "A", session: session), room: "r"),
            ]
        )
        #expect(client.fire(.dataSilence, at: Self.at(14)).isEmpty)  // a timer it no longer waits for

        client.recorder.refusing = true
        _ = client.link(.down, at: 20)
        let silent = client.fire(.dataSilence, at: Self.at(24))
        #expect(Self.reports(silent) == [.lost(.silent)])
        #expect(Self.armed(silent).first! == (.notice(room: "r"), Self.at(34)))
        #expect(Self.reports(client.fire(.notice(room: "r"), at: Self.at(34))) == [.stillLost])
    }

    @Test
    func aCutPathIsSilenceOnlyForADialectThatWatchesItsData() {
        var zego = Driver<Zego>()
        zego.joined(at: 0)
        #expect(zego.route(reachable: false, at: 10).isEmpty)

        var client = Driver<Agora>()
        client.joined(at: 0)
        let session = client.session
        let cut = client.route(reachable: false, at: 10)
        #expect(
            cut == [
                .closed(room: "r", session: session),
                .arm(.room("r", .routeSilence(session)), at: Self.at(14)),
            ]
        )
        let healed = client.route(reachable: true, at: 12)
        #expect(
            healed == [
                .cancel(.room("r", .routeSilence(session))),
                .send(.connectionResumed(userID: "A", session: session), room: "r"),
            ]
        )
        _ = client.route(reachable: false, at: 20)
        #expect(Self.reports(client.fire(.room("r", .routeSilence(session)), at: Self.at(24))) == [.lost(.silent)])
    }

    // MARK: - Reconnect modes and giving up

    @Test
    func liveKitResumesFirstAndGoesFullWithANewSessionWhenTheServerForgotIt() {
        var client = Driver<LiveKit>()
        client.joined(present: ["B"], at: 0)
        let session = client.session
        client.recorder.refusing = true
        let down = client.link(.down, at: 10)
        #expect(Self.reports(down) == [.lost(.closed), .reconnectMode(.quick)])
        #expect(Self.logins(down).map(\.kind) == [.resume])
        client.recorder.refusing = false
        let up = client.link(.up, at: 10.5)
        let resume = Self.logins(up)[0]
        #expect(resume.kind == .resume && resume.session == session)
        // The server no longer holds the session: the next attempt starts a new one, and forgets the peers.
        let unknown = client.receive(.sessionUnknown(session: session), at: 10.6)
        #expect(Self.armed(unknown).map(\.0) == [.room("r", .nextAttempt(after: 3))])
        let full = client.fire(.room("r", .nextAttempt(after: 3)), at: Self.armed(unknown)[0].1)
        #expect(Self.reports(full) == [.reconnectMode(.full), .peersCleared(["B"])])
        let login = Self.logins(full)[0]
        #expect(login.kind == .join && login.session != session)
        let back = client.receive(
            .loginAccepted(session: login.session, attempt: login.attempt, roomSessionID: "s2", present: ["B"]),
            at: 13
        )
        #expect(Self.reports(back) == [.rejoined(.full), .peersChanged(.add, users: ["B"], reason: nil)])
    }

    @Test
    func aServerRequestReconnectsInFullFromTheFirstAttempt() {
        var client = Driver<LiveKit>()
        client.joined(at: 0)
        let session = client.session
        let actions = client.receive(.reconnectRequested(session: session), at: 5)
        #expect(Self.reports(actions) == [.lost(.serverRequest), .reconnectMode(.full)])
        // The old connection closes before the new session's first login leaves.
        let closed = actions.firstIndex(of: .closed(room: "r", session: session))
        let login = actions.firstIndex { if case .send(.login, _) = $0 { true } else { false } }
        #expect(closed != nil && login != nil && closed! < login!)
        #expect(Self.logins(actions).map(\.kind) == [.join])
        #expect(Self.logins(actions)[0].session != session)
    }

    @Test
    func theLastAttemptOfAQuickReconnectionIsFullAndThenItGivesUp() throws {
        let policy = try RetryPolicy(schedule: .fixed([.zero, .seconds(1)]), maxAttempts: 3)
        var client = Driver<LiveKit>(policy: policy)
        client.joined(at: 0)
        var actions = client.receive(.sessionUnknown(session: client.session), at: 5)
        #expect(Self.reports(actions) == [.lost(.sessionGone), .reconnectMode(.quick)])
        var kinds: [LoginRequest.Kind] = Self.logins(actions).map(\.kind)
        while let (timer, deadline) = Self.armed(actions).last {
            actions = client.fire(timer, at: deadline)
            kinds += Self.logins(actions).map(\.kind)
            if client.state.rooms.isEmpty { break }
        }
        #expect(kinds == [.resume, .resume, .join])
        #expect(Self.reports(actions) == [.gaveUp(from: .reconnecting)])
    }

    @Test
    func aReconnectionGivesUpAtTheRetryTimeout() {
        var client = Driver<Zego>(timings: ZegoTimings(retryTimeout: .seconds(10)).engine)
        client.joined(at: 0)
        client.recorder.refusing = true
        var actions = client.link(.down, at: 100)
        var now = Self.at(100)
        while let (timer, deadline) = Self.armed(actions).last, !client.state.rooms.isEmpty {
            #expect(deadline <= Self.at(110), "no timer past the episode's deadline")
            now = deadline
            actions = client.fire(timer, at: deadline)
        }
        #expect(now == Self.at(110))
        #expect(Self.reports(actions) == [.gaveUp(from: .reconnecting)])
    }

    @Test
    func aBusyServersHintDelaysTheNextAttemptBeyondThePolicy() {
        var client = Driver<Agora>()
        let login = Self.logins(client.join(at: 0))[0]
        let busy = client.receive(.busy(session: login.session, attempt: 1, retryAfter: .seconds(3)), at: 0.2)
        #expect(
            busy == [
                .cancel(.room("r", .answer(attempt: 1))),
                .attemptEnded(
                    AttemptRecord(
                        room: "r",
                        number: 1,
                        reconnecting: false,
                        after: .zero,
                        outcome: .busy,
                        retryAfter: .seconds(3),
                        busyCode: 10
                    )
                ),
                .arm(.room("r", .nextAttempt(after: 1)), at: Self.at(3.2)),  // the policy says 1 s
            ]
        )
        // An answer to another attempt, or a busy answer once joined, changes nothing.
        #expect(client.receive(.busy(session: login.session, attempt: 7, retryAfter: .seconds(3)), at: 0.3).isEmpty)
    }
}
