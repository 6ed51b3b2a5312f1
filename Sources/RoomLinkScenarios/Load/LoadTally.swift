public import RoomLinkRuntime

/// What a load run counted, in the form that merges: the sums, series (per second and per 100 ms) and histograms a
/// ``LoadReport`` is computed from. Several shards of one run — simulations in one process, or generator processes
/// (`roomlink load --shard I/N`) — each keep one; their tallies add up, and the report of the sum is the report of
/// the whole (``LoadStatistics/report(merging:end:clients:)``). Histograms travel as their buckets, so that merged
/// percentiles are exactly those of one histogram over all the data.
public struct LoadTally: Sendable, Codable, Equatable {
    /// How many parts were added into this one.
    public var parts = 1
    public var online = 0
    public var reconnecting = 0
    public var failed = 0
    public var failures = 0
    /// How long completed reconnections took.
    public var durations = LatencyRecorder()
    /// Reconnections that took 0–1 s, 1–2 s, …
    public var durationSeconds: [Int] = []
    /// Per 100 ms: reconnect attempts, retries, the most connections reconnecting, and how many at its end.
    public var attemptBuckets: [Int] = []
    public var retryBuckets: [Int] = []
    public var reconnectingPeaks: [Int] = []
    public var reconnectingEnds: [Int] = []
    public var peerSeesLeave = LatencyRecorder()
    public var delivery = LatencyRecorder()
    public var seconds: [LoadReport.Second] = []
    /// One part's exact peak of connections reconnecting at once (recomputed from the 100 ms series for several).
    public var peakReconnecting = 0
    public var peakReconnectingAt = 0.0
    public var recoveredAt: Double?

    public init(
        online: Int = 0,
        reconnecting: Int = 0,
        failed: Int = 0,
        failures: Int = 0,
        durations: LatencyRecorder = LatencyRecorder(),
        durationSeconds: [Int] = [],
        attemptBuckets: [Int] = [],
        retryBuckets: [Int] = [],
        reconnectingPeaks: [Int] = [],
        reconnectingEnds: [Int] = [],
        peerSeesLeave: LatencyRecorder = LatencyRecorder(),
        delivery: LatencyRecorder = LatencyRecorder(),
        seconds: [LoadReport.Second] = [],
        peakReconnecting: Int = 0,
        peakReconnectingAt: Double = 0,
        recoveredAt: Double? = nil
    ) {
        self.online = online
        self.reconnecting = reconnecting
        self.failed = failed
        self.failures = failures
        self.durations = durations
        self.durationSeconds = durationSeconds
        self.attemptBuckets = attemptBuckets
        self.retryBuckets = retryBuckets
        self.reconnectingPeaks = reconnectingPeaks
        self.reconnectingEnds = reconnectingEnds
        self.peerSeesLeave = peerSeesLeave
        self.delivery = delivery
        self.seconds = seconds
        self.peakReconnecting = peakReconnecting
        self.peakReconnectingAt = peakReconnectingAt
        self.recoveredAt = recoveredAt
    }

    /// Adds another part's counts, series and histograms.
    public mutating func add(_ other: LoadTally) {
        func sum(_ a: [Int], _ b: [Int]) -> [Int] {
            (0..<max(a.count, b.count)).map { (($0 < a.count) ? a[$0] : 0) + (($0 < b.count) ? b[$0] : 0) }
        }
        parts += other.parts
        online += other.online
        reconnecting += other.reconnecting
        failed += other.failed
        failures += other.failures
        durations.merge(other.durations)
        durationSeconds = sum(durationSeconds, other.durationSeconds)
        attemptBuckets = sum(attemptBuckets, other.attemptBuckets)
        retryBuckets = sum(retryBuckets, other.retryBuckets)
        reconnectingPeaks = sum(reconnectingPeaks, other.reconnectingPeaks)
        reconnectingEnds = sum(reconnectingEnds, other.reconnectingEnds)
        peerSeesLeave.merge(other.peerSeesLeave)
        delivery.merge(other.delivery)
        for index in other.seconds.indices {
            let row = other.seconds[index]
            guard index < seconds.count else {
                seconds.append(row)
                continue
            }
            seconds[index].online += row.online
            seconds[index].reconnecting += row.reconnecting
            seconds[index].failed += row.failed
            seconds[index].lost += row.lost
            seconds[index].rejoined += row.rejoined
            seconds[index].failedNow += row.failedNow
            seconds[index].attempts += row.attempts
            seconds[index].logins += row.logins
            seconds[index].accepted += row.accepted
            seconds[index].target += row.target
        }
    }
}
