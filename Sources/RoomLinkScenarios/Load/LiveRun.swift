public import RoomLinkRuntime

/// A window on a run while it goes: `roomlink load --metrics` and `--dashboard` read it from their own thread, as
/// often as they are asked, and a fleet's generators push it to Redis.
///
/// Give one to ``ScenarioRunner/live`` before the run. While the run plays, ``snapshot()`` gathers the figures the
/// run's statistics hold at that moment (each behind its own lock, the same locks the run takes per event, so a reader
/// never stops the run for longer than a copy); once the run has returned, it keeps answering with the last figures,
/// so a scrape that comes as the run ends sees the end, never an error.
public final class LiveRun: Sendable {
    private enum Source {
        case waiting
        case running(@Sendable () -> LiveRunSnapshot?)
        case finished(LiveRunSnapshot)
    }

    private let source = LockedBox(Source.waiting)
    /// The last snapshot gathered while the run goes, and when: readers that come together (a scrape, a page's two
    /// requests, the fleet's push) share one gathering.
    private let recent = LockedBox<(at: ContinuousClock.Instant, snapshot: LiveRunSnapshot)?>(nil)
    private let maximumAge: Duration

    /// A window whose readers within `maximumAge` of each other share one snapshot (a quarter of a second by
    /// default: a run is read once per scrape interval, not once per request).
    public init(maximumAge: Duration = .milliseconds(250)) {
        self.maximumAge = maximumAge
    }

    /// The run's figures now (at most ``init(maximumAge:)``'s age old): `nil` before the run has built its world.
    public func snapshot() -> LiveRunSnapshot? {
        let current = source.withLock { $0 }
        switch current {
        case .waiting:
            return nil
        case .running(let gather):
            let now = ContinuousClock.now
            if let recent = recent.withLock({ $0 }), now - recent.at < maximumAge { return recent.snapshot }
            let snapshot = gather()
            if let snapshot { recent.withLock { $0 = (now, snapshot) } }
            return snapshot
        case .finished(let last):
            return last
        }
    }

    /// Whether the run has returned (its last figures are final).
    public var isFinished: Bool {
        source.withLock { if case .finished = $0 { true } else { false } }
    }

    /// The runner: figures come from `gather` from now on.
    func attach(_ gather: @escaping @Sendable () -> LiveRunSnapshot?) {
        source.withLock { $0 = .running(gather) }
    }

    /// The runner: the run has returned; `last` is what it ended with.
    func finish(_ last: LiveRunSnapshot?) {
        source.withLock { current in
            if let last {
                current = .finished(last)
            } else if case .running(let gather) = current, var final = gather() {
                final.finished = true
                current = .finished(final)
            }
        }
    }
}

/// A run's figures at one moment: its progress, and the tallies its report is made from, carried up to the scenario
/// time it has reached. Tallies add up, so the snapshots of a fleet's generators merge into the fleet's
/// (``merge(_:)``).
public struct LiveRunSnapshot: Sendable, Codable, Equatable {
    /// Where the run is: scenario and wall time, clients by state, attempts, events, memory.
    public var progress: LoadProgress
    /// `virtual` or `real`: in virtual time every figure moves with the scenario's clock, not the wall's.
    public var clock: String
    public var dialect: String
    /// The run's clients (its slice's, for a slice).
    public var clients: Int
    /// Whether the run has returned: the figures are its last.
    public var finished: Bool
    /// Events delivered to the clients' apps, by type.
    public var eventsByType: [String: Int]
    /// The refusals and removals among them (a failed login, a kick-out, a token refused), by reason and, where the
    /// dialect gives one, code: `"loginFailed 1002033"`, `"invalidToken"`.
    public var refusals: [String: Int]
    /// The load's statistics (clients by state, logins, reconnections), when the run gathers them.
    public var load: LoadTally?
    /// The sockets' statistics, against a real server.
    public var connections: ConnectionTally?
    /// The token fetches, when the clients fetch tokens.
    public var tokens: TokenTally?
    /// How late the generator's own timers fired, on the real clock.
    public var timerLateness: LatencyRecorder?
    /// How many generators this snapshot adds up (1 for one run).
    public var parts = 1

    public init(
        progress: LoadProgress,
        clock: String,
        dialect: String,
        clients: Int,
        finished: Bool = false,
        eventsByType: [String: Int] = [:],
        refusals: [String: Int] = [:],
        load: LoadTally? = nil,
        connections: ConnectionTally? = nil,
        tokens: TokenTally? = nil,
        timerLateness: LatencyRecorder? = nil
    ) {
        self.progress = progress
        self.clock = clock
        self.dialect = dialect
        self.clients = clients
        self.finished = finished
        self.eventsByType = eventsByType
        self.refusals = refusals
        self.load = load
        self.connections = connections
        self.tokens = tokens
        self.timerLateness = timerLateness
    }

    /// The load report the tallies make so far: the same figures and series the final report and its plot give,
    /// up to the scenario time reached.
    public var loadReport: LoadReport? {
        load.map { LoadStatistics.report(merging: [$0], end: max(progress.scenarioSeconds, 0.1), clients: clients) }
    }

    /// Adds another generator's snapshot: counts, tallies and histograms add up; the scenario time is the one
    /// furthest behind, the wall time the longest; finished when both are.
    public mutating func merge(_ other: LiveRunSnapshot) {
        progress.scenarioSeconds = min(progress.scenarioSeconds, other.progress.scenarioSeconds)
        progress.scenarioEnd = max(progress.scenarioEnd, other.progress.scenarioEnd)
        progress.wallSeconds = max(progress.wallSeconds, other.progress.wallSeconds)
        progress.online += other.progress.online
        progress.reconnecting += other.progress.reconnecting
        progress.failed += other.progress.failed
        progress.attempts += other.progress.attempts
        progress.events += other.progress.events
        progress.eventsPerSecond += other.progress.eventsPerSecond
        progress.rssBytes += other.progress.rssBytes
        progress.latePeakMs = [progress.latePeakMs, other.progress.latePeakMs].compactMap(\.self).max()
        clients += other.clients
        finished = finished && other.finished
        eventsByType.merge(other.eventsByType, uniquingKeysWith: +)
        refusals.merge(other.refusals, uniquingKeysWith: +)
        load = Self.sum(load, other.load) { $0.add($1) }
        connections = Self.sum(connections, other.connections) { $0.add($1) }
        tokens = Self.sum(tokens, other.tokens) { $0.add($1) }
        timerLateness = Self.sum(timerLateness, other.timerLateness) { $0.merge($1) }
        parts += other.parts
    }

    private static func sum<Value>(_ first: Value?, _ second: Value?, _ add: (inout Value, Value) -> Void) -> Value? {
        guard var first else { return second }
        if let second { add(&first, second) }
        return first
    }
}

extension ScenarioRunner {
    /// Opens ``live`` on `shards`: from now on a snapshot reads their statistics.
    func watch<Dialect: RoomDialect>(
        _ shards: [Shard<Dialect>],
        group: any RuntimeLoopGroup,
        wallStart: ContinuousClock.Instant
    ) {
        guard let live else { return }
        let end = scenario.end
        let clock = group is SimulationRuntime ? "virtual" : "real"
        let dialect = scenario.dialect.rawValue
        let connections = remote?.connections
        let tokens = tokens?.statistics
        let loops = group as? any TimerLatenessReporting
        live.attach {
            Self.snapshot(
                shards,
                wallStart: wallStart,
                end: end,
                clock: clock,
                dialect: dialect,
                connections: connections,
                tokens: tokens,
                loops: loops
            )
        }
    }

    /// Closes ``live``: its last snapshot is the run's end.
    func unwatch() {
        live?.finish(nil)
    }

    private static func snapshot<Dialect: RoomDialect>(
        _ shards: [Shard<Dialect>],
        wallStart: ContinuousClock.Instant,
        end: Duration,
        clock: String,
        dialect: String,
        connections: ConnectionStatistics?,
        tokens: TokenStatistics?,
        loops: (any TimerLatenessReporting)?
    ) -> LiveRunSnapshot? {
        let worlds = shards.compactMap(\.world)
        guard worlds.count == shards.count else { return nil }
        var progress = sample(shards, since: (wallStart, 0), wallStart: wallStart, end: end)
        // The progress line takes the lateness peak; a snapshot reads the whole tally instead.
        progress.latePeakMs = nil
        let reached = progress.scenarioSeconds
        var byType: [String: Int] = [:]
        var refusals: [String: Int] = [:]
        for world in worlds {
            let counts = world.recorder.counts()
            byType.merge(counts.byType, uniquingKeysWith: +)
            refusals.merge(counts.refusals, uniquingKeysWith: +)
        }
        var load: LoadTally?
        for part in worlds.compactMap({ $0.statistics?.tally(end: reached) }) {
            if load == nil { load = part } else { load?.add(part) }
        }
        return LiveRunSnapshot(
            progress: progress,
            clock: clock,
            dialect: dialect,
            clients: worlds.reduce(0) { $0 + $1.clientCount },
            eventsByType: byType,
            refusals: refusals,
            load: load,
            connections: connections?.tally(end: reached, steadyLateness: false),
            tokens: tokens?.tally(end: reached),
            timerLateness: loops?.timerLatenessTally
        )
    }
}
