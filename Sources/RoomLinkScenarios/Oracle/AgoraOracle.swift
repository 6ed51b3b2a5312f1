/// Checks an Agora event log against contract §3, knowing only the scenario and the log — not the engine.
///
/// Rules:
/// - `reason`: each `connectionState` reason belongs to its state (`interrupted` to `reconnecting`, …).
/// - `transition`: each (user, channel) moves along Agora's states: `disconnected → connecting → connected →
///   reconnecting → connected …`, `failed` or `disconnected/leaveChannel` from any of them; `joinSuccess` only from
///   `connecting`, `rejoinSuccess` only from `reconnecting`. `failed/invalidAppId` and `failed/invalidChannelName`
///   report refused calls and change nothing.
/// - `companion`: `joinChannelSuccess`, `rejoinChannelSuccess` and `connectionLost` come with `joinSuccess`,
///   `rejoinSuccess` and `reconnecting/lost`, at the same time.
/// - `lostAfter`: `reconnecting/lost` comes 10 s (`timings.lostAfter`) after the episode's first `reconnecting`,
///   and an episode that lasts longer reports it.
/// - `retryTimeout`: `failed/joinFailed` in a reconnection comes 20 min after its first `reconnecting`.
/// - `afterEnd`: after `failed` or `disconnected`, only a new join (`connecting`) for that channel.
/// - `interrupted`: a named user connected when its network fails sees `reconnecting/interrupted` 4 s later if the
///   outage lasts that long, and no `reconnecting` at all if it is shorter.
/// - `presence` / `rejoin`: a named peer sees `userOffline(user, dropped)` 20 s after an outage began if it lasted
///   longer than that, never for a shorter one; and `userJoined(user)` when the user rejoins after being dropped.
public struct AgoraOracle: SpecOracle {
    public let scenario: Scenario
    public var interruptedAfter: Duration
    public var lostAfter: Duration
    public var peerOfflineAfter: Duration
    public var retryTimeout: Duration
    /// Slack for network latency and delivery delays.
    public var tolerance: Duration

    /// Creates an oracle for `scenario`, with the timings it overrides.
    public init(scenario: Scenario, tolerance: Duration? = nil) {
        let timings = AgoraTimings(overrides: scenario.timings)
        self.scenario = scenario
        self.interruptedAfter = timings.interruptedAfter
        self.lostAfter = timings.lostAfter
        self.peerOfflineAfter = timings.server.heartbeatTimeout
        self.retryTimeout = min(timings.retryTimeout, scenario.retry?.maxElapsed ?? timings.retryTimeout)
        self.tolerance = tolerance ?? scenario.oracleTolerance
        self.named = NamedUserRecord(scenario: scenario)
    }

    private struct Track {
        var state = "disconnected"
        var reason = ""
        var time = 0.0
        var episodeStart: Double?
        var lostSeen = false
        /// Whether the channel failed or was left (not merely never joined).
        var ended = false
    }

    /// A ``Track`` as the table keeps it: its state and reason as their names' numbers in `names` — 32 bytes an
    /// entry, not 56 (a million clients' entries, about 50 bytes a client in the table's buckets).
    private struct PackedTrack {
        var state: UInt32
        var reason: UInt32
        var time: Double
        var episodeStart: Double?
        var lostSeen: Bool
        var ended: Bool
    }

    private static let allowed: [String: Set<String>] = [
        "disconnected": ["connecting"],
        "connecting": ["connected", "failed", "disconnected"],
        "connected": ["reconnecting", "failed", "disconnected"],
        "reconnecting": ["reconnecting", "connected", "failed", "disconnected"],
        "failed": ["connecting", "disconnected"],
    ]
    private static let callErrors: Set<String> = ["invalidAppId", "invalidChannelName"]

    private var tracks = UserRoomTable<PackedTrack>()
    private var names = StringInterner()
    /// The named users' events, and when each was connected (joinSuccess … failed / disconnected).
    private var named: NamedUserRecord
    private var violations: [Violation] = []

    public mutating func reserveCapacity(users: Int) {
        tracks.reserveCapacity(users)
    }

    public mutating func observe(_ event: LoggedEvent) {
        if named.isNamed(event.user) { named.keep(event) }
        observe(
            user: event.user,
            room: event.room,
            type: event.type,
            state: event.strings["state"],
            reason: event.strings["reason"],
            time: event.time
        )
    }

    public mutating func observe(_ line: EventLogLine, user: String, time: Double) {
        if named.isNamed(user) {
            observe(LoggedEvent(line: line, user: user, time: time))
            return
        }
        observe(
            user: user,
            room: line.room,
            type: line.type,
            state: line.string("state"),
            reason: line.string("reason"),
            time: time
        )
    }

    private mutating func observe(
        user: String,
        room: String?,
        type: String,
        state: String?,
        reason: String?,
        time: Double
    ) {
        guard let room else { return }
        var track = tracks[user, room].map(unpacked) ?? Track()
        let slack = tolerance.milliseconds
        func violation(_ rule: String, _ message: String) {
            violations.append(Violation(rule: rule, time: time, user: user, room: room, message: message))
        }
        // Peer events (most of a run's events) only read the track; the rest write it back.
        var changed = true
        defer { if changed { tracks[user, room] = packed(track) } }
        switch type {
        case "connectionState":
            guard let state, let reason else {
                violation("transition", "a connectionState line without state or reason")
                return
            }
            guard let known = AgoraConnectionChangedReason.allCases.first(where: { $0.description == reason }) else {
                violation("reason", "\(reason) is not an Agora connection-change reason")
                return
            }
            if known.state.description != state {
                violation("reason", "\(reason) belongs to \(known.state), not \(state)")
            }
            if Self.callErrors.contains(reason) { return }  // a refused call: the channel's state is unchanged
            let from = track.state
            if track.ended, state != "connecting", !(from == "failed" && reason == "leaveChannel") {
                violation("afterEnd", "\(state)/\(reason) after \(from): only a new join may follow")
            } else if !(Self.allowed[from]?.contains(state) ?? false) {
                violation("transition", "\(from) → \(state) is not an Agora state sequence")
            } else if reason == "joinSuccess", from != "connecting" {
                violation("transition", "joinSuccess from \(from); expected from connecting")
            } else if reason == "rejoinSuccess", from != "reconnecting" {
                violation("transition", "rejoinSuccess from \(from); expected from reconnecting")
            } else if reason == "joinFailed", from == "connected" {
                // A join gives up while trying (joining or reconnecting), never while in the channel.
                violation("transition", "joinFailed from connected; a join gives up only while trying")
            }
            if state == "reconnecting", from != "reconnecting" {
                track.episodeStart = time
                track.lostSeen = false
            }
            if reason == "lost", let start = track.episodeStart {
                track.lostSeen = true
                let expected = start + lostAfter.milliseconds
                if abs(time - expected) > slack {
                    violation(
                        "lostAfter",
                        "lost at \(time) ms; expected \(expected) ms (\(lostAfter) after reconnecting)"
                    )
                }
            }
            if from == "reconnecting", state != "reconnecting", let start = track.episodeStart {
                if !track.lostSeen, time > start + lostAfter.milliseconds + slack {
                    violation("lostAfter", "reconnecting since \(start) ms without reporting lost")
                }
                if reason == "joinFailed" {
                    let expected = start + retryTimeout.milliseconds
                    let early = scenario.retry?.maxAttempts != nil
                    if time > expected + slack || (!early && time < expected - slack) {
                        violation("retryTimeout", "joinFailed at \(time) ms; expected \(expected) ms")
                    }
                }
                track.episodeStart = nil
            }
            if named.isNamed(user) {
                if reason == "joinSuccess" { named.entered(user, room: room, at: time) }
                if ["failed", "disconnected"].contains(state) { named.left(user, room: room, at: time) }
            }
            track.state = state
            track.reason = reason
            track.time = time
            track.ended = ["failed", "disconnected"].contains(state)
        case "joinChannelSuccess", "rejoinChannelSuccess", "connectionLost":
            let expected =
                ["joinChannelSuccess": "joinSuccess", "rejoinChannelSuccess": "rejoinSuccess"][type] ?? "lost"
            if track.reason != expected || track.time != time {
                violation("companion", "\(type) without connectionState …/\(expected) at the same time")
            }
        case "userJoined", "userOffline":
            changed = false
            if track.ended { violation("afterEnd", "\(type) after \(track.state)") }
        default:
            return
        }
    }

    private func unpacked(_ track: PackedTrack) -> Track {
        Track(
            state: names[track.state],
            reason: names[track.reason],
            time: track.time,
            episodeStart: track.episodeStart,
            lostSeen: track.lostSeen,
            ended: track.ended
        )
    }

    private mutating func packed(_ track: Track) -> PackedTrack {
        PackedTrack(
            state: names.number(of: track.state),
            reason: names.number(of: track.reason),
            time: track.time,
            episodeStart: track.episodeStart,
            lostSeen: track.lostSeen,
            ended: track.ended
        )
    }

    private static func isState(_ event: LoggedEvent, _ state: String, _ reason: String) -> Bool {
        event.type == "connectionState" && event.strings["state"] == state && event.strings["reason"] == reason
    }

    public func finish() -> [Violation] {
        let timings = AgoraTimings(overrides: scenario.timings)
        let dialect = LogStructure.Dialect(
            isStart: { $0.type == "connectionState" && $0.strings["state"] == "connecting" },
            isState: { $0.type == "connectionState" },
            // `failed` ends the join as `disconnected` does: the SDK has left the channel (a refusal, a kick, a
            // give-up), and a leaveChannel after it changes nothing.
            isEnd: { $0.type == "connectionState" && ["disconnected", "failed"].contains($0.strings["state"] ?? "") },
            isIn: { $0.type == "connectionState" && $0.strings["state"] == "connected" },
            isLeave: { Self.isState($0, "disconnected", "leaveChannel") },
            isLost: { $0.type == "connectionState" && $0.strings["state"] == "reconnecting" },
            endCauses: { event in
                guard event.type == "connectionState" else { return nil }
                switch event.strings["reason"] {
                case "bannedByServer": return [.kick]
                case "sameUidLogin": return [.duplicateLogin]
                case "tokenExpired": return [.tokenExpiry, .tokenRefused]
                case "invalidToken": return [.badToken]
                case "rejectedByServer": return [.refusedJoin]
                default: return nil
                }
            },
            retryTimeout: retryTimeout.milliseconds,
            noticeWithin: max(
                timings.engine.dataSilenceDetection ?? .zero,
                timings.engine.heartbeatInterval.map { $0 + timings.engine.silenceTimeout } ?? .zero
            ).milliseconds,
            // The data watch notices a link that went down as it notices a silent one.
            noticesDownAtOnce: false,
            tokenGrace: timings.server.tokenRenewalGrace.milliseconds,
            lingers: peerOfflineAfter.milliseconds,
            attemptTimeout: timings.attemptTimeout.milliseconds,
            loginTimeout: timings.engine.loginTimeout.milliseconds,
            loginProcessing: timings.server.loginProcessing.milliseconds,
            presence: {
                guard let peer = $0.strings["peer"] else { return nil }
                return $0.type == "userJoined" ? ([peer], true) : $0.type == "userOffline" ? ([peer], false) : nil
            },
            // Every user hears of the channel's hosts; an audience member is heard of by nobody.
            isNotified: { _ in true },
            isVisible: { $0.role != .audience },
            tokenWarning: "tokenPrivilegeWillExpire",
            pairs: [
                (
                    "a join's success", { Self.isState($0, "connected", "joinSuccess") },
                    { $0.type == "joinChannelSuccess" }
                ),
                (
                    "a join's success", { $0.type == "joinChannelSuccess" },
                    { Self.isState($0, "connected", "joinSuccess") }
                ),
                (
                    "a rejoin's success",
                    { Self.isState($0, "connected", "rejoinSuccess") }, { $0.type == "rejoinChannelSuccess" }
                ),
                (
                    "a rejoin's success",
                    { $0.type == "rejoinChannelSuccess" }, { Self.isState($0, "connected", "rejoinSuccess") }
                ),
                ("a lost connection", { Self.isState($0, "reconnecting", "lost") }, { $0.type == "connectionLost" }),
                ("a lost connection", { $0.type == "connectionLost" }, { Self.isState($0, "reconnecting", "lost") }),
            ],
            vocabulary: ["userOffline": ["reason": Set(AgoraUserOfflineReason.allCases.map(\.description))]]
        )
        let structure = LogStructure(
            named.events,
            scenario: scenario,
            tolerance: tolerance.milliseconds,
            dialect: dialect
        )
        .violations()
        return (violations + timelineViolations() + offlineReasons() + structure).sorted { $0.time < $1.time }
    }

    /// The `offline` rule: a peer seen `quit` left by its own call (any device of its ID: `disconnected/leaveChannel`,
    /// or the channel a second join gave up, `failed/rejectedByServer`) within the tolerance before; one seen
    /// `dropped` did not, with its network up (a leave the server heard at once is a quit).
    private func offlineReasons() -> [Violation] {
        let slack = tolerance.milliseconds
        let outages = scenario.namedOutages()
        let devices = Dictionary(grouping: scenario.users, by: \.userID).mapValues { $0.map(\.id) }
        func leaves(of peer: String, near time: Double) -> [LoggedEvent] {
            devices[peer, default: []].flatMap { device in
                named.events.filter {
                    $0.user == device && $0.time <= time && $0.time >= time - slack
                        && (Self.isState($0, "disconnected", "leaveChannel")
                            || Self.isState($0, "failed", "rejectedByServer"))
                }
            }
        }
        func offline(_ event: LoggedEvent, _ message: String) -> Violation {
            Violation(rule: "offline", time: event.time, user: event.user, room: event.room, message: message)
        }
        var found: [Violation] = []
        for event in named.events where event.type == "userOffline" {
            guard let peer = event.strings["peer"], devices[peer] != nil else { continue }
            let near = leaves(of: peer, near: event.time).filter { $0.room == event.room }
            switch event.strings["reason"] {
            case "quit" where near.isEmpty:
                found.append(offline(event, "saw \(peer) quit, but \(peer) left by no call of its own near it"))
            // A viewer back from a reconnection learns who went while it was away from the list it gets back, and
            // reports each of them dropped, whatever the reason.
            case "dropped"
            where scenario.network.loss == 0
                && !named.events.contains(where: {
                    $0.user == event.user && $0.room == event.room && $0.type == "connectionState"
                        && $0.time == event.time
                })
                && near.contains(where: { leave in
                    // Heard at once, the peer's last word there before the drop (it did not join again), and no kick
                    // or expiry of the peer's meanwhile (the server's removal is a drop).
                    let after = named.events.drop { $0 != leave }.dropFirst()
                    let removed = scenario.serverRemovals(of: leave.user).contains {
                        $0.time >= leave.time - slack && $0.time <= event.time
                    }
                    guard !removed else { return false }
                    return !outages.contains { $0.user == leave.user && $0.start <= leave.time && leave.time <= $0.end }
                        && !after.contains { $0.user == leave.user && $0.room == leave.room && $0.time <= event.time }
                }):
                found.append(offline(event, "saw \(peer) dropped, but \(peer) had just left by its own call"))
            default:
                break
            }
        }
        return found
    }

    /// The `interrupted`, `presence` and `rejoin` rules, from the scenario's outages of named users.
    private func timelineViolations() -> [Violation] {
        var found: [Violation] = []
        let slack = tolerance.milliseconds
        let detect = interruptedAfter.milliseconds
        // On a lossy network the data may seem to stop, and a join may be retrying, whatever the timeline says.
        let outages = scenario.network.loss == 0 ? scenario.namedOutages() : []
        for outage in outages {
            for room in named.rooms(of: outage.user, at: outage.start) {
                // Connected when it began: a user already reconnecting notices nothing new.
                let states = named.events(of: outage.user, in: room) {
                    $0.type == "connectionState" && $0.time < outage.start
                }
                guard states.last?.strings["state"] == "connected",
                    // Nor a user the app or the server moved meanwhile: its own reconnection says nothing of the watch.
                    !scenario.timeline.contains(where: { entry in
                        guard case .user(outage.user) = entry.target else { return false }
                        let time = entry.at.milliseconds
                        guard time >= outage.start - slack, time <= outage.start + detect + slack else { return false }
                        switch entry.action {
                        case .networkChange, .requestReconnect, .kick, .expireToken, .login, .logout, .switchRoom:
                            return true
                        default:
                            return false
                        }
                    })
                else { continue }
                let own = named.events(of: outage.user, in: room) {
                    $0.type == "connectionState" && $0.strings["state"] == "reconnecting" && $0.time >= outage.start
                        && $0.time <= outage.end + slack
                }
                // Another cause (a network change, the server's request) may start a reconnection during the outage:
                // that one says nothing of the data watch.
                let watched = own.filter { $0.strings["reason"] == "interrupted" }
                let before = own.contains {
                    $0.strings["reason"] != "interrupted" && $0.time <= outage.start + detect + slack
                }
                if outage.length < detect - slack, let first = watched.first {
                    found.append(
                        Violation(
                            rule: "interrupted",
                            time: first.time,
                            user: outage.user,
                            room: room,
                            message: "reconnecting after an outage of \(outage.length) ms, under \(detect) ms"
                        )
                    )
                } else if outage.length > detect + slack, !before,
                    // Still in the channel when the detection is due (not left meanwhile).
                    named.wasIn(outage.user, room: room, from: outage.start, through: outage.start + detect + slack),
                    !own.contains(where: {
                        $0.strings["reason"] == "interrupted" && abs($0.time - (outage.start + detect)) <= slack
                    })
                {
                    found.append(
                        Violation(
                            rule: "interrupted",
                            time: outage.start + detect,
                            user: outage.user,
                            room: room,
                            message: "expected reconnecting/interrupted \(detect) ms after the outage began"
                        )
                    )
                }
            }
        }
        // Peers: audience members are never seen, so their outages are not checked.
        var visible = scenario
        visible.users = scenario.users.filter { $0.role != .audience }
        let rule = NamedUserRecord.PresenceRule(
            timeout: peerOfflineAfter.milliseconds,
            earlier: { _ in 0 },  // the server hears the data stop at once, even from a blackhole
            departs: { $0.type == "userOffline" && $0.strings["peer"] == $1 && $0.strings["reason"] == "dropped" },
            arrives: { $0.type == "userJoined" && $0.strings["peer"] == $1 },
            isBack: { $0.strings["reason"] == "rejoinSuccess" },
            state: { ($0.type == "connectionState", $0.strings["state"] == "connected") },
            departureName: "userOffline(dropped)"
        )
        return found + named.presenceViolations(rule, scenario: visible, slack: slack)
    }
}

extension Agora: OracleDialect {
    public static func makeOracle(for scenario: Scenario) -> any SpecOracle { AgoraOracle(scenario: scenario) }
}
