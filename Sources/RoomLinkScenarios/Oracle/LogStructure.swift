/// Rules every dialect's log obeys whatever the vendor, checked over the named users' events once the log is read:
/// what the scenario's calls imply and what a log can never hold.
///
/// - `order`: a user's events never go back in time (one client reports them, in the order they happened).
/// - `duplicate`: no event is reported twice (the same line, at the same time, for the same user).
/// - `cause`: a user starts joining a room (ZEGO `logining`, Agora and LiveKit `connecting`) only when the scenario
///   made the app call for it: a login (or ZEGO's `switchRoom` into the room) of that user at most the tolerance
///   earlier.
/// - `effect`: each call that changes something is answered at once — the user reports something for that room
///   within the tolerance (the start of the join, the leave, or a refusal). A call the SDK refuses by its return
///   value alone, with no callback, is not one: a login while in a room already, a logout of a room the user is not
///   in, a switch out of a room it is not in or into one it is in (from a room to itself). Which rooms a user is in
///   is read from the log: from each start of a join to the dialect's end of it (`isEnd`).
///
/// - `token`: a token warning comes only after the server expired the user's token (`expireToken`), within the
///   tolerance.
/// - `answer`: a join started while the user's network is up is answered — the room's next state — within one
///   attempt's timeout (the first attempt succeeds or is refused; only a lost network makes it time out).
/// - `view`: what a user is told of its peers stays consistent — a peer joins its view once before it leaves it,
///   leaves only after it joined, and joins only once it started joining the room itself (its own first start
///   there, at most the tolerance later). The view starts over when the user starts a join again. Each change
///   has a cause near it: a state of the peer or of the user in the room within the tolerance, or — for a leave —
///   an outage of the peer that had begun, or the end of the peer's join at most the server's timeout (`lingers`)
///   earlier (a client that gave up on a join the server had admitted is dropped at the timeout).
/// - `vocabulary`: a field holds one of the values its dialect defines for it (Agora's `userOffline` reasons, LiveKit's
///   `DisconnectReason`s, ZEGO's update types and the seconds its token warning gives).
/// - `pair`: events the SDK reports together come together — the same user, room and instant (Agora's
///   `connected`/`joinSuccess` with `joinChannelSuccess`, LiveKit's `reconnecting` with `reconnectStarted`, …):
///   each of `pairs` names an event and the partner it never comes without.
/// - `peer`: a presence event names at least one peer, and (with no population) only users of the scenario.
/// - `lateOrder`: the log, in delivery order, never goes back in time by more than the tolerance (loops on the
///   real clock may interleave by less).
///
/// Population users are not checked: a population run's oracle keeps no per-user memory beyond its state tables.
enum LogStructure {
    /// An app call that starts or ends a join: when, into which room (`nil`: any), the rooms whose answer counts
    /// (a `switchRoom` out of a room the user is not in is refused for that room), and what it asks.
    private struct Call {
        enum Kind {
            case login(String)
            case logout(String?)
            case switchRoom(String, String)
        }
        var time: Double
        var room: String?
        var answeredIn: [String]?
        var kind: Kind

        init(_ time: Double, _ room: String?, _ answeredIn: [String]?, _ kind: Kind) {
            self.time = time
            self.room = room
            self.answeredIn = answeredIn
            self.kind = kind
        }
    }

    /// The violations in `events` (a scenario's named users' events, in log order).
    ///
    /// - Parameters:
    ///   - isStart: Whether an event is the dialect's start of a join.
    ///   - tolerance: Milliseconds an answer may lag its call.
    static func violations(
        _ events: [LoggedEvent],
        scenario: Scenario,
        tolerance: Double,
        isStart: (LoggedEvent) -> Bool,
        isState: (LoggedEvent) -> Bool,
        isEnd: (LoggedEvent) -> Bool,
        lingers: Double = 0,
        attemptTimeout: Double,
        presence: (LoggedEvent) -> (peers: [String], joined: Bool)?,
        tokenWarning: String? = nil,
        pairs: [(name: String, event: (LoggedEvent) -> Bool, partner: (LoggedEvent) -> Bool)] = [],
        vocabulary: [String: [String: Set<String>]] = [:],
        numbers: [String: [String: Set<Int64>]] = [:]
    ) -> [Violation] {
        var found: [Violation] = []
        func violation(_ rule: String, _ event: LoggedEvent, _ message: String) {
            found.append(Violation(rule: rule, time: event.time, user: event.user, room: event.room, message: message))
        }
        // Instants at which a user made several calls: each may be answered by the same line (two logouts of a
        // room the user is not in are two refusals), which is then no duplicate.
        var callsAt: [String: [Double: Int]] = [:]
        for entry in scenario.timeline {
            guard case .user(let user) = entry.target else { continue }
            callsAt[user, default: [:]][entry.at.milliseconds, default: 0] += 1
        }
        var previous: [String: LoggedEvent] = [:]
        var latest = -Double.infinity
        for event in events {
            if event.time < latest - tolerance {
                violation(
                    "lateOrder",
                    event,
                    "\(event.type) at \(event.time) ms is logged after an event at \(latest) ms"
                )
            }
            latest = max(latest, event.time)
            for (field, allowed) in vocabulary[event.type] ?? [:] {
                if let value = event.strings[field], !allowed.contains(value) {
                    violation("vocabulary", event, "\(event.type).\(field) is \(value), not one of \(allowed.sorted())")
                }
            }
            for (field, allowed) in numbers[event.type] ?? [:] {
                if let value = event.integers[field], !allowed.contains(value) {
                    violation("vocabulary", event, "\(event.type).\(field) is \(value), not one of \(allowed.sorted())")
                }
            }
            if let last = previous[event.user] {
                if event.time < last.time {
                    violation(
                        "order",
                        event,
                        "\(event.type) at \(event.time) ms comes after an event at \(last.time) ms"
                    )
                } else if event == last, callsAt[event.user]?[event.time] ?? 0 < 2 {
                    violation("duplicate", event, "\(event.type) reported twice")
                }
            }
            previous[event.user] = event
        }

        // The calls that start a join, by user: when, into which room (`nil`: any), and the rooms whose answer
        // counts (a `switchRoom` out of a room the user is not in is refused for that room).
        var calls: [String: [Call]] = [:]
        for entry in scenario.timeline {
            guard case .user(let user) = entry.target else { continue }
            let time = entry.at.milliseconds
            switch entry.action {
            case .login(let room?, _): calls[user, default: []].append(Call(time, room, [room], .login(room)))
            case .switchRoom(let from, let to):
                calls[user, default: []].append(Call(time, to, [from], .switchRoom(from, to)))
            case .logout(let room): calls[user, default: []].append(Call(time, nil, room.map { [$0] }, .logout(room)))
            default: continue
            }
        }
        for event in events where isStart(event) {
            let called = calls[event.user, default: []].contains {
                $0.room != nil && $0.room == event.room && $0.time <= event.time && event.time <= $0.time + tolerance
            }
            if !called {
                violation(
                    "cause",
                    event,
                    "\(event.type) starts a join that no login or switchRoom of the user called for"
                )
            }
        }
        var byUser: [String: [LoggedEvent]] = [:]
        for event in events { byUser[event.user, default: []].append(event) }
        for (user, userCalls) in calls where scenario.users.contains(where: { $0.id == user }) {
            let userEvents = byUser[user, default: []]
            // The rooms the user is in (or joining) before each call: the log's events before the call's time,
            // then the calls made earlier at the same instant, in the timeline's order.
            var rooms: Set<String> = []
            var next = 0
            for (index, call) in userCalls.enumerated() {
                if index == 0 || userCalls[index - 1].time < call.time {
                    while next < userEvents.count, userEvents[next].time < call.time {
                        let event = userEvents[next]
                        if let room = event.room {
                            if isStart(event) { rooms.insert(room) } else if isEnd(event) { rooms.remove(room) }
                        }
                        next += 1
                    }
                }
                let changes: Bool
                switch call.kind {
                case .login(let room):
                    changes = rooms.isEmpty
                    if changes { rooms.insert(room) }
                case .logout(let room):
                    changes = room.map { rooms.contains($0) } ?? !rooms.isEmpty
                    if let room { rooms.remove(room) } else { rooms.removeAll() }
                case .switchRoom(let from, let to):
                    changes = rooms.contains(from) && !rooms.contains(to)
                    if changes {
                        rooms.remove(from)
                        rooms.insert(to)
                    }
                }
                guard changes else { continue }
                let answered = userEvents.contains { event in
                    (call.answeredIn.map { rooms in rooms.contains { $0 == event.room } } ?? true)
                        && event.time >= call.time - 1
                        && event.time <= call.time + tolerance
                }
                if !answered {
                    found.append(
                        Violation(
                            rule: "effect",
                            time: call.time,
                            user: user,
                            room: call.room,
                            message: "the app's call at \(call.time) ms got no answer for the room"
                        )
                    )
                }
            }
        }
        if let tokenWarning {
            let expiries = scenario.timeline.compactMap { entry -> (String, Double)? in
                guard case .user(let user) = entry.target, entry.action == .expireToken else { return nil }
                return (user, entry.at.milliseconds)
            }
            for event in events where event.type == tokenWarning {
                if !expiries.contains(where: {
                    $0.0 == event.user && $0.1 <= event.time && event.time <= $0.1 + tolerance
                }) {
                    violation("token", event, "a token warning with no expiry of the user's token before it")
                }
            }
        }

        // Each join started with the network up gets the room's next state within an attempt's timeout.
        let outages = scenario.namedOutages()
        var pending: [String: LoggedEvent] = [:]  // by user and room: a start not yet followed by a state
        func check(_ start: LoggedEvent, answeredAt time: Double?) {
            let down = outages.contains {
                $0.user == start.user && $0.start <= start.time && start.time <= $0.end + tolerance
            }
            guard !down else { return }
            let deadline = start.time + attemptTimeout + tolerance
            if let time, time <= deadline { return }
            if time == nil, deadline > scenario.end.milliseconds { return }  // the log ends first
            violation("answer", start, "\(start.type) got no answer within the attempt timeout (\(attemptTimeout) ms)")
        }
        for event in events where isState(event) {
            let key = "\(event.user)\u{0}\(event.room ?? "")"
            if let start = pending.removeValue(forKey: key) { check(start, answeredAt: event.time) }
            if isStart(event) { pending[key] = event }
        }
        for start in pending.values.sorted(by: { $0.time < $1.time }) { check(start, answeredAt: nil) }

        // Views of peers, by (observer, room); first starts of each user in each room.
        var firstStart: [String: Double] = [:]
        for event in events where isStart(event) {
            let key = "\(event.user)\u{0}\(event.room ?? "")"
            if firstStart[key] == nil { firstStart[key] = event.time }
        }
        let named = Set(scenario.users.map(\.id))
        let knownIDs = named.union(scenario.users.map(\.userID))
        var states: [String: [Double]] = [:]  // own state times by user and room
        for event in events where isState(event) {
            states["\(event.user)\u{0}\(event.room ?? "")", default: []].append(event.time)
        }
        func stateNear(_ user: String, _ room: String?, _ time: Double) -> Bool {
            states["\(user)\u{0}\(room ?? "")"]?.contains { abs($0 - time) <= tolerance } ?? false
        }
        // A join that ended on the client's side (it failed, gave up, lost its connection) may stay on the server
        // until the server's own timeout: its peers then see it leave up to `lingers` later.
        var ends: [String: [Double]] = [:]
        for event in events where isEnd(event) {
            ends["\(event.user)\u{0}\(event.room ?? "")", default: []].append(event.time)
        }
        func endedLately(_ user: String, _ room: String?, _ time: Double) -> Bool {
            ends["\(user)\u{0}\(room ?? "")"]?.contains { $0 <= time + tolerance && time <= $0 + lingers + tolerance }
                ?? false
        }
        var views: [String: Set<String>] = [:]
        for event in events {
            let key = "\(event.user)\u{0}\(event.room ?? "")"
            if isStart(event) {
                views[key] = []
                continue
            }
            guard let (peers, joined) = presence(event) else { continue }
            if peers.isEmpty { violation("peer", event, "\(event.type) names no peer") }
            for peer in peers where scenario.population == nil && !knownIDs.contains(peer) {
                violation("peer", event, "\(event.type) names \(peer), who is not a user of the scenario")
            }
            for peer in peers {
                if joined {
                    if views[key, default: []].contains(peer) {
                        violation("view", event, "told \(peer) joined, but \(peer) was already in its view")
                    }
                    views[key, default: []].insert(peer)
                    if named.contains(peer),
                        (firstStart["\(peer)\u{0}\(event.room ?? "")"] ?? .infinity) > event.time + tolerance
                    {
                        violation("view", event, "told \(peer) joined before \(peer) started joining the room")
                    }
                } else if views[key]?.remove(peer) == nil {
                    violation("view", event, "told \(peer) left, but \(peer) was not in its view")
                }
                guard named.contains(peer), !stateNear(peer, event.room, event.time),
                    !stateNear(event.user, event.room, event.time)
                else { continue }
                let inOutage = outages.contains {
                    $0.user == peer && $0.start <= event.time
                        && event.time <= max($0.end, $0.start + 1_200_000) + tolerance
                }
                if joined || !(inOutage || endedLately(peer, event.room, event.time)) {
                    violation(
                        "view",
                        event,
                        "told \(peer) \(joined ? "joined" : "left") with no change of either near it"
                    )
                }
            }
        }
        // Pairs: each event of a pair has its partner for the same user and room at the same instant.
        if !pairs.isEmpty {
            var byInstant: [String: [LoggedEvent]] = [:]
            for event in events {
                byInstant["\(event.user)\u{0}\(event.room ?? "")\u{0}\(event.time)", default: []].append(event)
            }
            for event in events {
                let together = byInstant["\(event.user)\u{0}\(event.room ?? "")\u{0}\(event.time)", default: []]
                for pair in pairs where pair.event(event) && !together.contains(where: pair.partner) {
                    violation("pair", event, "\(pair.name): \(event.type) without its partner")
                }
            }
        }
        return found
    }
}
