public import RoomLinkEngine
public import RoomLinkRuntime

/// What a load tester owes its user about its connections to a real server (`roomlink load --server`), gathered
/// from the socket transport (a `ConnectionObserver`): connection attempts and successes per second, open
/// connections over time, failures by cause, the TCP handshake's and the login's latency, heartbeat round trips.
public final class ConnectionStatistics: ConnectionObserver {
    private struct State {
        var origin: RuntimeInstant
        var open = 0
        var tally = ConnectionTally()
        /// The next second to look at for the fill's end, from the second the population's login window ends in;
        /// `nil` when the run has no such window.
        var fillScan: Int?
        /// The loops' timer lateness when the steady state began, to tell the steady state's apart.
        var latenessAtSteady: LatencyRecorder?
    }

    private let state: LockedBox<State>
    private let timerLateness: (@Sendable () -> LatencyRecorder)?

    /// Statistics whose time zero is `origin`.
    ///
    /// - Parameters:
    ///   - origin: Time zero: the scenario's start (``start(at:)`` moves it).
    ///   - fillEnds: When the population's logins end (the end of its login window, from time zero), if the run has
    ///     such a window: heartbeat round trips after the fill are then also kept apart
    ///     (``ConnectionTally/steadyHeartbeatRoundTrip``). The fill ends with the first whole second from then on in
    ///     which no login was accepted — the server may still be answering logins sent in the window's last seconds.
    ///   - timerLateness: How late the generator's own timers have run so far (its loops' `timerLatenessTally`), if
    ///     known: the lateness after the fill is then kept apart too (``ConnectionTally/steadyTimerLateness``), so
    ///     that a generator that fell behind while the rooms filled but kept up after is told from one that never
    ///     kept up.
    public init(
        origin: RuntimeInstant = .zero,
        fillEnds: Duration? = nil,
        timerLateness: (@Sendable () -> LatencyRecorder)? = nil
    ) {
        var initial = State(origin: origin)
        initial.fillScan = fillEnds.map { Int(max(0, $0.components.seconds)) }
        state = LockedBox(initial)
        self.timerLateness = timerLateness
    }

    /// Moves time zero to `origin`, before anything was recorded.
    public func start(at origin: RuntimeInstant) {
        state.withLock { $0.origin = origin }
    }

    public func connectionAttempted(at time: RuntimeInstant) {
        update(at: time) { $1.attempts += 1 }
    }

    public func connectionOpened(after handshake: Duration, at time: RuntimeInstant) {
        update(at: time) { state, second in
            state.open += 1
            second.opened += 1
            state.tally.tcpConnect.record(nanoseconds: handshake.nanoseconds)
        }
    }

    public func connectionFailed(_ cause: ConnectionFailure, at time: RuntimeInstant) {
        update(at: time) { state, second in
            second.failed += 1
            state.tally.failures[cause.rawValue, default: 0] += 1
        }
    }

    public func connectionClosed(at time: RuntimeInstant) {
        update(at: time) { state, _ in state.open -= 1 }
    }

    public func loginAnswered(after latency: Duration, accepted: Bool, at time: RuntimeInstant) {
        // Refusals and busy answers are quick and say nothing of how long getting in takes.
        guard accepted else { return }
        update(at: time) { state, second in
            second.loggedIn += 1
            state.tally.login.record(nanoseconds: latency.nanoseconds)
        }
    }

    public func heartbeatAnswered(after roundTrip: Duration, at time: RuntimeInstant) {
        let steadyBegan = state.withLock { state -> Bool in
            state.tally.heartbeatRoundTrip.record(nanoseconds: roundTrip.nanoseconds)
            guard var scan = state.fillScan else { return false }
            var began = false
            let now = Self.second(
                ofIndex: Int(max(0, time.nanoseconds - state.origin.nanoseconds) / 1_000_000_000),
                in: &state
            )
            if state.tally.steadyFrom == nil {
                // Seconds that have ended, from the window's end on: the first without an accepted login ends the fill.
                while scan < now {
                    if state.tally.seconds[scan].loggedIn == 0 {
                        state.tally.steadyFrom = scan + 1
                        began = true
                        break
                    }
                    scan += 1
                }
                state.fillScan = scan
            }
            guard let from = state.tally.steadyFrom, now >= from else { return began }
            state.tally.steadyHeartbeatRoundTrip.record(nanoseconds: roundTrip.nanoseconds)
            return began
        }
        // Once a run, outside the lock: it reads every loop's lateness, and other loops' answers need not wait on it.
        if steadyBegan, let timerLateness {
            let atSteady = timerLateness()
            state.withLock { $0.latenessAtSteady = atSteady }
        }
    }

    /// What was counted, with the series carried up to `end` (seconds since the origin); the steady state's timer
    /// lateness only when `steadyLateness` (it reads and merges every loop's: the report's, not a live view's).
    public func tally(end: Double, steadyLateness: Bool = true) -> ConnectionTally {
        let (counted, atSteady) = state.withLock { state in
            _ = Self.second(ofIndex: max(0, Int(end.rounded(.up)) - 1), in: &state)
            return (state.tally.snapshot(), state.latenessAtSteady)
        }
        var tally = counted
        if steadyLateness, let atSteady, let lateness = timerLateness?() {
            tally.steadyTimerLateness = lateness.since(atSteady)
        }
        return tally
    }

    private func update(at time: RuntimeInstant, _ body: (inout State, inout ConnectionTally.Second) -> Void) {
        state.withLock { state in
            let index = Self.second(
                ofIndex: Int(max(0, time.nanoseconds - state.origin.nanoseconds) / 1_000_000_000),
                in: &state
            )
            var second = state.tally.seconds[index]
            body(&state, &second)
            second.open = state.open
            state.tally.seconds[index] = second
        }
    }

    /// The index of second `index`, with every second before it filled in (open connections carried over).
    private static func second(ofIndex index: Int, in state: inout State) -> Int {
        while state.tally.seconds.count <= index {
            state.tally.seconds.append(ConnectionTally.Second(second: state.tally.seconds.count, open: state.open))
        }
        return index
    }
}

/// What ``ConnectionStatistics`` counted, in the form that merges across generator processes: per-second counts,
/// failures by cause, and the latency histograms as buckets.
public struct ConnectionTally: Sendable, Codable, Equatable {
    /// One second of the run.
    public struct Second: Sendable, Codable, Equatable {
        public var second: Int
        /// Connection attempts begun, connections opened (TCP handshake done), and failures (of an attempt, or of
        /// a login on an open connection) during the second.
        public var attempts = 0
        public var opened = 0
        public var failed = 0
        /// Logins accepted during the second.
        public var loggedIn = 0
        /// Connections open at the second's end.
        public var open = 0

        public init(second: Int, open: Int) {
            self.second = second
            self.open = open
        }
    }

    public var seconds: [Second] = []
    /// Failures by cause (`ConnectionFailure`'s raw values).
    public var failures: [String: Int] = [:]
    public var tcpConnect = LatencyRecorder()
    public var login = LatencyRecorder()
    public var heartbeatRoundTrip = LatencyRecorder()
    /// The heartbeat round trips after the fill: from ``steadyFrom`` on (the report's steady state, apart from the
    /// logins' load). Empty when the run has no population login window or never left it.
    public var steadyHeartbeatRoundTrip = LatencyRecorder()
    /// How late the generator's timers ran after the fill (real time, as `RunReport.timerLateness`): from the moment
    /// ``steadyFrom`` was known on. Empty when there is no steady state apart or the lateness was not watched.
    public var steadyTimerLateness = LatencyRecorder()
    /// The second the steady state began: the first after the population's login window in which no login was
    /// accepted, plus one. Merged, it is the latest generator's, while each generator's round trips count from its own.
    public var steadyFrom: Int?

    public init() {}

    /// This tally with compact copies of its histograms (`LatencyRecorder.snapshot()`): what a reader takes
    /// under the statistics' lock, so that the run's own histograms stay unshared.
    public mutating func snapshot() -> ConnectionTally {
        // The snapshots first: a copy of the tally taken before them would share the journals they reset.
        let recorders = (
            tcpConnect.snapshot(), login.snapshot(), heartbeatRoundTrip.snapshot(), steadyHeartbeatRoundTrip.snapshot(),
            steadyTimerLateness.snapshot()
        )
        var copy = self
        (copy.tcpConnect, copy.login, copy.heartbeatRoundTrip, copy.steadyHeartbeatRoundTrip) =
            (recorders.0, recorders.1, recorders.2, recorders.3)
        copy.steadyTimerLateness = recorders.4
        return copy
    }

    /// Adds another generator's counts and histograms, second by second from the scenario's start.
    public mutating func add(_ other: ConnectionTally) {
        for (index, row) in other.seconds.enumerated() {
            guard index < seconds.count else {
                seconds.append(row)
                continue
            }
            seconds[index].attempts += row.attempts
            seconds[index].opened += row.opened
            seconds[index].failed += row.failed
            seconds[index].loggedIn += row.loggedIn
            seconds[index].open += row.open
        }
        failures.merge(other.failures, uniquingKeysWith: +)
        tcpConnect.merge(other.tcpConnect)
        login.merge(other.login)
        heartbeatRoundTrip.merge(other.heartbeatRoundTrip)
        steadyHeartbeatRoundTrip.merge(other.steadyHeartbeatRoundTrip)
        steadyTimerLateness.merge(other.steadyTimerLateness)
        if let theirs = other.steadyFrom { steadyFrom = max(steadyFrom ?? theirs, theirs) }
    }

    private enum CodingKeys: String, CodingKey {
        case seconds, failures, tcpConnect, login, heartbeatRoundTrip, steadyHeartbeatRoundTrip, steadyFrom
        case steadyTimerLateness
    }

    /// Decodes a tally; one written before the steady state was kept apart has none.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        seconds = try container.decode([Second].self, forKey: .seconds)
        failures = try container.decode([String: Int].self, forKey: .failures)
        tcpConnect = try container.decode(LatencyRecorder.self, forKey: .tcpConnect)
        login = try container.decode(LatencyRecorder.self, forKey: .login)
        heartbeatRoundTrip = try container.decode(LatencyRecorder.self, forKey: .heartbeatRoundTrip)
        steadyHeartbeatRoundTrip =
            try container.decodeIfPresent(LatencyRecorder.self, forKey: .steadyHeartbeatRoundTrip) ?? LatencyRecorder()
        steadyFrom = try container.decodeIfPresent(Int.self, forKey: .steadyFrom)
        steadyTimerLateness =
            try container.decodeIfPresent(LatencyRecorder.self, forKey: .steadyTimerLateness) ?? LatencyRecorder()
    }
}

/// The connections of a run against a real server, summed up: see ``ConnectionStatistics``.
public struct ConnectionReport: Sendable, Codable, Equatable {
    public var attempts: Int
    public var opened: Int
    public var loggedIn: Int
    /// Failures by cause: `refused`, `timeout`, `reset`, `busy`, `auth`, `outOfPorts`, `outOfFiles`, `other`,
    /// `tlsHandshake`, `certificate`.
    public var failures: [String: Int]
    /// The most connection attempts begun, and connections opened, in one second.
    public var attemptsPerSecondPeak: Int
    public var openedPerSecondPeak: Int
    /// The most connections open at once (at a second's end).
    public var openPeak: Int
    /// From the attempt to the TCP handshake's end; from the login sent to its acceptance; a heartbeat's round trip.
    public var tcpConnect: LatencySummary
    public var login: LatencySummary
    public var heartbeatRoundTrip: LatencySummary
    /// Heartbeat round trips after the fill (``ConnectionTally/steadyHeartbeatRoundTrip``), and the second that
    /// steady state began; `nil` when the run had no population login window or never left it.
    public var steadyHeartbeatRoundTrip: LatencySummary?
    public var steadyFrom: Int?
    /// How late the generator's timers ran after the fill (``ConnectionTally/steadyTimerLateness``), real ms;
    /// `nil` when there is no steady state apart or its lateness was not watched.
    public var steadyTimerLateness: LatencySummary?
    public var tally: ConnectionTally

    /// The report of `tally`.
    public init(_ tally: ConnectionTally) {
        self.tally = tally
        attempts = tally.seconds.reduce(0) { $0 + $1.attempts }
        opened = tally.seconds.reduce(0) { $0 + $1.opened }
        loggedIn = tally.seconds.reduce(0) { $0 + $1.loggedIn }
        failures = tally.failures
        attemptsPerSecondPeak = tally.seconds.map(\.attempts).max() ?? 0
        openedPerSecondPeak = tally.seconds.map(\.opened).max() ?? 0
        openPeak = tally.seconds.map(\.open).max() ?? 0
        tcpConnect = tally.tcpConnect.summary
        login = tally.login.summary
        heartbeatRoundTrip = tally.heartbeatRoundTrip.summary
        steadyFrom = tally.steadyFrom
        steadyHeartbeatRoundTrip = tally.steadyFrom.map { _ in tally.steadyHeartbeatRoundTrip.summary }
        steadyTimerLateness = tally.steadyTimerLateness.count > 0 ? tally.steadyTimerLateness.summary : nil
    }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating).
    fileprivate var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : scaled &+ attoseconds / 1_000_000_000
    }
}
