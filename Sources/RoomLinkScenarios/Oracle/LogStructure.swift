/// Rules every dialect's log obeys whatever the vendor, checked over the named users' events once the log is read:
/// what the scenario's calls imply and what a log can never hold. Each rule is one method; ``violations()`` runs them
/// all.
///
/// - `order`: a user's events never go back in time (one client reports them, in the order they happened).
/// - `duplicate`: no event is reported twice (the same line, at the same time, for the same user).
/// - `cause`: a user starts joining a room (ZEGO `logining`, Agora and LiveKit `connecting`) only when the scenario
///   made the app call for it: a login (or ZEGO's `switchRoom` into the room) of that user at most the tolerance
///   earlier; and it leaves a room by its own call (ZEGO `logout`, Agora `disconnected/leaveChannel`, LiveKit
///   `disconnected/clientInitiated`) only when the app called for that: a logout of the room (or of every room), or a
///   `switchRoom` out of it, at most the tolerance earlier.
/// - `effect`: each call that changes something is answered at once — the user reports something for that room
///   within the tolerance (the start of the join, the leave, or a refusal). A call the SDK refuses by its return
///   value alone, with no callback, is not one: a login while in a room already, a logout of a room the user is not
///   in, a switch out of a room it is not in or into one it is in (from a room to itself). Which rooms a user is in
///   is read from the log: from each start of a join to the dialect's end of it (`isEnd`).
/// - `token`: a token warning comes only after the server expired the user's token (`expireToken`), within the
///   tolerance.
/// - `answer`: a join started while the user's network is up is answered — the room's next state — within one
///   attempt's timeout when the network can answer a first attempt in time (no loss, and a round trip plus the
///   server's login time under the attempt's timeout); on a network that cannot, within the dialect's login timeout
///   (its attempts time out or are lost, and the join gives up then at the latest).
/// - `view`: what a user is told of its peers stays consistent — a peer joins its view once before it leaves it,
///   leaves only after it joined, and joins only once one of its devices started joining the room (its first start
///   there, at most the tolerance later). The view starts over when the user starts a join again. Each change
///   has a cause near it: a state of the peer (any of its devices) or of the user in the room within the tolerance,
///   or — for a leave — an outage of the peer that had begun, or the end of the peer's join at most the server's
///   timeout (`lingers`) earlier (a client that gave up on a join the server had admitted is dropped at the timeout).
/// - `told`: what a user that is told of its peers (`isNotified`) holds in its view agrees with what the peers' own
///   logs say, wherever both are certain: a peer whose device has been in the room for the tolerance, undisturbed
///   (no outage, kick, token expiry, reconnection request, network change or partition since it got there), is in
///   the view of every undisturbed user in the room; a peer none of whose devices has been in the room — never
///   yet, or since each left by its own call (the tolerance ago) or ended otherwise (the server's timeout and the
///   tolerance ago) — is in no view. A dropped, moved or misattributed presence line breaks it.
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
struct LogStructure {
    /// What a dialect's log looks like, for the rules every dialect shares.
    struct Dialect {
        /// Whether an event is the dialect's start of a join.
        var isStart: (LoggedEvent) -> Bool
        /// Whether an event is a state of a join (its start, success, loss, return or end).
        var isState: (LoggedEvent) -> Bool
        /// Whether an event ends a join.
        var isEnd: (LoggedEvent) -> Bool
        /// Whether an event is a state in which the user is in the room (joined, or back after a reconnection).
        var isIn: (LoggedEvent) -> Bool
        /// Whether an event is the end of a join the user asked for itself (a logout, a leave).
        var isLeave: (LoggedEvent) -> Bool
        /// Whether an event reports a joined room's connection lost (the dialect's reconnecting).
        var isLost: (LoggedEvent) -> Bool
        /// What may have ended a join the way an event says it ended (`nil`: the event ends none, or any cause may):
        /// a kick, another device's login, the token's expiry.
        var endCauses: (LoggedEvent) -> Set<EndCause>? = { _ in nil }
        /// How long a reconnection keeps trying before it gives up, at the latest (ms); `nil` when only attempts
        /// limit it.
        var retryTimeout: Double? = nil
        /// The longest a client takes to notice that its path went silent (ms): a heartbeat's interval and the
        /// silence it waits, or the data watch's detection.
        var noticeWithin: Double
        /// Whether a link that goes down is noticed at once (the operating system says so), rather than by its
        /// silence (Agora's data watch).
        var noticesDownAtOnce = true
        /// Whether an event makes the SDK report every peer gone at that instant (LiveKit's full reconnection).
        var clearsView: (LoggedEvent) -> Bool = { _ in false }
        /// How long after a token's expiry the server kicks a member that did not renew it (ms).
        var tokenGrace: Double
        /// The server's timeout (ms): a join that ended on the client's side may stay on the server this long.
        var lingers: Double
        /// One login attempt's timeout (ms).
        var attemptTimeout: Double
        /// How long a first join keeps trying before it gives up (ms).
        var loginTimeout: Double
        /// The server's time to process a login (ms).
        var loginProcessing: Double
        /// The peers a presence event names, and whether they joined (`false`: left); `nil` for other events.
        var presence: (LoggedEvent) -> (peers: [String], joined: Bool)?
        /// Whether a user is told of its peers (ZEGO: with user-status notification; Agora and LiveKit: always).
        var isNotified: (Scenario.User) -> Bool
        /// Whether a user can be a peer others are told of (an Agora audience member is never announced).
        var isVisible: (Scenario.User) -> Bool = { _ in true }
        /// The event a token warning is, if the dialect has one.
        var tokenWarning: String?
        /// Whether a logout of a room the user is not in, or a switch out of one, is answered with a callback (ZEGO's
        /// `logoutFailed`) rather than by its return value alone.
        var reportsRefusedLeaves = false
        /// Events the SDK reports together: each names an event and the partner it never comes without.
        var pairs: [(name: String, event: (LoggedEvent) -> Bool, partner: (LoggedEvent) -> Bool)] = []
        /// The values each string field of each event type may hold.
        var vocabulary: [String: [String: Set<String>]] = [:]
        /// The values each whole-number field of each event type may hold.
        var numbers: [String: [String: Set<Int64>]] = [:]
    }

    /// What the scenario did that ends a join of the server's accord.
    enum EndCause: Hashable {
        /// The business server kicked the user (the timeline's `kick`).
        case kick
        /// Another device with the user's ID logged in to the room: the newer login wins.
        case duplicateLogin
        /// The server expired the user's token (the timeline's `expireToken`), and no renewal saved it: a kick once
        /// the renewal grace has passed.
        case tokenExpiry
        /// The server expired the user's token: a reconnection with it refused, any time after.
        case tokenRefused
        /// A token the server does not take: the scenario has an auth table, or expired the user's token.
        case badToken
        /// A second join while in a room (the call refused), or a room whose member cap a user sets.
        case refusedJoin
    }

    /// An app call that starts or ends a join: when, into which room (`nil`: any), the rooms whose answer counts
    /// (a `switchRoom` out of a room the user is not in is refused for that room), and what it asks.
    struct Call {
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

        /// Whether the call takes the user out of `room`.
        func leaves(_ room: String?) -> Bool {
            switch kind {
            case .login: false
            case .logout(let left): left == nil || left == room
            case .switchRoom(let from, _): from == room
            }
        }
    }

    /// The scenario's named users' events, in log order.
    let events: [LoggedEvent]
    let scenario: Scenario
    /// Milliseconds an answer may lag its call.
    let tolerance: Double
    let dialect: Dialect
    /// The named users' devices (scenario users) by the user ID they log in with.
    let devices: [String: [String]]
    /// The user ID each named device logs in with.
    let userIDs: [String: String]
    /// The calls that start or end a join, by device.
    let calls: [String: [Call]]
    /// The events of each device, in log order.
    let byUser: [String: [LoggedEvent]]
    let outages: [Scenario.Outage]

    init(_ events: [LoggedEvent], scenario: Scenario, tolerance: Double, dialect: Dialect) {
        self.events = events
        self.scenario = scenario
        self.tolerance = tolerance
        var dialect = dialect
        if scenario.tokensExpireOnTheirOwn { dialect.tokenWarning = nil }
        self.dialect = dialect
        var devices: [String: [String]] = [:]
        var userIDs: [String: String] = [:]
        for user in scenario.users {
            devices[user.userID, default: []].append(user.id)
            userIDs[user.id] = user.userID
        }
        self.devices = devices
        self.userIDs = userIDs
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
        self.calls = calls
        var byUser: [String: [LoggedEvent]] = [:]
        for event in events { byUser[event.user, default: []].append(event) }
        self.byUser = byUser
        outages = scenario.namedOutages()
    }

    /// Every rule's violations.
    func violations() -> [Violation] {
        ordering() + causes() + leaves() + effects() + tokenWarnings() + warnings() + answers() + losses()
            + returns() + giveUps() + ends() + duplicates() + views() + clearedViews() + heardWhileIn() + told()
            + pairings()
    }

    func violation(_ rule: String, _ event: LoggedEvent, _ message: String) -> Violation {
        Violation(rule: rule, time: event.time, user: event.user, room: event.room, message: message)
    }

    // MARK: - order, duplicate, lateOrder, vocabulary

    /// `order`, `duplicate`, `lateOrder` and `vocabulary`: what each line says alone, and in the log's order.
    func ordering() -> [Violation] {
        var found: [Violation] = []
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
                found.append(
                    violation(
                        "lateOrder",
                        event,
                        "\(event.type) at \(event.time) ms is logged after an event at \(latest) ms"
                    )
                )
            }
            latest = max(latest, event.time)
            for (field, allowed) in dialect.vocabulary[event.type] ?? [:] {
                if let value = event.strings[field], !allowed.contains(value) {
                    found.append(
                        violation(
                            "vocabulary",
                            event,
                            "\(event.type).\(field) is \(value), not one of \(allowed.sorted())"
                        )
                    )
                }
            }
            for (field, allowed) in dialect.numbers[event.type] ?? [:] {
                if let value = event.integers[field], !allowed.contains(value) {
                    found.append(
                        violation(
                            "vocabulary",
                            event,
                            "\(event.type).\(field) is \(value), not one of \(allowed.sorted())"
                        )
                    )
                }
            }
            if let last = previous[event.user] {
                if event.time < last.time {
                    found.append(
                        violation(
                            "order",
                            event,
                            "\(event.type) at \(event.time) ms comes after an event at \(last.time) ms"
                        )
                    )
                } else if event == last, callsAt[event.user]?[event.time] ?? 0 < 2 {
                    found.append(violation("duplicate", event, "\(event.type) reported twice"))
                }
            }
            previous[event.user] = event
        }
        return found
    }

    // MARK: - cause

    /// `cause`, for starts: each start of a join was called for by a login or a switch into its room.
    func causes() -> [Violation] {
        events.filter(dialect.isStart).compactMap { event in
            let called = calls[event.user, default: []].contains {
                $0.room != nil && $0.room == event.room && $0.time <= event.time && event.time <= $0.time + tolerance
            }
            return called
                ? nil
                : violation(
                    "cause",
                    event,
                    "\(event.type) starts a join that no login or switchRoom of the user called for"
                )
        }
    }

    /// `cause`, for leaves: each end of a join the user asked for was called for by a logout or a switch out of its
    /// room.
    func leaves() -> [Violation] {
        events.filter(dialect.isLeave).compactMap { event in
            let called = calls[event.user, default: []].contains {
                $0.leaves(event.room) && $0.time <= event.time && event.time <= $0.time + tolerance
            }
            return called
                ? nil
                : violation("cause", event, "\(event.type) leaves a room that no logout or switchRoom of the user left")
        }
    }

    // MARK: - effect

    /// `effect`: each call that changes something is answered for its room within the tolerance.
    func effects() -> [Violation] {
        var found: [Violation] = []
        for (user, userCalls) in calls where userIDs[user] != nil {
            let userEvents = byUser[user, default: []]
            // The rooms the user is in (or joining) before each call: the log's events before the call's time,
            // then the calls made earlier at the same instant, in the timeline's order. What an earlier instant's
            // calls were expected to do is not carried on: the log says what they did.
            var logged: Set<String> = []
            var rooms: Set<String> = []
            var next = 0
            for (index, call) in userCalls.enumerated() {
                if index == 0 || userCalls[index - 1].time < call.time {
                    while next < userEvents.count, userEvents[next].time < call.time {
                        let event = userEvents[next]
                        if let room = event.room {
                            if dialect.isStart(event) {
                                logged.insert(room)
                            } else if dialect.isEnd(event) {
                                logged.remove(room)
                            }
                        }
                        next += 1
                    }
                    rooms = logged
                }
                var changes: Bool
                switch call.kind {
                case .login(let room):
                    changes = rooms.isEmpty
                    if changes { rooms.insert(room) }
                case .logout(let room):
                    changes = room.map { rooms.contains($0) } ?? !rooms.isEmpty
                    // A refused logout of a named room is answered too, where the dialect reports it.
                    if let room, !rooms.contains(room), dialect.reportsRefusedLeaves { changes = true }
                    if let room { rooms.remove(room) } else { rooms.removeAll() }
                case .switchRoom(let from, let to):
                    changes = rooms.contains(from) && !rooms.contains(to)
                    if changes {
                        rooms.remove(from)
                        rooms.insert(to)
                    } else if !rooms.contains(from), dialect.reportsRefusedLeaves {
                        changes = true
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
        return found
    }

    // MARK: - token

    /// `token`: a token warning only after an expiry of the user's token.
    func tokenWarnings() -> [Violation] {
        guard let warning = dialect.tokenWarning else { return [] }
        // The server expires a user's token by its user ID: every device of it is warned.
        let expiries = scenario.timeline.compactMap { entry -> (String, Double)? in
            guard case .user(let user) = entry.target, entry.action == .expireToken else { return nil }
            return (userIDs[user] ?? user, entry.at.milliseconds)
        }
        return events.filter { $0.type == warning }.compactMap { event in
            let userID = userIDs[event.user] ?? event.user
            return expiries.contains { $0.0 == userID && $0.1 <= event.time && event.time <= $0.1 + tolerance }
                ? nil : violation("token", event, "a token warning with no expiry of the user's token before it")
        }
    }

    /// `token`, the other way: a user whose token the server expires, in a room and undisturbed (its network up),
    /// hears the warning in each room it is in within the tolerance.
    func warnings() -> [Violation] {
        guard let warning = dialect.tokenWarning, !isUncertain else { return [] }
        var found: [Violation] = []
        for entry in scenario.timeline where entry.action == .expireToken {
            guard case .user(let target) = entry.target else { continue }
            let time = entry.at.milliseconds
            // The user's first expiry only (a token already expired is not warned of again), and one the log lasts
            // long enough to show.
            let family = siblings(of: target)
            guard time + tolerance <= scenario.end.milliseconds,
                entries(of: family, where: { $0 == .expireToken }).min() == time
            else { continue }
            // The server expires the user's token in the rooms the device it was expired for is in (or joining).
            let targetStates = byUser[target, default: []].filter { dialect.isState($0) && $0.time <= time }
            let rooms = Set(targetStates.compactMap(\.room)).filter { room in
                targetStates.last(where: { $0.room == room }).map { !dialect.isEnd($0) } ?? false
            }
            for device in family {
                let states = byUser[device, default: []].filter(dialect.isState)
                for room in rooms.sorted() {
                    let inRoom = states.filter { $0.room == room }
                    guard let last = inRoom.last(where: { $0.time < time - tolerance }), dialect.isIn(last),
                        !inRoom.contains(where: { $0.time >= time - tolerance && $0.time <= time + tolerance }),
                        disturbances(of: device, in: room, states: inRoom, ignoringExpiries: true).allSatisfy({
                            $0.to < time - tolerance || $0.from > time + tolerance
                        })
                    else { continue }
                    let warned = byUser[device, default: []].contains {
                        $0.type == warning && $0.room == room && $0.time >= time && $0.time <= time + tolerance
                    }
                    if !warned {
                        found.append(
                            Violation(
                                rule: "token",
                                time: time,
                                user: device,
                                room: room,
                                message: "its token expired at \(time) ms, and no \(warning) came"
                            )
                        )
                    }
                }
            }
        }
        return found
    }

    // MARK: - answer

    /// Whether the scenario's network answers a first login attempt within its timeout: no loss, and the longest
    /// round trip plus the server's login time under the attempt's timeout.
    var answersFirstAttempts: Bool {
        let network = scenario.network
        let roundTrip = ((network.latency + network.jitter) * 2).milliseconds + dialect.loginProcessing
        return network.loss == 0 && roundTrip < dialect.attemptTimeout
    }

    /// `answer`: each join started with the network up gets the room's next state in time.
    func answers() -> [Violation] {
        var found: [Violation] = []
        let wait = answersFirstAttempts ? dialect.attemptTimeout : dialect.loginTimeout
        let what = answersFirstAttempts ? "the attempt timeout" : "the login timeout"
        var pending: [String: LoggedEvent] = [:]  // by user and room: a start not yet followed by a state
        func check(_ start: LoggedEvent, answeredAt time: Double?) {
            let deadline = start.time + wait + tolerance
            // An outage of the user's before the answer was due may have taken the attempt or its answer.
            let down = outages.contains {
                $0.user == start.user && $0.start <= deadline && start.time <= $0.end + tolerance
            }
            guard !down else { return }
            if let time, time <= deadline { return }
            if time == nil, deadline > scenario.end.milliseconds { return }  // the log ends first
            found.append(violation("answer", start, "\(start.type) got no answer within \(what) (\(wait) ms)"))
        }
        for event in events where dialect.isState(event) {
            let key = "\(event.user)\u{0}\(event.room ?? "")"
            if let start = pending.removeValue(forKey: key) { check(start, answeredAt: event.time) }
            if dialect.isStart(event) { pending[key] = event }
        }
        for start in pending.values.sorted(by: { $0.time < $1.time }) { check(start, answeredAt: nil) }
        return found
    }

    // MARK: - pair

    /// `pair`: each event of a pair has its partner for the same user and room at the same instant.
    func pairings() -> [Violation] {
        guard !dialect.pairs.isEmpty else { return [] }
        var byInstant: [String: [LoggedEvent]] = [:]
        for event in events {
            byInstant["\(event.user)\u{0}\(event.room ?? "")\u{0}\(event.time)", default: []].append(event)
        }
        var found: [Violation] = []
        for event in events {
            let together = byInstant["\(event.user)\u{0}\(event.room ?? "")\u{0}\(event.time)", default: []]
            for pair in dialect.pairs where pair.event(event) && !together.contains(where: pair.partner) {
                found.append(violation("pair", event, "\(pair.name): \(event.type) without its partner"))
            }
        }
        return found
    }
}
