/// Checks the event log's optional `attempt` lines (`AttemptRecord`, `--attempts`) and hands every other line to
/// the dialect's oracle, which never sees them: an attempt is not a callback of contract §§2–4.
///
/// Rules (`attempt`): `n` counts from 1; `after_ms` is not negative and never goes backwards within an episode; the
/// outcome is one of `ok`, `timeout`, `refused`, `busy`; a busy outcome carries the dialect's busy code and a
/// `retry_after_ms`, and appears only when the scenario's server has admission control or a queue bound.
struct AttemptLineOracle: SpecOracle {
    private var inner: any SpecOracle
    private let busyCode: Int64
    private let mayBeBusy: Bool
    /// The last attempt seen per user and room: its number and when it was sent.
    private var last: [String: (number: Int64, after: Int64)] = [:]
    private var violations: [Violation] = []

    init(wrapping inner: any SpecOracle, scenario: Scenario) {
        self.inner = inner
        self.busyCode = scenario.dialect.engine.busyCode
        self.mayBeBusy = scenario.server.admission != nil || scenario.server.maxQueue != nil
    }

    mutating func observe(_ event: LoggedEvent) {
        guard event.type == "attempt" else { return inner.observe(event) }
        check(event)
    }

    mutating func observe(_ line: EventLogLine, user: String, time: Double) {
        guard line.type == "attempt" else { return inner.observe(line, user: user, time: time) }
        check(LoggedEvent(line: line, user: user, time: time))
    }

    func finish() -> [Violation] {
        violations + inner.finish()
    }

    mutating func reserveCapacity(users: Int) {
        inner.reserveCapacity(users: users)
    }

    private mutating func check(_ event: LoggedEvent) {
        func fail(_ message: String) {
            violations.append(
                Violation(rule: "attempt", time: event.time, user: event.user, room: event.room, message: message)
            )
        }
        guard let number = event.integers["n"], number >= 1 else { return fail("n must be a whole number from 1") }
        guard let after = event.integers["after_ms"], after >= 0 else {
            return fail("after_ms must be a whole number of milliseconds, not negative")
        }
        let key = event.user + "\u{1F}" + (event.room ?? "")
        if let previous = last[key], number > previous.number, after < previous.after {
            fail(
                "attempt \(number) was sent at \(after) ms into its episode, before attempt \(previous.number) (\(previous.after) ms)"
            )
        }
        last[key] = (number, after)
        guard let outcome = event.strings["outcome"].flatMap(AttemptRecord.Outcome.init(rawValue:)) else {
            return fail(
                "outcome must be one of \(AttemptRecord.Outcome.allCases.map(\.rawValue).joined(separator: ", "))"
            )
        }
        guard outcome == .busy else {
            if event.integers["code"] != nil { fail("only a busy attempt carries a code") }
            return
        }
        if !mayBeBusy { fail("busy, but the scenario's server has no admission control or queue bound") }
        if event.integers["code"] != busyCode {
            fail("a busy attempt carries code \(busyCode), not \(event.integers["code"].map(String.init) ?? "none")")
        }
        if (event.integers["retry_after_ms"] ?? -1) < 0 { fail("a busy attempt carries retry_after_ms, not negative") }
    }
}
