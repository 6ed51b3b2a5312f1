/// The sink of a scenario run: rebases times on the scenario's start, forwards each event (to the event-log writer),
/// counts it, and feeds it to the spec oracle — all in delivery order, under one lock.
final class ScenarioRecorder: EventSink, Sendable {
    private struct State {
        var origin = RuntimeInstant.zero
        var isOpen = true
        var events = 0
        var byType: [String: Int] = [:]
        var byReason: [String: Int] = [:]
        var byCode: [String: Int] = [:]
        var oracle: ZegoOracle
    }

    private let state: LockedBox<State>
    private let forward: (any EventSink<ZegoEvent>)?

    init(scenario: Scenario, forward: (any EventSink<ZegoEvent>)?) {
        state = LockedBox(State(oracle: ZegoOracle(scenario: scenario)))
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

    func record(_ event: Stamped<ZegoEvent>, from client: String) {
        let line = event.event.eventLogLine
        state.withLock { state in
            guard state.isOpen else { return }
            var rebased = event
            rebased.time = RuntimeInstant(nanoseconds: event.time.nanoseconds - state.origin.nanoseconds)
            forward?.record(rebased, from: client)
            state.events += 1
            state.byType[line.type, default: 0] += 1
            if case .roomStateChanged(_, let reason, let code, _) = event.event {
                state.byReason[reason.description, default: 0] += 1
                state.byCode[code.description, default: 0] += 1
            }
            state.oracle.observe(line, user: client, time: rebased.time.milliseconds)
        }
    }

    /// The counts and the oracle's violations.
    func summary() -> (
        events: Int, byType: [String: Int], byReason: [String: Int], byCode: [String: Int], violations: [Violation]
    ) {
        state.withLock { ($0.events, $0.byType, $0.byReason, $0.byCode, $0.oracle.finish()) }
    }
}
