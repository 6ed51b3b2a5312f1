/// Checks a LiveKit event log against contract §4, knowing only the scenario and the log — not the engine.
///
/// Rules:
/// - `transition`: each `connectionState` names as `from` the state the room was in, and moves along LiveKit's
///   transitions (`disconnected → connecting → connected`, `connecting → disconnected`, `connected → reconnecting →
///   connected`, `reconnecting → disconnected`, `… → disconnecting → disconnected`).
/// - `mode`: `reconnectStarted` only while reconnecting, quick first, then at most one switch to full (or full
///   from the start, when the server asked for it);
///   `reconnectCompleted` names the mode last started and comes with `connected` from `reconnecting`.
/// - `quickSilence`: no participant event reaches a client reconnecting in quick mode (in full mode, only the
///   disconnects of every remote participant).
/// - `disconnect`: `disconnected` comes with `connectionState disconnected`, and its reason is `clientInitiated`
///   exactly after `disconnecting`.
/// - `giveUp`: with a policy that limits attempts, a reconnection gives up (`disconnected` from `reconnecting`) no
///   sooner than its delays allow and no later than its delays plus every attempt's timeout.
/// - `presence` / `rejoin`: a named peer sees `participantDisconnected(user)` when an outage outlasts the server's
///   removal time (20 s after the user was last heard), never for a shorter outage; and `participantConnected(user)`
///   when the user is back after being removed.
public struct LiveKitOracle: SpecOracle {
    public let scenario: Scenario
    public var timings: LiveKitTimings
    public var policy: RetryPolicy
    /// Slack for network latency and delivery delays.
    public var tolerance: Duration

    /// Creates an oracle for `scenario`, with the timings and policy it overrides.
    public init(scenario: Scenario, tolerance: Duration? = nil) {
        self.scenario = scenario
        self.timings = LiveKitTimings(overrides: scenario.timings)
        self.policy = scenario.retry ?? LiveKit.defaultRetryPolicy
        self.tolerance = tolerance ?? scenario.oracleTolerance
        self.named = NamedUserRecord(scenario: scenario)
        self.giveUpWindow = Self.giveUpWindow(policy: policy, attemptTimeout: timings.attemptTimeout)
    }

    private struct Track {
        var state = "disconnected"
        var from = "disconnected"
        var time = -1.0
        var episodeStart: Double?
        var modes: [String] = []
        /// How long the reconnection that just ended in `disconnected` lasted: judged by the give-up window once
        /// its reason is known (a removal by the server ends a reconnection at any time).
        var endedReconnection: Double?
    }

    private static let allowed: [String: Set<String>] = [
        "disconnected": ["connecting"],
        "connecting": ["connected", "disconnected", "disconnecting"],
        "connected": ["reconnecting", "disconnecting", "disconnected"],
        "reconnecting": ["connected", "disconnected", "disconnecting"],
        "disconnecting": ["disconnected"],
    ]

    private var tracks = UserRoomTable<Track>()
    /// The named users' events, and when each was connected.
    private var named: NamedUserRecord
    private var violations: [Violation] = []

    public mutating func reserveCapacity(users: Int) {
        tracks.reserveCapacity(users)
    }

    public mutating func observe(_ event: LoggedEvent) {
        if named.isNamed(event.user) { named.keep(event) }
        observe(user: event.user, room: event.room, type: event.type, field: { event.strings[$0] }, time: event.time)
    }

    public mutating func observe(_ line: EventLogLine, user: String, time: Double) {
        if named.isNamed(user) {
            observe(LoggedEvent(line: line, user: user, time: time))
            return
        }
        // Fields read from the line as needed: no dictionary per event on a run's path.
        observe(user: user, room: line.room, type: line.type, field: { line.string($0) }, time: time)
    }

    /// The earliest and latest a reconnection that uses every attempt can give up, after it began (ms).
    private let giveUpWindow: (earliest: Double, latest: Double)?

    /// The give-up window of `policy`, computed once: its cost must not grow with `maxAttempts` on every event (a
    /// scenario asking for a billion attempts once made each event loop a billion times).
    ///
    /// Every schedule's bounds stop changing once its delays reach their cap (or its list its last entry), so the
    /// attempts after the first ``exactAttempts`` are counted in closed form with the last bounds.
    static func giveUpWindow(
        policy: RetryPolicy,
        attemptTimeout: Duration
    ) -> (earliest: Double, latest: Double)? {
        guard let attempts = policy.maxAttempts else { return nil }
        var earliest = 0.0
        var latest = 0.0
        var last = (low: 0.0, high: 0.0)
        for attempt in 1...min(attempts, exactAttempts) {
            let bounds = policy.schedule.delayBounds(beforeAttempt: attempt)
            last = (bounds.lowerBound.milliseconds, bounds.upperBound.milliseconds + attemptTimeout.milliseconds)
            earliest += last.low
            latest += last.high
        }
        let rest = Double(max(0, attempts - exactAttempts))
        return (earliest + rest * last.low, latest + rest * last.high)
    }

    /// Attempts whose delay bounds are added one by one; far past any schedule's cap.
    static let exactAttempts = 10_000

    private mutating func observe(
        user: String,
        room: String?,
        type: String,
        field: (String) -> String?,
        time: Double
    ) {
        guard let room else { return }
        var track = tracks[user, room] ?? Track()
        let slack = tolerance.milliseconds
        func violation(_ rule: String, _ message: String) {
            violations.append(Violation(rule: rule, time: time, user: user, room: room, message: message))
        }
        // Peer events (most of a run's events) only read the track; the rest write it back.
        var changed = true
        defer { if changed { tracks[user, room] = track } }
        switch type {
        case "connectionState":
            guard let state = field("state"), let from = field("from") else {
                violation("transition", "a connectionState line without state or from")
                return
            }
            if from != track.state {
                violation("transition", "from \(from), but the room was \(track.state)")
            } else if !(Self.allowed[from]?.contains(state) ?? false) {
                violation("transition", "\(from) → \(state) is not a LiveKit transition")
            }
            if state == "reconnecting" {
                track.episodeStart = time
                track.modes = []
            }
            track.endedReconnection = nil
            if from == "reconnecting", state == "disconnected", let start = track.episodeStart {
                track.endedReconnection = time - start
            }
            if named.isNamed(user) {
                if state == "connected", from == "connecting" { named.entered(user, room: room, at: time) }
                if state == "disconnected" { named.left(user, room: room, at: time) }
            }
            if state != "reconnecting", state != "connected" { track.episodeStart = nil }
            track.from = from
            track.state = state
            track.time = time
        case "reconnectStarted":
            let mode = field("mode") ?? ""
            if track.state != "reconnecting" {
                violation("mode", "reconnectStarted(\(mode)) while \(track.state)")
            } else if !track.modes.isEmpty, mode != "full" || track.modes != ["quick"] {
                // Quick, then full at most once; or full from the start (the server asked for it).
                violation(
                    "mode",
                    "reconnectStarted(\(mode)) after \(track.modes); expected quick first, then full once"
                )
            }
            track.modes.append(mode)
        case "reconnectCompleted":
            let mode = field("mode") ?? ""
            if !(track.state == "connected" && track.from == "reconnecting" && track.time == time) {
                violation("mode", "reconnectCompleted without connected from reconnecting at the same time")
            } else if mode != track.modes.last {
                violation("mode", "reconnectCompleted(\(mode)) after reconnectStarted(\(track.modes.last ?? "none"))")
            }
        case "participantConnected", "participantDisconnected":
            changed = false
            if track.state == "reconnecting" {
                let full = track.modes.last == "full"
                if !full || type == "participantConnected" {
                    violation("quickSilence", "\(type) while reconnecting (\(track.modes.last ?? "no") mode)")
                }
            } else if track.state != "connected" {
                violation("transition", "\(type) while \(track.state)")
            }
        case "disconnected":
            let reason = field("reason") ?? ""
            if track.state != "disconnected" || track.time != time {
                violation("disconnect", "disconnected(\(reason)) without connectionState disconnected at the same time")
            } else if (reason == "clientInitiated") != (track.from == "disconnecting") {
                violation("disconnect", "disconnected(\(reason)) after \(track.from)")
            } else if reason == "joinFailure", track.from == "reconnecting",
                scenario.auth == nil, !scenario.users.contains(where: { $0.maxMemberCount != nil }),
                !scenario.timeline.contains(where: { $0.action == .expireToken && $0.at.milliseconds <= time + slack })
            {
                // A reconnection ends in a join's failure only when the server refused it: a token it does not take,
                // a full room.
                violation("disconnect", "disconnected(joinFailure) after reconnecting, with nothing to refuse it")
            } else if reason == "joinFailure", !["connecting", "reconnecting"].contains(track.from) {
                // A join refused or given up ends a join or a reconnection; a reconnection that gave up, from
                // `reconnecting` only.
                violation("disconnect", "disconnected(joinFailure) after \(track.from), not a join")
            } else if reason == "connectionTimeout", track.from != "reconnecting" {
                violation("disconnect", "disconnected(connectionTimeout) after \(track.from), not a reconnection")
            }
            // A give-up is the retries running out (`connectionTimeout`); a removal or a refusal may come earlier.
            if reason == "connectionTimeout", let elapsed = track.endedReconnection, let window = giveUpWindow,
                elapsed < window.earliest - slack || elapsed > window.latest + slack
            {
                violation(
                    "giveUp",
                    "gave up \(elapsed) ms into the reconnection; the policy allows \(window.earliest)–\(window.latest) ms"
                )
            }
            track.endedReconnection = nil
        default:
            return
        }
    }

    /// A `connectionState` event into `state` (from `from`, when given).
    private static func isState(_ event: LoggedEvent, _ state: String, from: String?) -> Bool {
        event.type == "connectionState" && event.strings["state"] == state
            && (from == nil || event.strings["from"] == from)
    }

    public func finish() -> [Violation] {
        let dialect = LogStructure.Dialect(
            isStart: { $0.type == "connectionState" && $0.strings["state"] == "connecting" },
            // A full reconnection starts the room over: the SDK clears its participants (each one reported as
            // disconnected) at that instant.
            isState: {
                $0.type == "connectionState" || ($0.type == "reconnectStarted" && $0.strings["mode"] == "full")
            },
            isEnd: { $0.type == "connectionState" && $0.strings["state"] == "disconnected" },
            isIn: { Self.isState($0, "connected", from: nil) },
            // Only a disconnect the app asked for goes through `disconnecting`.
            isLeave: { Self.isState($0, "disconnected", from: "disconnecting") },
            isLost: { Self.isState($0, "reconnecting", from: nil) },
            endCauses: { event in
                guard event.type == "disconnected" else { return nil }
                switch event.strings["reason"] {
                case "participantRemoved": return [.kick, .tokenExpiry]
                case "duplicateIdentity": return [.duplicateLogin]
                default: return nil
                }
            },
            retryTimeout: giveUpWindow.map { $0.latest + tolerance.milliseconds },
            noticeWithin: (timings.pingInterval + timings.pingTimeout).milliseconds,
            clearsView: { $0.type == "reconnectStarted" && $0.strings["mode"] == "full" },
            tokenGrace: timings.server.tokenRenewalGrace.milliseconds,
            lingers: timings.server.heartbeatTimeout.milliseconds,
            attemptTimeout: timings.attemptTimeout.milliseconds,
            loginTimeout: timings.engine.loginTimeout.milliseconds,
            loginProcessing: timings.server.loginProcessing.milliseconds,
            presence: {
                guard let peer = $0.strings["peer"] else { return nil }
                return $0.type == "participantConnected"
                    ? ([peer], true) : $0.type == "participantDisconnected" ? ([peer], false) : nil
            },
            isNotified: { _ in true },
            pairs: [
                // A reconnection starts quick, or (the server asks) full at once; it may turn full later.
                (
                    "a reconnection's start",
                    { Self.isState($0, "reconnecting", from: "connected") }, { $0.type == "reconnectStarted" }
                ),
                (
                    "a reconnection's start",
                    { $0.type == "reconnectStarted" && $0.strings["mode"] == "quick" },
                    { Self.isState($0, "reconnecting", from: "connected") }
                ),
                (
                    "a reconnection's end",
                    { Self.isState($0, "connected", from: "reconnecting") }, { $0.type == "reconnectCompleted" }
                ),
                (
                    "a reconnection's end",
                    { $0.type == "reconnectCompleted" }, { Self.isState($0, "connected", from: "reconnecting") }
                ),
                ("a disconnection", { Self.isState($0, "disconnected", from: nil) }, { $0.type == "disconnected" }),
                ("a disconnection", { $0.type == "disconnected" }, { Self.isState($0, "disconnected", from: nil) }),
            ],
            vocabulary: ["disconnected": ["reason": Set(LiveKitDisconnectReason.allCases.map(\.description))]]
        )
        let structure = LogStructure(
            named.events,
            scenario: scenario,
            tolerance: tolerance.milliseconds,
            dialect: dialect
        )
        .violations()
        return (violations + presenceViolations() + structure).sorted { $0.time < $1.time }
    }

    private func presenceViolations() -> [Violation] {
        let ping = timings.pingInterval.milliseconds
        let rule = NamedUserRecord.PresenceRule(
            timeout: timings.server.heartbeatTimeout.milliseconds,
            earlier: { $0.silent ? ping : 0 },  // a silent user was last heard at its last ping
            departs: { $0.type == "participantDisconnected" && $0.strings["peer"] == $1 },
            arrives: { $0.type == "participantConnected" && $0.strings["peer"] == $1 },
            isBack: { $0.type == "connectionState" && $0.strings["state"] == "connected" },
            state: { ($0.type == "connectionState", $0.strings["state"] == "connected") },
            departureName: "participantDisconnected",
            resetsView: { $0.type == "reconnectStarted" && $0.strings["mode"] == "full" }
        )
        return named.presenceViolations(rule, scenario: scenario, slack: tolerance.milliseconds)
    }
}

extension LiveKit: OracleDialect {
    public static func makeOracle(for scenario: Scenario) -> any SpecOracle { LiveKitOracle(scenario: scenario) }
}
