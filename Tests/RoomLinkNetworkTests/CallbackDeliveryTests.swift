import Foundation
import RoomLink
import RoomLinkNetwork
import Testing

/// The room callbacks' decisions as values, in virtual time: each vendor's retries and give-up, LiveKit's per-room
/// order and bounds, the seeded disorder; the vendors' formats and signatures against their published test vectors;
/// and `report callbacks`' audit on hand-made histories.
@Suite
struct CallbackDeliveryTests {
    static func callback(
        _ id: UInt64,
        _ event: RoomCallback.Event = .joined,
        room: String = "r1",
        user: String = "u1",
        session: String = "s1",
        atMs: Int64 = 1_700_000_000_000
    ) -> RoomCallback {
        RoomCallback(
            id: id,
            event: event,
            roomID: room,
            roomSession: "life1",
            userID: user,
            session: session,
            reason: event == .left ? .timeout : nil,
            atMs: atMs,
            joinedAtMs: atMs - 61_000,
            userSequence: id,
            roomSequence: id,
            members: 1
        )
    }

    static func at(_ seconds: Double) -> RuntimeInstant {
        RuntimeInstant(nanoseconds: Int64(seconds * 1e9))
    }

    /// The tickets of the sends among `actions`.
    static func sends(_ actions: [CallbackDeliveryState.Action]) -> [(ticket: UInt64, id: UInt64, attempt: Int)] {
        actions.compactMap {
            if case .send(let ticket, let callback, let attempt, _) = $0 { (ticket, callback.id, attempt) } else { nil }
        }
    }

    static func outcomes(_ actions: [CallbackDeliveryState.Action]) -> [CallbackDeliveryState.Outcome] {
        actions.compactMap { if case .settled(_, _, let outcome) = $0 { outcome } else { nil } }
    }

    /// Fails every attempt of one callback with `answer`, waking at each retry's time; returns the retry delays and
    /// the outcome.
    static func failForever(
        _ rules: CallbackDeliveryRules,
        _ answer: CallbackAnswer
    ) -> (delays: [Duration], outcome: CallbackDeliveryState.Outcome?) {
        var state = CallbackDeliveryState(rules: rules)
        var now = at(0)
        var actions = state.emit(callback(1), at: now)
        var delays: [Duration] = []
        for _ in 0..<20 {
            guard let send = sends(actions).first else { break }
            actions = state.answered(send.ticket, answer, at: now)
            if let outcome = outcomes(actions).first { return (delays, outcome) }
            for case .retry(_, _, _, _, let delay) in actions { delays.append(delay) }
            if sends(actions).isEmpty {
                // Not before its time: a wake just short of it sends nothing.
                let due = state.nextWake!
                #expect(sends(state.wake(at: RuntimeInstant(nanoseconds: due.nanoseconds - 1))).isEmpty)
                now = due
                actions = state.wake(at: now)
            }
        }
        return (delays, nil)
    }

    @Test func agoraSendsAgainAtOnceThenAfterGrowingGapsThreeRetriesInAll() {
        let (delays, outcome) = Self.failForever(.vendor(.agora), .answered(status: 500, bodyIsJSON: true))
        #expect(delays == [.zero, .seconds(3), .seconds(9)])
        #expect(outcome == .lost(.status, attempts: 4))
    }

    @Test func agoraCountsOnlyA200WithAJSONBodyAsDelivered() {
        let rules = CallbackDeliveryRules.vendor(.agora)
        #expect(rules.judge(.answered(status: 200, bodyIsJSON: true)) == .delivered)
        #expect(rules.judge(.answered(status: 200, bodyIsJSON: false)) == .failed(.notJSON, retried: true))
        #expect(rules.judge(.answered(status: 204, bodyIsJSON: false)) == .failed(.status, retried: true))
        let (_, outcome) = Self.failForever(rules, .answered(status: 200, bodyIsJSON: false))
        #expect(outcome == .lost(.notJSON, attempts: 4))
    }

    @Test func zegoRetriesAfter2_4_8_16And32SecondsThenTheCallbackIsLost() {
        let (delays, outcome) = Self.failForever(.vendor(.zego), .failed(.timeout))
        #expect(delays == [2, 4, 8, 16, 32].map { Duration.seconds($0) })
        #expect(outcome == .lost(.timeout, attempts: 6))
        #expect(CallbackDeliveryRules.vendor(.zego).judge(.answered(status: 204, bodyIsJSON: false)) == .delivered)
    }

    @Test func liveKitRetriesTransportErrors429And5xxButNot501NorOther4xx() {
        let rules = CallbackDeliveryRules.vendor(.livekit)
        let (delays, outcome) = Self.failForever(rules, .answered(status: 429, bodyIsJSON: false))
        #expect(delays == [1, 2, 4, 8].map { Duration.seconds($0) })
        #expect(outcome == .lost(.status, attempts: 5))
        #expect(rules.judge(.answered(status: 503, bodyIsJSON: false)) == .failed(.status, retried: true))
        #expect(rules.judge(.failed(.refused)) == .failed(.refused, retried: true))
        #expect(rules.judge(.answered(status: 404, bodyIsJSON: false)) == .delivered)
        #expect(rules.judge(.answered(status: 501, bodyIsJSON: false)) == .delivered)
    }

    @Test func liveKitDeliversEachRoomInOrderOneAtATimeAndRoomsSideBySide() {
        var state = CallbackDeliveryState(rules: .vendor(.livekit))
        let first = Self.sends(state.emit(Self.callback(1, room: "a"), at: Self.at(0)))
        #expect(Self.sends(state.emit(Self.callback(2, room: "a"), at: Self.at(0))).isEmpty)
        let other = Self.sends(state.emit(Self.callback(3, room: "b"), at: Self.at(0)))
        #expect(first.map(\.id) == [1])
        #expect(other.map(\.id) == [3])
        // The head fails: the next of its room waits through the retry.
        let retry = state.answered(first[0].ticket, .failed(.closed), at: Self.at(0.1))
        #expect(Self.sends(retry).isEmpty)
        let again = Self.sends(state.wake(at: Self.at(1.1)))
        #expect(again.map(\.id) == [1])
        #expect(again.first?.attempt == 2)
        let next = Self.sends(
            state.answered(again[0].ticket, .answered(status: 200, bodyIsJSON: false), at: Self.at(1.2))
        )
        #expect(next.map(\.id) == [2])
    }

    @Test func liveKitDropsPast200QueuedInARoomAndEventsOver30SecondsOld() {
        var state = CallbackDeliveryState(rules: .vendor(.livekit))
        var dropped = 0
        for id in 1...205 {
            dropped +=
                Self.outcomes(state.emit(Self.callback(UInt64(id)), at: Self.at(0)))
                .filter { $0 == .dropped(.roomQueueFull) }.count
        }
        #expect(dropped == 5)
        #expect(state.pending == 200)
        // The head is answered after 31 s: every other event of the room is too old by then.
        let actions = state.answered(1, .answered(status: 200, bodyIsJSON: false), at: Self.at(31))
        let outcomes = Self.outcomes(actions)
        #expect(outcomes.first == .delivered(attempts: 1))
        #expect(outcomes.dropFirst().allSatisfy { $0 == .dropped(.tooOld) })
        #expect(outcomes.count == 200)
        #expect(state.pending == 0)
    }

    @Test func pendingCallbacksAreBoundedWhateverTheReceiverDoes() {
        var rules = CallbackDeliveryRules.vendor(.zego, capacity: 50)
        rules.concurrency = 4
        var state = CallbackDeliveryState(rules: rules)
        var dropped = 0
        for id in 1...120 {
            let actions = state.emit(Self.callback(UInt64(id), user: "u\(id)"), at: Self.at(0))
            dropped += Self.outcomes(actions).filter { $0 == .dropped(.queueFull) }.count
        }
        #expect(state.pending == 50)
        #expect(state.requestsInFlight == 4)
        #expect(dropped == 70)
        #expect(state.peakPending == 50)
    }

    @Test func disorderIsSeededByTheCallbacksNotByTheOrderTheyCome() {
        let callbacks = (1...400).map { Self.callback(UInt64($0), user: "u\($0)", session: "s\($0)") }
        func marks(_ order: [RoomCallback], seed: UInt64) -> Set<String> {
            var state = CallbackDeliveryState(rules: .vendor(.agora, disorder: 0.2, seed: seed))
            var marked: Set<String> = []
            for callback in order {
                for case .marked(let callback, let copy, let delay) in state.emit(callback, at: Self.at(0)) {
                    marked.insert("\(callback.userID) \(copy) \(delay)")
                }
            }
            return marked
        }
        let forward = marks(callbacks, seed: 7)
        #expect(forward == marks(callbacks.reversed(), seed: 7))
        #expect(forward != marks(callbacks, seed: 8))
        // About a fifth played out of order, half of them duplicates.
        #expect((50...110).contains(forward.count))
        #expect(forward.contains { $0.contains("duplicate") } && forward.contains { $0.contains("original") })
        // An ideal vendor, and LiveKit, play none.
        #expect(marks(callbacks, seed: 0).count > 0)
        var ideal = CallbackDeliveryState(rules: .vendor(.agora, disorder: 0))
        var liveKit = CallbackDeliveryState(rules: .vendor(.livekit, disorder: 1))
        for callback in callbacks {
            #expect(ideal.emit(callback, at: Self.at(0)).allSatisfy { if case .marked = $0 { false } else { true } })
            #expect(liveKit.emit(callback, at: Self.at(0)).allSatisfy { if case .marked = $0 { false } else { true } })
        }
    }

    @Test func aLateCallbackIsSentAfterItsDelayAndADuplicateBoth() {
        var state = CallbackDeliveryState(rules: .vendor(.zego, disorder: 1))
        let actions = state.emit(Self.callback(1), at: Self.at(0))
        guard case .marked(_, .original, let delay)? = actions.first else {
            Issue.record("expected the callback held back: \(actions)")
            return
        }
        #expect(delay >= .seconds(1) && delay < .seconds(10))
        #expect(Self.sends(actions).isEmpty)
        let due = Self.at(0).advanced(by: delay)
        #expect(Self.sends(state.wake(at: RuntimeInstant(nanoseconds: due.nanoseconds - 1))).isEmpty)
        #expect(Self.sends(state.wake(at: due)).map(\.id) == [1])

        var agora = CallbackDeliveryState(rules: .vendor(.agora, disorder: 1))
        var copies = 0
        for id in 1...40 {
            let emitted = agora.emit(Self.callback(UInt64(id), user: "u\(id)"), at: Self.at(0))
            copies += emitted.filter { if case .marked(_, .duplicate, _) = $0 { true } else { false } }.count
        }
        // Every one duplicated or held back; a duplicate is sent both at once and after its delay.
        #expect(copies > 5 && copies < 35)
        #expect(agora.pending == 40 + copies)
    }

    // MARK: - Formats

    @Test func agorasPublishedSignatureTestVector() {
        // Agora's "Signature verification" page: secret "secret", this raw body.
        let body = Array(
            #"{"eventMs":1560408533119,"eventType":10,"noticeId":"4eb720f0-8da7-11e9-a43e-53f411c2761f","notifyMs":1560408533119,"payload":{"a":"1","b":2},"productId":1}"#
                .utf8
        )
        let headers = AgoraCallbackFormat.signatures(of: body, secret: "secret")
        #expect(headers[0] == .init("Agora-Signature", "033c62f40f687675f17f0f41f91a40c71c0f134c"))
        #expect(
            headers[1]
                == .init("Agora-Signature-V2", "6d3320c60b11101395b7fc8f9068748808a0aa1bfa064438e39d1bc2c7d74d99")
        )
    }

    @Test func agorasNoticeCarriesTheDocumentedFieldsAndIsSignedAnewOnEachResend() throws {
        let format = AgoraCallbackFormat(secret: "ncs")
        var leave = Self.callback(9, .left, user: "42")
        leave.reason = .kicked
        let first = format.request(for: leave, attempt: 1, sentAtMs: 1_700_000_000_500)
        let again = format.request(for: leave, attempt: 2, sentAtMs: 1_700_000_003_500)
        let notice = try #require(try JSONSerialization.jsonObject(with: Data(first.body)) as? [String: Any])
        let payload = try #require(notice["payload"] as? [String: Any])
        #expect(notice["eventType"] as? Int == 108)
        #expect(notice["productId"] as? Int == 1)
        #expect(notice["notifyMs"] as? Int64 == 1_700_000_000_500)
        #expect(notice["sid"] is String)
        #expect(payload["channelName"] as? String == "r1")
        #expect(payload["uid"] as? Int == 42)
        #expect(payload["account"] as? String == "42")
        #expect(payload["clientSeq"] as? Int == 9)
        #expect(payload["reason"] as? Int == 3)
        #expect(payload["duration"] as? Int == 61)
        #expect(payload["ts"] as? Int == 1_700_000_000)
        let resent = try #require(try JSONSerialization.jsonObject(with: Data(again.body)) as? [String: Any])
        #expect(resent["noticeId"] as? String == notice["noticeId"] as? String)
        #expect(resent["notifyMs"] as? Int64 == 1_700_000_003_500)
        #expect(first.headers != again.headers)
        #expect(first.headers == AgoraCallbackFormat.signatures(of: first.body, secret: "ncs"))
        let live = AgoraCallbackFormat(secret: "s", profile: .live)
        #expect(live.eventType(of: Self.callback(1)) == 103)
        #expect(live.eventType(of: Self.callback(1, .left)) == 104)
        var listener = Self.callback(1)
        listener.audience = true
        #expect(live.eventType(of: listener) == 105)
        listener.event = .left
        #expect(live.eventType(of: listener) == 106)
        listener.event = .roleChanged
        #expect(live.eventType(of: listener) == 112)
        listener.audience = false
        #expect(live.eventType(of: listener) == 111)
        #expect(live.sends(.roleChanged) && !format.sends(.roleChanged))
        #expect(format.eventType(of: Self.callback(1, .roomCreated)) == 101)
        #expect(format.eventType(of: Self.callback(1, .roomDestroyed)) == 102)
        #expect(RoomCallback.LeaveReason.allCases.map(AgoraCallbackFormat.reason) == [1, 2, 3, 5, 12])
    }

    @Test func zegosCallbacksAreStringsSignedAsItsSampleChecks() throws {
        let format = ZegoCallbackFormat(appID: "1234", secret: "zsecret")
        let request = format.request(for: Self.callback(5, .left), attempt: 1, sentAtMs: 1_700_000_000_900)
        let body = try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
        #expect(body.values.allSatisfy { $0 is String })
        #expect(body["event"] as? String == "room_logout")
        #expect(body["appid"] as? String == "1234")
        #expect(body["timestamp"] as? String == "1700000000")
        #expect(body["room_seq"] as? String == "life1")
        #expect(body["session_id"] as? String == "s1")
        #expect(body["login_time"] as? String == "1699999939000")
        #expect(body["logout_time"] as? String == "1700000000000")
        #expect(body["reason"] as? String == "1")
        #expect(body["user_update_seq"] as? String == "5")
        // ZEGO's sample: sort the secret, timestamp and nonce as strings, concatenate, SHA-1.
        let nonce = try #require(body["nonce"] as? String)
        let expected = ZegoCallbackFormat.signature(secret: "zsecret", timestamp: "1700000000", nonce: nonce)
        #expect(body["signature"] as? String == expected)
        // Sorted as strings: "a", "b", "c" — and SHA-1 of "abc" is FIPS 180's own test vector.
        #expect(
            ZegoCallbackFormat.signature(secret: "b", timestamp: "a", nonce: "c")
                == "a9993e364706816aba3e25717850c26c9cd0d89d"
        )
        #expect(!format.sends(.roomCreated) && format.sends(.joined))
        #expect(RoomCallback.LeaveReason.allCases.map(ZegoCallbackFormat.reason) == [0, 1, 3, 3, 4])
    }

    // MARK: - The audit

    /// A truth file's lines.
    static func truth(_ lines: [[String: Any]]) -> [UInt8] {
        Array(
            lines.map { String(decoding: try! JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }
                .joined(separator: "\n").utf8
        )
    }

    static func event(_ id: Int, _ event: String, _ user: String, t: Int, room: String = "r") -> [String: Any] {
        ["id": id, "t": t, "event": event, "room": room, "user": user, "session": "s", "members": 0]
    }

    static func delivered(_ id: Int, t: Int) -> [String: Any] {
        ["id": id, "t": t, "receiver": "http://b/", "copy": "original", "outcome": "delivered", "attempts": 1]
    }

    static func view(_ rooms: [String: [String]]) -> [UInt8] {
        Array(try! JSONSerialization.data(withJSONObject: ["rooms": rooms]))
    }

    @Test func anOrderedReceiverMatchesAndANaiveOneHoldsAUserWhoseJoinArrivedAfterItsLeave() throws {
        // Agora's worked example of out-of-order arrival: a user joins (clientSeq 1) and leaves (2); the join is
        // held back and arrives after the leave. Applied in arrival order, the user stays; by clientSeq, it is gone.
        let truth = Self.truth([
            Self.event(1, "join", "alice", t: 1_000),
            ["id": 1, "t": 1_000, "receiver": "http://b/", "mark": "late", "delay": 4.0],
            Self.event(2, "leave", "alice", t: 2_000),
            Self.delivered(2, t: 2_010),
            Self.delivered(1, t: 5_000),
        ])
        let ordered = try CallbackAudit(truth: truth, view: Self.view([:]))
        #expect(ordered.matches)
        let naive = try CallbackAudit(truth: truth, view: Self.view(["r": ["alice"]]))
        #expect(!naive.matches)
        let finding = try #require(naive.findings.first)
        #expect(finding.kind == .wronglyHeld)
        #expect(finding.user == "alice" && finding.room == "r")
        #expect(finding.sinceMs == 2_000)
        #expect(finding.blame == .disorder)
        #expect(finding.detail.contains("#1 was held back 4.0 s"))
        #expect(naive.text.contains("holds alice"))
    }

    @Test func theAuditSaysWhenTheVendorLostTheCallbackOrItWasStillOnItsWay() throws {
        // ZEGO's case: a relogin with a new session, the old session's logout lost after five retries.
        let truth = Self.truth([
            Self.event(1, "join", "bob", t: 1_000),
            Self.delivered(1, t: 1_001),
            Self.event(2, "leave", "bob", t: 3_000),
            [
                "id": 2, "t": 65_000, "receiver": "http://b/", "copy": "original", "outcome": "lost",
                "cause": "timeout",
                "attempts": 6,
            ],
            Self.event(3, "join", "carol", t: 4_000),
        ])
        let audit = try CallbackAudit(truth: truth, view: Self.view(["r": ["bob"]]))
        #expect(audit.findings.map(\.blame) == [.lost, .unsettled])
        #expect(audit.findings.map(\.kind) == [.wronglyHeld, .wronglyDropped])
        #expect(audit.findings[0].detail.contains("lost (timeout, 6 attempts)"))
        #expect(audit.counts["lost"] == 1 && audit.counts["emitted"] == 3)
        // A receiver that drops a user whose callbacks all came in order is the receiver's own doing.
        let clean = Self.truth([Self.event(1, "join", "dan", t: 1), Self.delivered(1, t: 2)])
        #expect(try CallbackAudit(truth: clean, view: Self.view(["r": []])).findings.map(\.blame) == [.receiver])
    }

    @Test func aBadTruthOrViewIsNamed() {
        #expect(throws: CallbackAuditError.truth(line: 2, "not a JSON object")) {
            try CallbackAudit(
                truth: Self.truth([Self.event(1, "join", "a", t: 1)]) + Array("\n{oops".utf8),
                view: Self.view([:])
            )
        }
        #expect(throws: CallbackAuditError.view(#"no "rooms" object"#)) {
            try CallbackAudit(truth: [], view: Array("{}".utf8))
        }
        #expect(throws: CallbackAuditError.view("rooms.r: expected an array of user IDs")) {
            try CallbackAudit(truth: [], view: Array(#"{"rooms": {"r": [1]}}"#.utf8))
        }
        let two = Self.truth([
            Self.event(1, "join", "a", t: 1), Self.delivered(1, t: 2),
            ["id": 1, "t": 2, "receiver": "http://c/", "copy": "original", "outcome": "delivered"],
        ])
        #expect(throws: CallbackAuditError.self) { try CallbackAudit(truth: two, view: Self.view([:])) }
        #expect((try? CallbackAudit(truth: two, view: Self.view(["r": ["a"]]), receiver: "http://c/"))?.matches == true)
    }
}
