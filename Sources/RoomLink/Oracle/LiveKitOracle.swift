/// Checks a LiveKit event log against SPEC §4, knowing only the scenario and the log — not the engine.
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
        self.namedUsers = Set(scenario.users.map(\.id))
    }

    private struct Key: Hashable {
        var user: String
        var room: String
    }

    private struct Track {
        var state = "disconnected"
        var from = "disconnected"
        var time = -1.0
        var episodeStart: Double?
        var modes: [String] = []
    }

    private static let allowed: [String: Set<String>] = [
        "disconnected": ["connecting"],
        "connecting": ["connected", "disconnected", "disconnecting"],
        "connected": ["reconnecting", "disconnecting", "disconnected"],
        "reconnecting": ["connected", "disconnected", "disconnecting"],
        "disconnecting": ["disconnected"],
    ]

    private let namedUsers: Set<String>
    private var tracks: [Key: Track] = [:]
    private var stays: [Key: [(from: Double, to: Double)]] = [:]
    private var namedEvents: [LoggedEvent] = []
    private var violations: [Violation] = []

    public mutating func observe(_ event: LoggedEvent) {
        if namedUsers.containsNamed(event.user) { namedEvents.append(event) }
        observe(user: event.user, room: event.room, type: event.type, strings: event.strings, time: event.time)
    }

    public mutating func observe(_ line: EventLogLine, user: String, time: Double) {
        if namedUsers.containsNamed(user) {
            observe(LoggedEvent(line: line, user: user, time: time))
            return
        }
        var strings: [String: String] = [:]
        for (name, value) in line.fields { if case .string(let text) = value { strings[name] = text } }
        observe(user: user, room: line.room, type: line.type, strings: strings, time: time)
    }

    /// The earliest and latest a reconnection that uses every attempt can give up, after it began.
    private var giveUpWindow: (earliest: Double, latest: Double)? {
        guard let attempts = policy.maxAttempts else { return nil }
        var earliest = 0.0
        var latest = 0.0
        for attempt in 1...attempts {
            let bounds = policy.schedule.delayBounds(beforeAttempt: attempt)
            earliest += bounds.lowerBound.milliseconds
            latest += bounds.upperBound.milliseconds + timings.attemptTimeout.milliseconds
        }
        return (earliest, latest)
    }

    private mutating func observe(
        user: String,
        room: String?,
        type: String,
        strings: [String: String],
        time: Double
    ) {
        guard let room else { return }
        let key = Key(user: user, room: room)
        var track = tracks[key] ?? Track()
        let slack = tolerance.milliseconds
        func violation(_ rule: String, _ message: String) {
            violations.append(Violation(rule: rule, time: time, user: user, room: room, message: message))
        }
        // Peer events (most of a run's events) only read the track; the rest write it back.
        var changed = true
        defer { if changed { tracks[key] = track } }
        switch type {
        case "connectionState":
            guard let state = strings["state"], let from = strings["from"] else {
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
            if from == "reconnecting", state == "disconnected", let start = track.episodeStart,
                let window = giveUpWindow
            {
                let elapsed = time - start
                if elapsed < window.earliest - slack || elapsed > window.latest + slack {
                    violation(
                        "giveUp",
                        "gave up \(elapsed) ms into the reconnection; the policy allows \(window.earliest)–\(window.latest) ms"
                    )
                }
            }
            if namedUsers.containsNamed(user) {
                if state == "connected", from == "connecting" { stays[key, default: []].append((time, .infinity)) }
                if state == "disconnected", let last = stays[key]?.indices.last, stays[key]![last].to == .infinity {
                    stays[key]![last].to = time
                }
            }
            if state != "reconnecting", state != "connected" { track.episodeStart = nil }
            track.from = from
            track.state = state
            track.time = time
        case "reconnectStarted":
            let mode = strings["mode"] ?? ""
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
            let mode = strings["mode"] ?? ""
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
            let reason = strings["reason"] ?? ""
            if track.state != "disconnected" || track.time != time {
                violation("disconnect", "disconnected(\(reason)) without connectionState disconnected at the same time")
            } else if (reason == "clientInitiated") != (track.from == "disconnecting") {
                violation("disconnect", "disconnected(\(reason)) after \(track.from)")
            }
        default:
            return
        }
        _ = slack
    }

    public func finish() -> [Violation] {
        (violations + presenceViolations()).sorted { $0.time < $1.time }
    }

    private func presenceViolations() -> [Violation] {
        var found: [Violation] = []
        let userIDs = Dictionary(uniqueKeysWithValues: scenario.users.map { ($0.id, $0.userID) })
        let slack = tolerance.milliseconds
        let removal = timings.server.heartbeatTimeout.milliseconds
        for outage in scenario.namedOutages() {
            guard let userID = userIDs[outage.user] else { continue }
            let earliest = outage.start + removal - (outage.silent ? timings.pingInterval.milliseconds : 0)
            for (key, spans) in stays where key.user == outage.user {
                guard spans.contains(where: { $0.from <= outage.start && $0.to > outage.start }) else { continue }
                for (peerKey, peerSpans) in stays where peerKey.room == key.room && peerKey.user != outage.user {
                    guard peerSpans.contains(where: { $0.from <= outage.start && $0.to > outage.start + removal })
                    else { continue }
                    let gone = namedEvents.filter {
                        $0.user == peerKey.user && $0.room == key.room && $0.type == "participantDisconnected"
                            && $0.strings["peer"] == userID && $0.time >= outage.start
                            && $0.time <= outage.end + slack
                    }
                    if outage.length < earliest - outage.start - slack {
                        for event in gone {
                            found.append(
                                Violation(
                                    rule: "presence",
                                    time: event.time,
                                    user: peerKey.user,
                                    room: key.room,
                                    message:
                                        "saw \(userID) disconnect after an outage of \(outage.length) ms, under the removal time"
                                )
                            )
                        }
                    } else if outage.length > removal + slack {
                        guard
                            gone.contains(where: {
                                $0.time >= earliest - slack && $0.time <= outage.start + removal + slack
                            })
                        else {
                            found.append(
                                Violation(
                                    rule: "presence",
                                    time: outage.start + removal,
                                    user: peerKey.user,
                                    room: key.room,
                                    message:
                                        "expected participantDisconnected(\(userID)) by \(outage.start + removal) ms"
                                )
                            )
                            continue
                        }
                        if let back = namedEvents.first(where: {
                            $0.user == outage.user && $0.room == key.room && $0.type == "connectionState"
                                && $0.strings["state"] == "connected" && $0.time >= outage.end
                        }), peerSpans.contains(where: { $0.to > back.time + slack }),
                            !namedEvents.contains(where: {
                                $0.user == peerKey.user && $0.room == key.room && $0.type == "participantConnected"
                                    && $0.strings["peer"] == userID && abs($0.time - back.time) <= slack
                            })
                        {
                            found.append(
                                Violation(
                                    rule: "rejoin",
                                    time: back.time,
                                    user: peerKey.user,
                                    room: key.room,
                                    message:
                                        "\(userID) reconnected at \(back.time) ms after removal, but no participantConnected"
                                )
                            )
                        }
                    }
                }
            }
        }
        return found
    }
}
