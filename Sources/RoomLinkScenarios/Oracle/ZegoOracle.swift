/// Checks a ZEGO event log against contract §2, knowing only the scenario and the log — not the engine.
///
/// Rules:
/// - `transition`: each (user, room) moves only along ZEGO's state sequences (`logout → logining → logined →
///   reconnecting → reconnected …`; a failure or kick ends it until a new `logining`).
/// - `code`: each reason carries the error code contract §2 gives it.
/// - `retryTimeout`: `reconnectFailed` comes at the retry timeout (20 min by default) after the episode's first
///   `reconnecting`.
/// - `afterEnd`: after `loginFailed`, `reconnectFailed` or `kickOut`, nothing more for that room but a new login.
/// - `presence`: a peer with user-status notification sees `delete` of a user whose network failed only if the
///   outage outlasted the server heartbeat timeout (90 s), and then at about that time.
/// - `rejoin`: a peer that saw such a `delete` sees `add` when the user reconnects.
///
/// Outages come from the scenario's timeline entries for named users (`networkDown` or `blackhole`, until
/// `networkUp`); population-wide entries are not checked by the presence rules.
public struct ZegoOracle: SpecOracle {
    public let scenario: Scenario
    /// The server's heartbeat timeout (`timings.serverHeartbeatTimeout`, default 90 s).
    public var serverHeartbeatTimeout: Duration
    /// The client's retry timeout (`timings.retryTimeout`, default 20 min).
    public var retryTimeout: Duration
    /// The client's heartbeat interval: a user in a blackhole was last heard up to this long before it began.
    public var heartbeatInterval: Duration
    /// How long a login attempt may go unanswered (`timings.attemptTimeout`, default 5 s).
    public var attemptTimeout: Duration
    /// Slack for network latency and delivery delays.
    public var tolerance: Duration

    /// Creates an oracle for `scenario`. Timings the scenario overrides are taken from it. The default tolerance is
    /// 2 s plus three one-way trips at the scenario's worst latency (a close notice, an update, its delivery).
    public init(scenario: Scenario, heartbeatInterval: Duration = .seconds(30), tolerance: Duration? = nil) {
        self.scenario = scenario
        self.serverHeartbeatTimeout = scenario.timings["serverHeartbeatTimeout"] ?? .seconds(90)
        let timeout = scenario.timings["retryTimeout"] ?? .seconds(20 * 60)
        self.retryTimeout = min(timeout, scenario.retry?.maxElapsed ?? timeout)
        self.heartbeatInterval = scenario.timings["heartbeatInterval"] ?? heartbeatInterval
        self.attemptTimeout = ZegoTimings(overrides: scenario.timings).attemptTimeout
        self.tolerance = tolerance ?? .seconds(2) + (scenario.network.latency + scenario.network.jitter) * 3
        self.namedUsers = Set(scenario.users.map(\.id))
    }

    private static let allowed: [String: Set<String>] = [
        "logout": ["logining"],
        // A kick can overtake the answer to a login the server admitted (contract §2, "Other rules").
        "logining": ["logined", "loginFailed", "logout", "kickOut"],
        "logined": ["reconnecting", "kickOut", "logout"],
        "reconnecting": ["reconnected", "reconnectFailed", "kickOut", "logout"],
        "reconnected": ["reconnecting", "kickOut", "logout"],
        "loginFailed": ["logining"],
        "reconnectFailed": ["logining"],
        "kickOut": ["logining"],
    ]
    private static let terminal: Set<String> = ["loginFailed", "reconnectFailed", "kickOut"]
    private static let codes: [String: Set<Int64>] = [
        "logining": [0], "logined": [0], "reconnected": [0], "logout": [0],
        "loginFailed": [1_002_001, 1_002_011, 1_002_033, 1_002_034, 1_002_053],
        "reconnecting": [1_002_051], "reconnectFailed": [1_002_034, 1_002_053],
        "kickOut": [1_002_050, 1_002_055, 1_002_056], "logoutFailed": [1_002_002],
    ]

    private struct Key: Hashable {
        var user: String
        var room: String
    }

    /// Whether a line reports a refused call (`loginFailed` 1002001 / 1002011) rather than a change of state.
    private static func isCallError(_ reason: String, _ code: Int64?) -> Bool {
        reason == "loginFailed" && (code == 1_002_001 || code == 1_002_011)
    }

    private let namedUsers: Set<String>
    /// Each connection's state, as its name's number in `stateNames`: four bytes of value an entry, where the name
    /// took sixteen (a million clients' entries, 25 bytes a client in the table's buckets).
    private var state = UserRoomTable<UInt32>()
    private var stateNames = StringInterner()
    private var episodeStart = UserRoomTable<Double>()
    private var joinStart = UserRoomTable<Double>()
    /// When each named (user, room) was in the room (logined … end), for the presence rules.
    private var stays: [Key: [(from: Double, to: Double)]] = [:]
    private var namedEvents: [LoggedEvent] = []
    private var violations: [Violation] = []

    /// Every violation in `events`, in log order (presence expectations at the time they were due).
    public func check(_ events: [LoggedEvent]) -> [Violation] {
        var oracle = self
        for event in events { oracle.observe(event) }
        return oracle.finish()
    }

    public mutating func reserveCapacity(users: Int) {
        state.reserveCapacity(users)
    }

    /// Checks one more event of the log, in log order. Per-(user, room) rules are checked at once with a few
    /// bytes per pair; the events of the scenario's named users are kept for the presence rules of ``finish()``.
    public mutating func observe(_ event: LoggedEvent) {
        let named = namedUsers.containsNamed(event.user)
        if named { namedEvents.append(event) }
        observe(
            user: event.user,
            named: named,
            room: event.room,
            type: event.type,
            reason: event.strings["reason"],
            code: event.integers["code"],
            time: event.time
        )
    }

    /// Checks one more event given as a log line (what its JSON text would say), without building a
    /// ``LoggedEvent`` unless the presence rules need it: the cheap path for a run's recorder.
    public mutating func observe(_ line: EventLogLine, user: String, time: Double) {
        guard namedUsers.containsNamed(user) else {
            var reason: String?
            var code: Int64?
            for (name, value) in line.fields {
                switch (name, value) {
                case ("reason", .string(let text)): reason = text
                case ("code", .integer(let number)): code = number
                default: continue
                }
            }
            observe(user: user, named: false, room: line.room, type: line.type, reason: reason, code: code, time: time)
            return
        }
        observe(LoggedEvent(line: line, user: user, time: time))
    }

    private mutating func observe(
        user: String,
        named: Bool,
        room: String?,
        type: String,
        reason: String?,
        code: Int64?,
        time: Double
    ) {
        guard let room else { return }
        let current = state[user, room].map { stateNames[$0] } ?? "logout"
        func violation(_ rule: String, _ message: String) {
            violations.append(Violation(rule: rule, time: time, user: user, room: room, message: message))
        }
        switch type {
        case "roomState":
            guard let reason else {
                violation("transition", "a roomState line without a reason")
                return
            }
            if let allowedCodes = Self.codes[reason], let code, !allowedCodes.contains(code) {
                violation("code", "\(reason) with code \(code); the contract gives \(allowedCodes.sorted())")
            }
            if reason == "logoutFailed" { return }  // a failed call, not a change of state
            if Self.terminal.contains(current), reason != "logining", !Self.isCallError(reason, code) {
                violation("afterEnd", "\(reason) after \(current): only a new login may follow")
            } else if !(Self.allowed[current]?.contains(reason) ?? false), !Self.isCallError(reason, code) {
                violation("transition", "\(current) → \(reason) is not a ZEGO state sequence")
            }
            if Self.isCallError(reason, code) { return }  // a refused call leaves the room's state alone
            if reason == "reconnecting", current != "reconnecting" { episodeStart[user, room] = time }
            if reason == "logining" { joinStart[user, room] = time }
            if reason == "loginFailed", code == 1_002_053, let start = joinStart[user, room],
                time < start + attemptTimeout.milliseconds - tolerance.milliseconds
            {
                // A login fails for the network only once an attempt has timed out.
                violation(
                    "loginTimeout",
                    "loginFailed(1002053) \(time - start) ms after logining, before any attempt timed out"
                )
            }
            if reason == "reconnectFailed", code == 1_002_053, let start = episodeStart[user, room] {
                let expected = start + retryTimeout.milliseconds
                // A policy with an attempt limit may give up before the timeout, never after it.
                let early = scenario.retry?.maxAttempts != nil
                if time > expected + tolerance.milliseconds || (!early && time < expected - tolerance.milliseconds) {
                    violation(
                        "retryTimeout",
                        "reconnectFailed at \(time) ms; expected \(expected) ms (\(retryTimeout) after reconnecting)"
                    )
                }
            }
            let key = Key(user: user, room: room)
            if named, reason == "logined" { stays[key, default: []].append((time, .infinity)) }
            if named, ["logout", "kickOut", "reconnectFailed"].contains(reason), let last = stays[key]?.indices.last {
                stays[key]![last].to = time
            }
            state[user, room] = stateNames.number(of: reason)
        case "userUpdate":
            if Self.terminal.contains(current) { violation("afterEnd", "a user update after \(current)") }
        default:
            return
        }
    }

    /// The violations found, in time order, after checking the presence rules over the whole log.
    public func finish() -> [Violation] {
        let grace = Int64(ZegoTimings(overrides: scenario.timings).server.tokenRenewalGrace.components.seconds)
        let timings = ZegoTimings(overrides: scenario.timings)
        let dialect = LogStructure.Dialect(
            isStart: { $0.type == "roomState" && $0.strings["reason"] == "logining" },
            // A refused call (a logout of a room the user is not in, a login refused by its return value) is
            // reported as a roomState but changes no state.
            isState: {
                $0.type == "roomState" && $0.strings["reason"] != "logoutFailed"
                    && !Self.isCallError($0.strings["reason"] ?? "", $0.integers["code"])
            },
            isEnd: {
                $0.type == "roomState"
                    && ["logout", "loginFailed", "reconnectFailed", "kickOut"].contains($0.strings["reason"] ?? "")
            },
            isIn: { $0.type == "roomState" && ["logined", "reconnected"].contains($0.strings["reason"] ?? "") },
            isLeave: { $0.type == "roomState" && $0.strings["reason"] == "logout" },
            isLost: { $0.type == "roomState" && $0.strings["reason"] == "reconnecting" },
            endCauses: { event in
                guard event.type == "roomState" else { return nil }
                switch (event.strings["reason"], event.integers["code"]) {
                case ("kickOut", 1_002_050): return [.duplicateLogin]
                case ("kickOut", 1_002_055): return [.kick]
                case ("kickOut", 1_002_056): return [.tokenExpiry, .tokenRefused]
                case ("loginFailed", 1_002_033): return [.badToken]
                case ("loginFailed", 1_002_034): return [.refusedJoin]
                default: return nil
                }
            },
            retryTimeout: retryTimeout.milliseconds,
            noticeWithin: ((timings.engine.heartbeatInterval ?? .zero) + timings.engine.silenceTimeout).milliseconds,
            tokenGrace: timings.server.tokenRenewalGrace.milliseconds,
            lingers: serverHeartbeatTimeout.milliseconds,
            attemptTimeout: timings.attemptTimeout.milliseconds,
            loginTimeout: timings.engine.loginTimeout.milliseconds,
            loginProcessing: timings.server.loginProcessing.milliseconds,
            presence: {
                guard $0.type == "userUpdate", let update = $0.strings["update"], let users = $0.lists["users"] else {
                    return nil
                }
                return (users, update == "add")
            },
            isNotified: \.userStatusNotify,
            tokenWarning: "tokenWillExpire",
            // A logout of a room the user is not in, or a switch out of one, is reported as `logoutFailed`.
            reportsRefusedLeaves: true,
            vocabulary: ["userUpdate": ["update": Set(ZegoUpdateType.allCases.map(\.rawValue))]],
            numbers: ["tokenWillExpire": ["remainingSeconds": [grace]]]
        )
        let structure = LogStructure(
            namedEvents,
            scenario: scenario,
            tolerance: tolerance.milliseconds,
            dialect: dialect
        )
        .violations()
        return (violations + presenceViolations(namedEvents, stays: stays) + structure).sorted { $0.time < $1.time }
    }

    /// The `presence` and `rejoin` rules, from the scenario's outages of named users.
    private func presenceViolations(_ events: [LoggedEvent], stays: [Key: [(from: Double, to: Double)]]) -> [Violation]
    {
        var violations: [Violation] = []
        let userIDs = Dictionary(uniqueKeysWithValues: scenario.users.map { ($0.id, $0.userID) })
        let notified = Set(scenario.users.filter(\.userStatusNotify).map(\.id))
        let timeout = serverHeartbeatTimeout.milliseconds
        let slack = tolerance.milliseconds

        // On a lossy network a member may be dropped at any time, and a peer's update may be lost: no timing is
        // certain.
        guard scenario.network.loss == 0 else { return [] }
        let outages = scenario.namedOutages()
        for outage in outages {
            // A user with a second device may stay in the room through the other: no departure is certain.
            guard let userID = userIDs[outage.user], !scenario.hasOtherDevices(outage.user) else { continue }
            let length = outage.end - outage.start
            // A kick or a token expiry during the outage removes the user at the server's own time, not the timeout.
            let removals = scenario.serverRemovals(of: outage.user).filter { $0.time <= outage.start + timeout + slack }
            // The server last heard the user at most one heartbeat interval before a blackhole began.
            let earliest = outage.start + timeout - (outage.silent ? heartbeatInterval.milliseconds : 0) - slack
            let latest = outage.start + timeout + slack
            for (key, spans) in stays where key.user == outage.user {
                guard spans.contains(where: { $0.from <= outage.start && $0.to > outage.start }) else { continue }
                // In the room when it began: a user already reconnecting may not be in the server's room to drop.
                let last = events.last {
                    $0.user == outage.user && $0.room == key.room && $0.type == "roomState" && $0.time < outage.start
                        && $0.strings["reason"] != "logoutFailed"  // a refused call, not a state
                }
                guard let last, ["logined", "reconnected"].contains(last.strings["reason"] ?? "") else { continue }
                for peer in notified where peer != outage.user {
                    let peerKey = Key(user: peer, room: key.room)
                    guard stays[peerKey]?.contains(where: { $0.from <= outage.start && $0.to > outage.start }) ?? false
                    else { continue }
                    let deletes = events.filter {
                        $0.user == peer && $0.room == key.room && $0.type == "userUpdate"
                            && $0.strings["update"] == "delete"
                            && ($0.lists["users"] ?? []).contains(userID) && $0.time >= outage.start
                            && $0.time <= outage.end + slack
                    }
                    // Short: back before the server could have dropped the user (a silent one was last heard up to a
                    // heartbeat before), and back before the log ends (an outage the end cuts short lasted longer).
                    let short =
                        outage.end < scenario.end.milliseconds
                        && length < timeout - (outage.silent ? heartbeatInterval.milliseconds : 0) - slack
                    if short {
                        // A departure the user's own end explains (a logout after the outage) is not the outage's.
                        let ended = spans.filter { $0.to != .infinity }.map(\.to)
                        for delete in deletes
                        where !removals.contains(where: { $0.time <= delete.time + slack })
                            && !ended.contains(where: { $0 >= delete.time - slack && $0 <= delete.time })
                        {
                            violations.append(
                                Violation(
                                    rule: "presence",
                                    time: delete.time,
                                    user: peer,
                                    room: key.room,
                                    message:
                                        "saw \(userID) deleted, but the outage lasted \(length) ms, under the \(timeout) ms heartbeat timeout"
                                )
                            )
                        }
                    } else if length > timeout + slack, !scenario.restartsServerClock(during: outage) {
                        // The peer must still be in the room, and reachable, when the deletion is due.
                        let peerStays = stays[peerKey]?.contains { $0.from <= outage.start && $0.to >= latest } ?? false
                        guard peerStays, !Scenario.isCutOff(peer, from: outage.start, through: latest, in: outages)
                        else { continue }
                        if !removals.contains(where: { $0.open || $0.time >= outage.start - slack }),
                            !deletes.contains(where: { $0.time >= earliest && $0.time <= latest })
                        {
                            violations.append(
                                Violation(
                                    rule: "presence",
                                    time: latest,
                                    user: peer,
                                    room: key.room,
                                    message:
                                        "expected \(userID) deleted between \(earliest) and \(latest) ms (outage of \(length) ms)"
                                )
                            )
                        } else if let back = events.first(where: {
                            $0.user == outage.user && $0.room == key.room && $0.type == "roomState"
                                && $0.strings["reason"] == "reconnected" && $0.time >= outage.end
                        }),
                            // The log ends before the peer could be told, or the peer left first.
                            back.time + slack <= scenario.end.milliseconds,
                            stays[peerKey]?.contains(where: { $0.from <= back.time && $0.to >= back.time + slack })
                                ?? false,
                            !Scenario.isCutOff(peer, from: back.time, through: back.time + slack, in: outages)
                        {
                            let added = events.contains {
                                $0.user == peer && $0.room == key.room && $0.type == "userUpdate"
                                    && $0.strings["update"] == "add"
                                    // From when the network came back: the server may admit an attempt whose
                                    // answer the user ignores (it timed out), and see it back before it says so.
                                    && ($0.lists["users"] ?? []).contains(userID) && $0.time >= outage.end
                                    && $0.time <= back.time + slack
                            }
                            if !added {
                                violations.append(
                                    Violation(
                                        rule: "rejoin",
                                        time: back.time,
                                        user: peer,
                                        room: key.room,
                                        message:
                                            "\(userID) reconnected at \(back.time) ms after being deleted, but no add followed"
                                    )
                                )
                            }
                        }
                    }
                }
            }
        }
        return violations
    }
}

extension Zego: OracleDialect {
    public static func makeOracle(for scenario: Scenario) -> any SpecOracle { ZegoOracle(scenario: scenario) }
}
