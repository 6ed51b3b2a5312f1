/// The sink of a scenario run: rebases times on the scenario's start, forwards each event as a log line (to the
/// event-log writer), counts it, and feeds it to the spec oracle — all in delivery order, under one lock.
final class ScenarioRecorder<Event: EventLogRepresentable>: EventSink, Sendable {
    private struct State {
        var origin = RuntimeInstant.zero
        var isOpen = true
        var events = 0
        var eventsPerPeer = 0
        var byType = Tally()
        var byState = Tally()
        var byReason = Tally()
        var byCode = Tally()
        /// Refusals and removals the apps were told of, by `reason` and `code` (`"loginFailed 1002033"`).
        var refusals = Tally()
        var oracle: any SpecOracle
    }

    private let state: LockedBox<State>
    private let forward: (any EventSink<EventLogLine>)?

    /// A recorder for `scenario` whose oracle expects about `users` users (its share of the population).
    init(scenario: Scenario, forward: (any EventSink<EventLogLine>)?, users: Int = 0) {
        var oracle = scenario.makeOracle()
        oracle.reserveCapacity(users: users)
        state = LockedBox(State(oracle: oracle))
        self.forward = forward
    }

    /// Sets the instant that is time zero of the log.
    func start(at origin: RuntimeInstant) {
        state.withLock { $0.origin = origin }
    }

    /// Stops recording: events from now on (after the scenario's end) are ignored.
    func close() {
        state.withLock { $0.isOpen = false }
    }

    // Specialised for each dialect's events: the clients call it through `EventSink`, which reaches the
    // unspecialised method (see `TimelineCursor.armNext`).
    @_specialize(where Event == ZegoEvent)
    @_specialize(where Event == AgoraEvent)
    @_specialize(where Event == LiveKitEvent)
    func record(_ event: Stamped<Event>, from client: String) {
        let line = event.event.eventLogLine
        state.withLock { state in
            guard state.isOpen else { return }
            let time = RuntimeInstant(nanoseconds: event.time.nanoseconds - state.origin.nanoseconds)
            forward?.record(Stamped(time: time, sequence: event.sequence, event: line), from: client)
            state.events += 1
            state.byType.add(line.type)
            var peers = 1
            var reason: String?
            var code: Int64?
            for (name, value) in line.fields {
                switch (name, value) {
                case ("users", .strings(let users)): peers = max(1, users.count)
                case ("state", .string(let text)): state.byState.add(text)
                case ("reason", .string(let text)):
                    state.byReason.add(text)
                    reason = text
                case ("code", .integer(let number)):
                    state.byCode.add(String(number))
                    code = number
                default: continue
                }
            }
            if let reason, refusalReasons.contains(reason) {
                state.refusals.add(code.map { "\(reason) \($0)" } ?? reason)
            }
            state.eventsPerPeer += peers
            state.oracle.observe(line, user: client, time: time.milliseconds)
        }
    }

    /// An attempt's line goes to the log and the oracle, but is not an event: it is not counted.
    func recordAttempt(_ attempt: Stamped<AttemptRecord>, from client: String) {
        let line = attempt.event.eventLogLine
        state.withLock { state in
            guard state.isOpen else { return }
            let time = RuntimeInstant(nanoseconds: attempt.time.nanoseconds - state.origin.nanoseconds)
            forward?.record(Stamped(time: time, sequence: attempt.sequence, event: line), from: client)
            state.oracle.observe(line, user: client, time: time.milliseconds)
        }
    }

    /// Events recorded so far.
    var eventCount: Int { state.withLock { $0.events } }

    /// Events so far by type, and the refusals among them by reason and code, while the run goes (the oracle is left
    /// to finish at the end).
    func counts() -> (byType: [String: Int], refusals: [String: Int]) {
        state.withLock { ($0.byType.dictionary, $0.refusals.dictionary) }
    }

    /// The counts and the oracle's violations.
    func summary() -> RecordSummary {
        state.withLock {
            RecordSummary(
                events: $0.events,
                eventsPerPeer: $0.eventsPerPeer,
                byType: $0.byType.dictionary,
                byState: $0.byState.dictionary,
                byReason: $0.byReason.dictionary,
                byCode: $0.byCode.dictionary,
                violations: $0.oracle.finish()
            )
        }
    }
}

/// What a ``ScenarioRecorder`` counted, and the oracle's violations.
struct RecordSummary {
    var events: Int
    var eventsPerPeer: Int
    var byType: [String: Int]
    var byState: [String: Int]
    var byReason: [String: Int]
    var byCode: [String: Int]
    var violations: [Violation]

    /// Adds the counts and violations of another shard's recorder.
    mutating func merge(_ other: RecordSummary) {
        events += other.events
        eventsPerPeer += other.eventsPerPeer
        byType.merge(other.byType, uniquingKeysWith: +)
        byState.merge(other.byState, uniquingKeysWith: +)
        byReason.merge(other.byReason, uniquingKeysWith: +)
        byCode.merge(other.byCode, uniquingKeysWith: +)
        violations += other.violations
    }
}

/// The reasons, in the three dialects, for which a server refused a client or took it out of its room: ZEGO's
/// failed logins and kick-outs, Agora's refusals, bans and token failures, LiveKit's failed joins and removals.
private let refusalReasons: Set<String> = [
    "loginFailed", "reconnectFailed", "kickOut",
    "bannedByServer", "joinFailed", "invalidAppId", "invalidChannelName", "invalidToken", "tokenExpired",
    "rejectedByServer", "sameUidLogin",
    "duplicateIdentity", "participantRemoved", "roomDeleted", "joinFailure", "roomClosed", "stateMismatch",
]
