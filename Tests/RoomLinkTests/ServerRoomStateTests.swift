import RoomLinkRuntime
import RoomLinkTestSupport
import Testing

@testable import RoomLink
@testable import RoomLinkEngine
@testable import RoomLinkScenarios

/// The room's decisions alone: no network, no clock — the test says what arrives and when.
@Suite(.hangLimit(minutes: 10))
struct ServerRoomStateTests {
    /// A client's channel that is never called: the state only stores and names it.
    final class Endpoint: ClientChannel {
        let endpointID: String
        init(_ id: String, loop: any RuntimeLoop) {
            endpointID = id
        }

        func send(_ message: ServerMessage, from room: any RoomEndpoint) {
            Issue.record("the state sent \(message) itself: it only returns actions")
        }
    }

    static let timings = ServerTimings.zego

    /// A heartbeat's reply and where the room found the member, as one string to compare.
    static func answer(_ result: (reply: ServerMessage, slot: Int32, arm: ServerRoomState.Effect?)) -> String {
        guard case .heartbeatAck(let session) = result.reply else { return "\(result.reply)" }
        return "ack \(session) at \(result.slot)"
    }

    /// Runs `body` with a loop to name in endpoints (nothing is scheduled on it).
    static func withLoop(_ body: (any RuntimeLoop) throws -> Void) rethrows {
        let simulation = SimulationRuntime()
        defer { simulation.shutdown() }
        try body(simulation)
    }

    static func at(_ seconds: Double) -> RuntimeInstant {
        RuntimeInstant(nanoseconds: Int64(seconds * 1e9))
    }

    static func messages(_ effects: [ServerRoomState.Effect]) -> [String] {
        effects.map { effect in
            switch effect {
            case .send(let message, let channel): "\((channel as! Endpoint).endpointID) ← \(message)"
            case .armDeadline(let at): "deadline \(at.milliseconds)"
            case .armTokenDeadline(let user, let at): "token \(user) \(at.milliseconds)"
            case .armFlush(let at): "flush \(at.milliseconds)"
            case .announce(let announcement): "announce \(announcement)"
            case .release: "release"
            case .countFalseDepartures(let count): "false departures \(count)"
            case .membership(let change): "membership \(change)"
            }
        }
    }

    static func login(_ user: String, session: UInt64, notify: Bool = false, cap: Int? = nil) -> LoginRequest {
        LoginRequest(
            userID: user,
            session: SessionID(rawValue: session),
            userStatusNotify: notify,
            maxMemberCount: cap
        )
    }

    @Test
    func aMemberHeardFromStaysAndASilentOneLeavesExactlyAtTheTimeout() {
        Self.withLoop { loop in
            var room = ServerRoomState(roomID: "r1", timings: Self.timings)
            let a = Endpoint("A", loop: loop)
            let b = Endpoint("B", loop: loop)
            let first = room.login(Self.login("A", session: 1), from: a, tokenValid: true, now: Self.at(0))
            #expect(Self.messages(first).contains("deadline 90000.0"), "one room timer, armed for A's deadline")
            _ = room.login(Self.login("B", session: 2, notify: true), from: b, tokenValid: true, now: Self.at(0))
            _ = room.flushUpdates(now: Self.at(0.1))
            _ = room.heartbeat(userID: "A", session: SessionID(rawValue: 1), now: Self.at(30))
            let wrong = room.heartbeat(userID: "A", session: SessionID(rawValue: 9), now: Self.at(31))
            #expect(wrong.reply == .sessionUnknown(session: SessionID(rawValue: 9)))
            // At 90 s B (silent since 0 s) is due; A was heard at 30 s and is due at 120 s.
            let at90 = room.deadlinePassed(now: Self.at(90))
            #expect(room.memberIDs == ["A"])
            #expect(Self.messages(at90) == ["flush 90100.0", "deadline 120000.0"])
            _ = room.connectionClosed(userID: "A", session: SessionID(rawValue: 1), channel: a, now: Self.at(100))
            #expect(room.deadlinePassed(now: Self.at(120)).count == 1, "closing counts as heard: re-armed for 190 s")
            #expect(room.memberIDs == ["A"])
            _ = room.deadlinePassed(now: Self.at(190))
            #expect(room.memberIDs.isEmpty)
        }
    }

    /// A hundred members beating every 5 s against the 90 s timeout for 400 s: while all beat (one logging out on
    /// the way), the deadline timer's list holds at most one entry per member (a queue once kept 18 per member and
    /// looked each one up in one sweep); the member that falls silent still leaves exactly 90 s after it was last
    /// heard, and the others never.
    @Test
    func theDeadlineQueueStaysNearOneEntryPerMemberAndASilentMemberLeavesOnTime() {
        Self.withLoop { loop in
            var room = ServerRoomState(roomID: "r1", timings: Self.timings)
            var deadline: RuntimeInstant?
            var departures: [String: RuntimeInstant] = [:]
            func take(_ effects: [ServerRoomState.Effect]) {
                for case .armDeadline(let at) in effects { deadline = at }
            }
            func passTime(to time: RuntimeInstant) {
                while let due = deadline, due <= time {
                    deadline = nil
                    let before = Set(room.memberIDs)
                    take(room.deadlinePassed(now: due))
                    for user in before.subtracting(room.memberIDs) { departures[user] = due }
                }
            }
            let users = (0..<100).map { "u\($0)" }
            for (index, user) in users.enumerated() {
                let request = Self.login(user, session: UInt64(index + 1))
                take(
                    room.login(
                        request,
                        from: Endpoint(user, loop: loop),
                        tokenValid: true,
                        now: Self.at(0.01 * Double(index))
                    )
                )
            }
            var peak = 0
            for beat in 1...80 {
                for (index, user) in users.enumerated()
                where (user != "u7" || beat <= 40) && (user != "u9" || beat <= 20) {
                    let now = Self.at(5 * Double(beat) + 0.01 * Double(index))
                    passTime(to: now)
                    if user == "u9", beat == 20 {
                        take(room.logout(userID: user, session: SessionID(rawValue: UInt64(index + 1)), now: now))
                        continue
                    }
                    let (reply, _, arm) = room.heartbeat(
                        userID: user,
                        session: SessionID(rawValue: UInt64(index + 1)),
                        now: now
                    )
                    guard case .heartbeatAck = reply else {
                        Issue.record("\(user) at \(now): \(reply)")
                        return
                    }
                    take(arm.map { [$0] } ?? [])
                    // While everyone beats; a silent member's entry holds the front until it leaves.
                    if beat <= 40 { peak = max(peak, room.queuedDeadlineCount) }
                }
            }
            passTime(to: Self.at(400))
            #expect(departures == ["u7": Self.at(5 * 40 + 0.01 * 7).advanced(by: .seconds(90))])
            #expect(room.memberIDs.count == 98, "u7 timed out, u9 logged out")
            #expect(peak <= users.count, "the list held \(peak) entries for \(users.count) members")
            #expect(room.queuedDeadlineCount <= users.count, "and again once the silent member left")
        }
    }

    /// Forty members heard at random — heartbeats, closed connections (a second close does not count), silences,
    /// logouts, and logins again under new sessions — with the deadline timer fired whenever it asks: every member
    /// leaves exactly the timeout after it was last heard, members due at one instant leave in the order they were
    /// heard, and none leaves earlier. Whichever list the timer read a deadline from (one made before the member was
    /// heard again, or one made afresh), the answer is the one a queue of every hearing would give.
    @Test(arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
    func membersHeardAtRandomLeaveExactlyAtTheTimeoutInTheOrderHeard(seed: UInt64) {
        Self.withLoop { loop in
            var random = SeededRandom(seed: seed)
            // Reporting membership, so that the effects say in what order members left.
            var room = ServerRoomState(roomID: "r1", timings: Self.timings, reportsMembership: true)
            let timeout = Self.timings.heartbeatTimeout
            // The model: each member's session, when it was last heard, the order of that hearing, and whether its
            // connection is closed.
            var model: [String: (session: UInt64, heard: RuntimeInstant, order: Int, closed: Bool)] = [:]
            var hearings = 0
            var sessions: UInt64 = 0
            var deadline: RuntimeInstant?
            var departures = 0
            func take(_ effects: [ServerRoomState.Effect]) {
                for case .armDeadline(let at) in effects { deadline = at }
            }
            func heard(_ user: String, at now: RuntimeInstant) {
                hearings += 1
                model[user]?.heard = now
                model[user]?.order = hearings
            }
            func passTime(to time: RuntimeInstant) {
                while let due = deadline, due <= time {
                    deadline = nil
                    let effects = room.deadlinePassed(now: due)
                    take(effects)
                    var gone: [String] = []
                    for case .membership(.left(let user, _, .dropped, _)) in effects { gone.append(user) }
                    let expected = model.filter { $0.value.heard.advanced(by: timeout) <= due }
                        .sorted { ($0.value.heard, $0.value.order) < ($1.value.heard, $1.value.order) }
                    #expect(gone == expected.map(\.key), "at \(due)")
                    for user in gone {
                        #expect(model[user].map { $0.heard.advanced(by: timeout) } == due, "\(user) left at \(due)")
                        model[user] = nil
                    }
                    departures += gone.count
                }
                // The timer is armed whenever a member's deadline runs, and never later than the earliest.
                if let earliest = model.values.map({ $0.heard.advanced(by: timeout) }).min() {
                    #expect(deadline.map { $0 <= earliest } == true, "armed at \(String(describing: deadline))")
                }
            }
            let users = (0..<40).map { "u\($0)" }
            for step in 0..<2_400 {
                let now = Self.at(0.5 * Double(step))
                passTime(to: now)
                for user in users where random.next() % 60 == 0 {
                    guard let member = model[user] else {
                        // Absent: logs in again (half of the absent ones, at random moments) under a new session.
                        guard random.next() % 4 == 0 else { continue }
                        sessions += 1
                        let request = Self.login(user, session: sessions)
                        take(room.login(request, from: Endpoint(user, loop: loop), tokenValid: true, now: now))
                        model[user] = (sessions, now, 0, false)
                        heard(user, at: now)
                        continue
                    }
                    let session = SessionID(rawValue: member.session)
                    switch random.next() % 10 {
                    case 0..<6:
                        let (reply, _, arm) = room.heartbeat(userID: user, session: session, now: now)
                        #expect(reply == .heartbeatAck(session: session))
                        take(arm.map { [$0] } ?? [])
                        heard(user, at: now)
                        model[user]?.closed = false
                    case 6, 7:
                        let channel = room.member(user)?.channel ?? Endpoint(user, loop: loop)
                        take(
                            room.connectionClosed(userID: user, session: session, channel: channel, now: now)
                                .map { [$0] } ?? []
                        )
                        if !member.closed {
                            heard(user, at: now)
                            model[user]?.closed = true
                        }
                    case 8:
                        take(room.logout(userID: user, session: session, now: now))
                        model[user] = nil
                    default:
                        break  // falls silent, until chosen again
                    }
                }
            }
            passTime(to: Self.at(2_000))
            #expect(room.memberIDs.isEmpty, "every member left by the end")
            #expect(departures > 20, "the run made members leave for silence: \(departures)")
        }
    }

    @Test
    func aHeartbeatsSlotHintIsCheckedAndTheAckSaysWhereTheMemberIsNow() {
        Self.withLoop { loop in
            var room = ServerRoomState(roomID: "r1", timings: Self.timings)
            for (index, user) in ["A", "B", "C"].enumerated() {
                _ = room.login(
                    Self.login(user, session: UInt64(index + 1)),
                    from: Endpoint(user, loop: loop),
                    tokenValid: true,
                    now: Self.at(0)
                )
            }
            let c = SessionID(rawValue: 3)
            #expect(Self.answer(room.heartbeat(userID: "C", session: c, now: Self.at(1))) == "ack \(c) at 2")
            _ = room.logout(userID: "A", session: SessionID(rawValue: 1), now: Self.at(2))
            // C moved up when A left: its old hint (2) is out of range, so it is looked up, and told its new place.
            #expect(Self.answer(room.heartbeat(userID: "C", session: c, slot: 2, now: Self.at(3))) == "ack \(c) at 1")
            // A hint pointing at another member is not trusted: B's slot with C's session finds C.
            #expect(Self.answer(room.heartbeat(userID: "C", session: c, slot: 0, now: Self.at(4))) == "ack \(c) at 1")
            #expect(
                room.heartbeat(userID: "B", session: c, slot: 1, now: Self.at(5)).reply == .sessionUnknown(session: c),
                "a hint never lets a wrong session in"
            )
            #expect(room.member("C")?.lastHeard == Self.at(4))
        }
    }

    /// A room's session ID names one life of one server's room: it changes when the room empties and refills, and
    /// the same room of a server with another epoch (a restarted `serve`) never has the same one; epoch 0 is the
    /// default, so virtual-time runs stay reproducible.
    @Test
    func aRoomSessionIDIsNotRepeatedByARestartedServer() {
        Self.withLoop { loop in
            func lives(epoch: UInt64?) -> [String] {
                var room =
                    epoch.map { ServerRoomState(roomID: "r1", timings: Self.timings, epoch: $0) }
                    ?? ServerRoomState(roomID: "r1", timings: Self.timings)
                var ids: [String] = []
                for life in 0..<3 {
                    let b = Endpoint("B", loop: loop)
                    _ = room.login(
                        Self.login("B", session: UInt64(2 + life)),
                        from: b,
                        tokenValid: true,
                        now: Self.at(0)
                    )
                    ids.append(room.roomSessionID)
                    _ = room.logout(userID: "B", session: SessionID(rawValue: UInt64(2 + life)), now: Self.at(1))
                }
                return ids
            }
            let first = lives(epoch: nil)
            #expect(Set(first).count == 3, "each life of the room has its own ID")
            #expect(lives(epoch: 0) == first)
            let restarted = lives(epoch: 7_123_456)
            #expect(Set(restarted).isDisjoint(with: first))
        }
    }

    @Test
    func peersHearOfChangesInOrderBatchedByKindAndNeverOfOnesBeforeTheyJoined() {
        Self.withLoop { loop in
            var room = ServerRoomState(roomID: "r1", timings: Self.timings)
            let b = Endpoint("B", loop: loop)
            let b2 = room.login(Self.login("B", session: 2, notify: true), from: b, tokenValid: true, now: Self.at(0))
            #expect(
                Self.messages(b2).last
                    == #"B ← loginAccepted(session: 2, attempt: 0, roomSessionID: "\#(room.roomSessionID)", present: [])"#
            )
            _ = room.flushUpdates(now: Self.at(0.1))
            for (index, user) in ["C", "D"].enumerated() {
                _ = room.login(
                    Self.login(user, session: UInt64(10 + index)),
                    from: Endpoint(user, loop: loop),
                    tokenValid: true,
                    now: Self.at(1)
                )
            }
            _ = room.logout(userID: "C", session: SessionID(rawValue: 10), now: Self.at(1.05))
            let e = Endpoint("E", loop: loop)
            let joined = room.login(
                Self.login("E", session: 20, notify: true),
                from: e,
                tokenValid: true,
                now: Self.at(1.06)
            )
            #expect(Self.messages(joined).last?.hasSuffix(#"present: ["B", "D"])"#) == true)
            let flushed = Self.messages(room.flushUpdates(now: Self.at(1.1)))
            #expect(
                flushed == [
                    #"B ← userUpdate(RoomLinkEngine.PresenceChange.add, users: ["C", "D"], reason: nil)"#,
                    #"B ← userUpdate(RoomLinkEngine.PresenceChange.delete, users: ["C"], reason: Optional(RoomLinkEngine.DepartureReason.quit))"#,
                    #"B ← userUpdate(RoomLinkEngine.PresenceChange.add, users: ["E"], reason: nil)"#,
                ],
                "E joined after C and D: its first list has them; it hears of nothing older"
            )
        }
    }

    /// A member logging in again while the room still holds it (a storm's comeback) keeps its place and its heard-from
    /// order, and takes what the new login says: its channel, its notify flag, and — hidden now — a leave for peers.
    @Test
    func aLoginOfAMemberTheRoomStillHoldsUpdatesItsRecordInPlace() throws {
        try Self.withLoop { loop in
            var room = ServerRoomState(roomID: "r1", timings: Self.timings)
            let peer = Endpoint("peer", loop: loop)
            let before = Endpoint("before", loop: loop)
            let after = Endpoint("after", loop: loop)
            _ = room.login(Self.login("B", session: 9, notify: true), from: peer, tokenValid: true, now: Self.at(0))
            _ = room.login(Self.login("A", session: 1), from: before, tokenValid: true, now: Self.at(0))
            _ = room.flushUpdates(now: Self.at(0.1))

            let again = Self.messages(
                room.login(
                    LoginRequest(
                        userID: "A",
                        session: SessionID(rawValue: 1),
                        userStatusNotify: true,
                        kind: .reconnect,
                        hidden: true
                    ),
                    from: after,
                    tokenValid: true,
                    now: Self.at(5)
                )
            )
            #expect(!again.contains { $0.contains("kicked") }, "the same session is not a duplicate")
            let flush = Self.at(5).advanced(by: Self.timings.userUpdateDelay)
            #expect(again.contains("flush \(flush.milliseconds)"), "peers hear of the change at a flush: \(again)")
            let member = try #require(room.member("A") as ServerRoomState.Member?)
            #expect(member.session == SessionID(rawValue: 1))
            #expect((member.channel as? Endpoint) === after, "its messages go to the channel it logged in on last")
            #expect(member.userStatusNotify == true)
            #expect(member.hidden == true)
            #expect(member.lastHeard == Self.at(5))
            #expect(room.memberIDs == ["B", "A"], "it keeps its place")
            #expect(
                Self.messages(room.flushUpdates(now: flush)) == [
                    #"peer ← userUpdate(RoomLinkEngine.PresenceChange.delete, users: ["A"], reason: Optional(RoomLinkEngine.DepartureReason.becomeAudience))"#
                ]
            )
        }
    }

    @Test
    func aSecondSessionOfAUserReplacesTheFirstSilentlyForPeers() {
        Self.withLoop { loop in
            var room = ServerRoomState(roomID: "r1", timings: Self.timings)
            let phone = Endpoint("phone", loop: loop)
            let tablet = Endpoint("tablet", loop: loop)
            _ = room.login(Self.login("A", session: 1), from: phone, tokenValid: true, now: Self.at(0))
            _ = room.flushUpdates(now: Self.at(0.1))
            let second = Self.messages(
                room.login(Self.login("A", session: 2), from: tablet, tokenValid: true, now: Self.at(5))
            )
            #expect(second.first == "phone ← kicked(session: 1, reason: RoomLinkEngine.KickReason.duplicateLogin)")
            #expect(!second.contains { $0.hasPrefix("flush") }, "no join or leave for peers")
            #expect(room.member("A")?.session == SessionID(rawValue: 2))
            let resumed = Self.messages(
                room.login(
                    LoginRequest(userID: "A", session: SessionID(rawValue: 2), kind: .reconnect),
                    from: tablet,
                    tokenValid: true,
                    now: Self.at(6)
                )
            )
            #expect(resumed.count == 1 && resumed[0].hasPrefix("tablet ← loginAccepted"), "a resume is silent")
        }
    }

    @Test
    func aBadTokenAndAFullRoomAreRefusedAndAnUnrenewedTokenIsKicked() {
        Self.withLoop { loop in
            var room = ServerRoomState(roomID: "r1", timings: Self.timings)
            let a = Endpoint("A", loop: loop)
            #expect(
                Self.messages(room.login(Self.login("A", session: 1), from: a, tokenValid: false, now: Self.at(0)))
                    == ["A ← loginRejected(session: 1, attempt: 0, reason: RoomLinkEngine.LoginRejection.tokenInvalid)"]
            )
            _ = room.login(Self.login("A", session: 1, cap: 1), from: a, tokenValid: true, now: Self.at(0))
            #expect(room.maxMemberCount == 1)
            #expect(
                Self.messages(
                    room.login(
                        Self.login("B", session: 2),
                        from: Endpoint("B", loop: loop),
                        tokenValid: true,
                        now: Self.at(1)
                    )
                ) == [
                    "B ← loginRejected(session: 2, attempt: 0, reason: RoomLinkEngine.LoginRejection.memberCapReached)"
                ]
            )
            #expect(Self.messages(room.tokenExpired(userID: "A", now: Self.at(10))).last == "token A 40000.0")
            #expect(room.tokenDeadlinePassed(userID: "A", now: Self.at(39)).isEmpty)
            let kicked = Self.messages(room.tokenDeadlinePassed(userID: "A", now: Self.at(40)))
            #expect(kicked.first == "A ← kicked(session: 1, reason: RoomLinkEngine.KickReason.tokenExpired)")
            #expect(room.memberIDs.isEmpty)
        }
    }

    /// A member whose data flows again over a connection it did not log in on is answered there from then on; a
    /// session that is not the member's moves nothing.
    @Test
    func aResumedMemberIsAnsweredOnItsNewConnection() {
        Self.withLoop { loop in
            var room = ServerRoomState(roomID: "r1", timings: Self.timings)
            let old = Endpoint("A-old", loop: loop)
            let new = Endpoint("A-new", loop: loop)
            let stranger = Endpoint("M", loop: loop)
            _ = room.login(Self.login("A", session: 1), from: old, tokenValid: true, now: Self.at(0))
            room.rebind(userID: "A", session: SessionID(rawValue: 7), to: stranger)
            #expect(
                Self.messages(room.kick(userID: "A", reason: .admin, now: Self.at(1))).first?.hasPrefix("A-old") == true
            )
            _ = room.login(Self.login("A", session: 2), from: old, tokenValid: true, now: Self.at(2))
            room.rebind(userID: "A", session: SessionID(rawValue: 2), to: new)
            #expect(
                Self.messages(room.kick(userID: "A", reason: .admin, now: Self.at(3))).first?.hasPrefix("A-new") == true
            )
        }
    }
    /// With capacity modelled, the room tells the server's own delay apart: a member dropped while a heartbeat of its
    /// waited for a worker is a false departure (counted first), and that heartbeat, answered after the drop, came too
    /// late; a later login of the session clears it. Without a capacity, neither is counted.
    @Test
    func aModelledRoomCountsFalseDeparturesAndLateHeartbeats() {
        Self.withLoop { loop in
            var room = ServerRoomState(roomID: "r1", timings: Self.timings, modelsCapacity: true)
            let (a, b) = (Endpoint("A", loop: loop), Endpoint("B", loop: loop))
            let (sessionA, sessionB) = (SessionID(rawValue: 1), SessionID(rawValue: 2))
            _ = room.login(Self.login("A", session: 1), from: a, tokenValid: true, now: Self.at(0))
            _ = room.login(Self.login("B", session: 2), from: b, tokenValid: true, now: Self.at(0))
            // A's heartbeat arrived at 89 s and waits for a worker; B's waited and was served.
            room.heartbeatQueued(session: sessionA)
            room.heartbeatQueued(session: sessionB)
            room.heartbeatServed(session: sessionB)
            let dropped = Self.messages(room.deadlinePassed(now: Self.at(90)))
            #expect(dropped.first == "false departures 1")
            #expect(room.memberIDs.isEmpty)
            room.heartbeatServed(session: sessionA)
            let reply = room.heartbeat(userID: "A", session: sessionA, now: Self.at(91)).reply
            #expect(room.isLate(reply, session: sessionA, arrivedAt: Self.at(89)))
            #expect(!room.isLate(reply, session: sessionA, arrivedAt: Self.at(90.5)), "arrived after the drop")
            room.loginArrived(session: sessionA)
            #expect(!room.isLate(reply, session: sessionA, arrivedAt: Self.at(89)))

            var plain = ServerRoomState(roomID: "r1", timings: Self.timings)
            _ = plain.login(Self.login("A", session: 1), from: a, tokenValid: true, now: Self.at(0))
            plain.heartbeatQueued(session: sessionA)
            #expect(!Self.messages(plain.deadlinePassed(now: Self.at(90))).contains { $0.hasPrefix("false") })
            #expect(!plain.isLate(.sessionUnknown(session: sessionA), session: sessionA, arrivedAt: Self.at(89)))
        }
    }

    @Test func aRoomThatReportsItsMembershipSaysWhoJoinedAndLeftAndWhy() {
        Self.withLoop { loop in
            let timings = DialectName.livekit.engineTimings().server
            var room = ServerRoomState(roomID: "r", timings: timings, reportsMembership: true)
            func membership(_ effects: [ServerRoomState.Effect]) -> [MembershipChange] {
                effects.compactMap { if case .membership(let change) = $0 { change } else { nil } }
            }
            let alice = Endpoint("alice", loop: loop)
            let a1 = SessionID(rawValue: 1)
            let a2 = SessionID(rawValue: 2)
            #expect(
                membership(room.login(Self.login("alice", session: 1), from: alice, tokenValid: true, now: Self.at(0)))
                    == [.joined(userID: "alice", session: a1)]
            )
            // The same session again (a resume, a reconnection) is no new participant.
            var resume = Self.login("alice", session: 1)
            resume.kind = .resume
            #expect(membership(room.login(resume, from: alice, tokenValid: true, now: Self.at(1))).isEmpty)
            // A newer session of the same identity replaces the older one.
            #expect(
                membership(room.login(Self.login("alice", session: 2), from: alice, tokenValid: true, now: Self.at(2)))
                    == [
                        .left(userID: "alice", session: a1, reason: .dropped, kicked: .duplicateLogin),
                        .joined(userID: "alice", session: a2),
                    ]
            )
            #expect(
                membership(room.kick(userID: "alice", reason: .admin, now: Self.at(3)))
                    == [.left(userID: "alice", session: a2, reason: .dropped, kicked: .admin)]
            )
            _ = room.login(
                Self.login("bob", session: 3),
                from: Endpoint("bob", loop: loop),
                tokenValid: true,
                now: Self.at(4)
            )
            #expect(
                membership(room.logout(userID: "bob", session: SessionID(rawValue: 3), now: Self.at(5)))
                    == [.left(userID: "bob", session: SessionID(rawValue: 3), reason: .quit, kicked: nil)]
            )
            // Silence past the heartbeat timeout.
            _ = room.login(
                Self.login("carol", session: 4),
                from: Endpoint("carol", loop: loop),
                tokenValid: true,
                now: Self.at(6)
            )
            let timedOut = room.deadlinePassed(now: Self.at(7).advanced(by: timings.heartbeatTimeout))
            #expect(
                membership(timedOut) == [
                    .left(userID: "carol", session: SessionID(rawValue: 4), reason: .dropped, kicked: nil)
                ]
            )
            // An audience member (hidden from its peers) joins as such; a switch of role is no join nor leave.
            var audience = Self.login("dan", session: 5)
            audience.hidden = true
            let dan = SessionID(rawValue: 5)
            #expect(
                membership(room.login(audience, from: Endpoint("dan", loop: loop), tokenValid: true, now: Self.at(8)))
                    == [.joined(userID: "dan", session: dan, audience: true)]
            )
            #expect(
                membership(room.setHidden(userID: "dan", session: dan, hidden: false, now: Self.at(9)))
                    == [.roleChanged(userID: "dan", session: dan, audience: false)]
            )
            #expect(membership(room.setHidden(userID: "dan", session: dan, hidden: false, now: Self.at(10))).isEmpty)
            // A relogin of the same session that changes its role says so.
            #expect(
                membership(room.login(audience, from: Endpoint("dan", loop: loop), tokenValid: true, now: Self.at(11)))
                    == [.roleChanged(userID: "dan", session: dan, audience: true)]
            )
            // A room that does not report builds no such effect.
            var quiet = ServerRoomState(roomID: "q", timings: timings)
            #expect(
                membership(quiet.login(Self.login("dave", session: 5), from: alice, tokenValid: true, now: Self.at(0)))
                    .isEmpty
            )
        }
    }

    /// A member's record stays packed (its one-byte fields fill the optional instant's tail, its queue position has no
    /// optional's tag, its user ID is the table's key alone): every room keeps one per member, and in a cluster spread
    /// over nodes every node keeps every room's.
    @Test func aMemberRecordStaysPacked() {
        #expect(MemoryLayout<ServerRoomState.Record>.size <= 88)
        #expect(MemoryLayout<ServerRoomState.Record>.stride <= 88)
    }

    /// An entry of the deadline timer's list is its member's place and user ID alone (24 bytes; the time is the
    /// member's): a room keeps up to one per member.
    @Test func aQueuedDeadlineStaysPacked() {
        #expect(ServerRoomState.heardEntryStride <= 24)
    }

    /// With continuous data (Agora) a member's deadline runs only while its data has stopped: data that flows again
    /// takes it out of the queue, so the deadline of its closed connection passes without a word (and arms nothing),
    /// and when its data stops again it leaves exactly the timeout after that — not earlier, however the queue held
    /// its first close.
    /// A member that came back on a newer connection with its session (a reconnection) is carried by that one: the
    /// old connection's close, held in a black hole and let go when the path carries again — and the data it held,
    /// delivered with it — change nothing, in every dialect; the newer connection's own close still counts.
    @Test(arguments: [ServerTimings.zego, .agora, .liveKit])
    func aLateCloseOfAConnectionTheMemberLeftChangesNothing(timings: ServerTimings) {
        Self.withLoop { loop in
            var room = ServerRoomState(roomID: "r1", timings: timings)
            let session = SessionID(rawValue: 1)
            let old = Endpoint("A old", loop: loop)
            let new = Endpoint("A new", loop: loop)
            _ = room.login(Self.login("A", session: 1), from: old, tokenValid: true, now: Self.at(0))
            // The old connection's data stops (its path went silent): the room hears it, and the member's timeout runs.
            _ = room.connectionClosed(userID: "A", session: session, channel: old, now: Self.at(5))
            var again = Self.login("A", session: 1)
            again.kind = .reconnect
            _ = room.login(again, from: new, tokenValid: true, now: Self.at(9))
            #expect(room.member("A")?.channel === new)
            // The hole lifts: the old connection's held data and then its close arrive.
            let late = room.dataResumed(userID: "A", session: session, channel: old, now: Self.at(10))
            #expect(late.reply == nil && late.arm == nil, "the old connection's data is not the member's")
            #expect(room.connectionClosed(userID: "A", session: session, channel: old, now: Self.at(11)) == nil)
            #expect(room.member("A")?.channel === new)
            // Heard on the new connection as its dialect hears it (heartbeats, or data that flows), the member stays
            // through several timeouts.
            let timeout = Double(timings.heartbeatTimeout.components.seconds)
            var now = 9.0
            while now < 9 + 3 * timeout {
                now += 5
                if !timings.continuousData { _ = room.heartbeat(userID: "A", session: session, now: Self.at(now)) }
                _ = room.deadlinePassed(now: Self.at(now))
            }
            #expect(room.memberIDs == ["A"])
            // The new connection's close is the member's: its timeout runs from it.
            _ = room.connectionClosed(userID: "A", session: session, channel: new, now: Self.at(now))
            _ = room.deadlinePassed(now: Self.at(now + timeout - 1))
            #expect(room.memberIDs == ["A"])
            _ = room.deadlinePassed(now: Self.at(now + timeout))
            #expect(room.memberIDs.isEmpty)
        }
    }

    /// Data that flows again on the connection that carries a member is heard; on a connection of a session the room
    /// no longer holds, it is answered as a heartbeat would be.
    @Test func dataResumedOnTheCarryingConnectionIsHeardAndOnAGoneSessionIsAnswered() {
        Self.withLoop { loop in
            var room = ServerRoomState(roomID: "r1", timings: .agora)
            let session = SessionID(rawValue: 1)
            let a = Endpoint("A", loop: loop)
            _ = room.login(Self.login("A", session: 1), from: a, tokenValid: true, now: Self.at(0))
            _ = room.connectionClosed(userID: "A", session: session, channel: a, now: Self.at(10))
            let resumed = room.dataResumed(userID: "A", session: session, channel: a, now: Self.at(15))
            #expect(resumed.reply == nil)
            #expect(room.deadlinePassed(now: Self.at(30)).isEmpty, "heard again: its deadline is gone")
            #expect(room.memberIDs == ["A"])
            let gone = room.dataResumed(userID: "A", session: SessionID(rawValue: 9), channel: a, now: Self.at(31))
            #expect(gone.reply == .sessionUnknown(session: SessionID(rawValue: 9)))
        }
    }

    @Test func dataThatFlowsAgainCancelsAClosedConnectionsDeadline() {
        Self.withLoop { loop in
            var room = ServerRoomState(roomID: "r1", timings: .agora)
            let session = SessionID(rawValue: 1)
            let a = Endpoint("A", loop: loop)
            let login = room.login(Self.login("A", session: 1), from: a, tokenValid: true, now: Self.at(0))
            #expect(!Self.messages(login).contains { $0.hasPrefix("deadline") }, "data flows from the login on")
            let closed = room.connectionClosed(userID: "A", session: session, channel: a, now: Self.at(10))
            #expect(closed.map { Self.messages([$0]) } == ["deadline 30000.0"])
            _ = room.heartbeat(userID: "A", session: session, now: Self.at(15))
            #expect(room.deadlinePassed(now: Self.at(30)).isEmpty, "its data flowed again: no deadline left")
            #expect(room.memberIDs == ["A"])
            let again = room.connectionClosed(userID: "A", session: session, channel: a, now: Self.at(40))
            #expect(again.map { Self.messages([$0]) } == ["deadline 60000.0"])
            #expect(Self.messages(room.deadlinePassed(now: Self.at(59.999))) == ["deadline 60000.0"])
            #expect(room.memberIDs == ["A"])
            _ = room.deadlinePassed(now: Self.at(60))
            #expect(room.memberIDs.isEmpty)
        }
    }

    /// A room told its size makes room for it at once and keeps it as members come and go, where growing by
    /// doubling would have kept space for 128 of a hundred; what the room does is the same.
    @Test func aRoomToldItsSizeMakesRoomOnce() {
        Self.withLoop { loop in
            var sized = ServerRoomState(roomID: "r", timings: Self.timings)
            var grown = ServerRoomState(roomID: "r", timings: Self.timings)
            sized.reserveMembers(100)
            let reserved = sized.memberCapacity
            #expect(reserved >= 100 && reserved < 128)
            for index in 0..<100 {
                let login = Self.login("u\(index)", session: UInt64(index + 1), notify: index % 2 == 0)
                let channel = Endpoint("u\(index)", loop: loop)
                let effects = sized.login(login, from: channel, tokenValid: true, now: Self.at(Double(index)))
                #expect(
                    Self.messages(effects)
                        == Self.messages(
                            grown.login(login, from: channel, tokenValid: true, now: Self.at(Double(index)))
                        )
                )
            }
            #expect(sized.memberCapacity == reserved && grown.memberCapacity >= 128)
            #expect(sized.memberIDs == grown.memberIDs)
        }
    }

    /// Where the room notes its member table to be, for a simulation's lanes to load a member's record ahead of its
    /// heartbeat, is where the table is, as members come and go and the table grows: a stale note would only waste
    /// the loads, but then every heartbeat would wait for its record again.
    @Test func theNotedMemberTableFollowsTheTable() {
        Self.withLoop { loop in
            var room = ServerRoomState(roomID: "r", timings: Self.timings)
            #expect(room.memberTableAddresses.noted == [0, 0])
            room.prefetchMember(at: 0)  // nothing noted: loads nothing, and changes nothing
            var checks = 0
            func expectNoted() {
                let addresses = room.memberTableAddresses
                #expect(addresses.noted == addresses.actual)
                #expect(!addresses.noted.contains(0))
                checks += 1
            }
            // Growing one login at a time (the table moves as it doubles), then made room for, then shrinking.
            for index in 0..<40 {
                let login = Self.login("u\(index)", session: UInt64(index + 1))
                _ = room.login(login, from: Endpoint("u\(index)", loop: loop), tokenValid: true, now: Self.at(0))
                expectNoted()
                room.prefetchMember(at: Int32(index))
            }
            room.reserveMembers(500)
            expectNoted()
            for index in stride(from: 0, to: 40, by: 3) {
                _ = room.logout(userID: "u\(index)", session: SessionID(rawValue: UInt64(index + 1)), now: Self.at(1))
                expectNoted()
            }
            // A heartbeat at a slot the note covers still finds its member: the prefetch changed nothing.
            #expect(
                Self.answer(room.heartbeat(userID: "u1", session: SessionID(rawValue: 2), slot: 0, now: Self.at(2)))
                    == "ack 2 at 0"
            )
            #expect(checks == 55)
        }
    }

    /// What a member reads as is what the room keeps under its user ID: the view names the user, and the record's
    /// fields come through.
    @Test func aMemberReadsAsTheRoomKeepsIt() {
        Self.withLoop { loop in
            var room = ServerRoomState(roomID: "r", timings: Self.timings)
            let alice = Endpoint("alice", loop: loop)
            _ = room.login(Self.login("alice", session: 1), from: alice, tokenValid: true, now: Self.at(0))
            _ = room.login(
                Self.login("bob", session: 2),
                from: Endpoint("bob", loop: loop),
                tokenValid: true,
                now: Self.at(1)
            )
            let member = room.member("alice")
            #expect(member?.userID == "alice" && member?.session == SessionID(rawValue: 1))
            #expect(member?.channel === alice && member?.lastHeard == Self.at(0) && member?.node == nil)
            #expect(room.localMembers.map(\.userID) == ["alice", "bob"])
            #expect(room.member("carol") == nil)
        }
    }
}
