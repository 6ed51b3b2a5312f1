/// A load test's statistics, gathered from every client's engine as the run goes (an `EngineObserver`): how many
/// clients are online, reconnecting or failed each second, reconnect attempts per 100 ms and logins per second
/// (the storm's shape), and how long reconnections took.
///
/// Counts are per (client, room) connection: a client in two rooms counts twice.
public final class LoadStatistics: EngineObserver {
    private struct State {
        var origin: RuntimeInstant
        var online = 0
        var reconnecting = 0
        var failed = 0
        /// Connections whose first join is on its way (the app asked; the server has not answered yet).
        var joining = 0
        /// When each connection now reconnecting lost its connection.
        var lostAt = UserRoomTable<RuntimeInstant>()
        /// How long completed reconnections took (their count is the reconnections completed).
        var durations = LatencyRecorder()
        /// Reconnect durations in whole seconds: how many took 0–1 s, 1–2 s, … (for the report's histogram).
        var durationSeconds: [Int] = []
        /// Per second since the origin: the counts at its end, and what happened during it.
        var seconds: [LoadReport.Second] = []
        /// Reconnect attempts sent, per 100 ms since the origin, and those after an episode's first (retries).
        var attemptBuckets: [Int] = []
        var retryBuckets: [Int] = []
        /// The most connections reconnecting at once, and when.
        var peakReconnecting = 0
        var peakReconnectingAt = 0.0
        /// When reconnecting fell to 1 % of its peak after it (seconds), if it did.
        var recoveredAt: Double?
        /// Connections whose room ended in failure (gave up, refused, kicked) and that have not joined it again.
        var failedKeys = UserRoomTable<Void>()
        /// Every failure so far, including those that joined again.
        var failures = 0
        /// When each user whose network just went (an outage or a partition) lost it, until a peer sees the user
        /// leave or the user is back.
        var outageStart = UserRoomTable<RuntimeInstant>()
        var peerSeesLeave = LatencyRecorder()
        var delivery = LatencyRecorder()
        /// Per 100 ms since the origin: the most connections reconnecting during it, and how many at its end (to
        /// merge shards' peaks, which the exact peak above cannot).
        var reconnectingPeaks: [Int] = []
        var reconnectingEnds: [Int] = []
    }

    private let state: LockedBox<State>

    /// Statistics whose time zero is `origin` (the scenario's start).
    public init(origin: RuntimeInstant) {
        state = LockedBox(State(origin: origin))
    }

    /// Moves time zero to `origin`, before anything was recorded: on the real clock a run's scenario starts once
    /// its world is built, which takes real time.
    public func start(at origin: RuntimeInstant) {
        state.withLock { $0.origin = origin }
    }

    public func transition(_ transition: RoomTransition, client: String, room: String, at time: RuntimeInstant) {
        switch transition {
        case .peersChanged(.delete, let users, _):
            peersLeft(users, at: time)
            return
        case .stillLost, .reconnectMode, .peersCleared, .tokenRenewedWhileReconnecting, .peersChanged,
            .tokenWillExpire:
            return  // no change of counts: the most frequent transitions (peers joining) take no lock
        case .joining, .joined, .lost, .rejoined, .gaveUp, .rejected, .kicked, .left:
            break
        }
        state.withLock { state in
            let second = Self.second(of: time, in: &state)
            let tenth = Self.tenth(of: time, in: &state)
            switch transition {
            case .joining:
                state.joining += 1
            case .joined:
                state.joining = max(0, state.joining - 1)
                state.online += 1
                state.seconds[second].accepted += 1
                if state.failedKeys.removeValue(user: client, room: room) != nil { state.failed -= 1 }
            case .lost:
                state.online -= 1
                state.reconnecting += 1
                state.lostAt[client, room] = time
                state.seconds[second].lost += 1
                if state.reconnecting > state.peakReconnecting {
                    state.peakReconnecting = state.reconnecting
                    state.peakReconnectingAt = Double(time.nanoseconds - state.origin.nanoseconds) / 1e9
                    state.recoveredAt = nil
                }
            case .rejoined:
                state.reconnecting -= 1
                state.online += 1
                state.seconds[second].rejoined += 1
                state.seconds[second].accepted += 1
                state.outageStart[user: client] = nil  // back before any peer saw it leave: no peer will
                if let lost = state.lostAt.removeValue(user: client, room: room) {
                    let nanoseconds = max(0, time.nanoseconds - lost.nanoseconds)
                    state.durations.record(nanoseconds: nanoseconds)
                    Self.count(Int(nanoseconds / 1_000_000_000), in: &state.durationSeconds)
                }
            case .gaveUp(let phase), .rejected(_, let phase), .kicked(_, let phase):
                Self.leave(phase, client: client, room: room, in: &state)
                if state.failedKeys.updateValue((), user: client, room: room) == nil { state.failed += 1 }
                state.failures += 1
                state.seconds[second].failedNow += 1
            case .left(let phase):
                Self.leave(phase, client: client, room: room, in: &state)
            default:
                return  // filtered out above
            }
            if state.recoveredAt == nil, state.peakReconnecting > 0,
                state.reconnecting * 100 <= state.peakReconnecting
            {
                state.recoveredAt = Double(time.nanoseconds - state.origin.nanoseconds) / 1e9
            }
            state.seconds[second].online = state.online
            state.seconds[second].reconnecting = state.reconnecting
            state.seconds[second].failed = state.failed
            state.seconds[second].target = state.online + state.reconnecting + state.joining
            state.reconnectingPeaks[tenth] = max(state.reconnectingPeaks[tenth], state.reconnecting)
            state.reconnectingEnds[tenth] = state.reconnecting
        }
    }

    public func attempt(client: String, room: String, reconnecting: Bool, number: Int, at time: RuntimeInstant) {
        state.withLock { state in
            let second = Self.second(of: time, in: &state)
            state.seconds[second].logins += 1
            guard reconnecting else { return }
            state.seconds[second].attempts += 1
            let bucket = Int(max(0, time.nanoseconds - state.origin.nanoseconds) / 100_000_000)
            Self.count(bucket, in: &state.attemptBuckets)
            // The first attempt of an episode goes out as the loss is noticed; later ones follow the backoff.
            if number > 1 { Self.count(bucket, in: &state.retryBuckets) }
        }
    }

    /// Adds one to `buckets[bucket]`, growing the array with zeros to reach it.
    private static func count(_ bucket: Int, in buckets: inout [Int]) {
        if bucket >= buckets.count { buckets.append(contentsOf: repeatElement(0, count: bucket - buckets.count + 1)) }
        buckets[bucket] += 1
    }

    public func delivered(client: String, latency: Duration) {
        state.withLock { $0.delivery.record(nanoseconds: latency.nanosecondsClamped) }
    }

    /// `user`'s network went at `time` (an outage, a blackhole, or a partition of its room): the first peer to see
    /// the user leave afterwards gives one peer-sees-leave latency. Not an engine event — the scenario runner,
    /// which causes the outages, reports them.
    public func outageBegan(user: String, at time: RuntimeInstant) {
        state.withLock { state in
            if state.outageStart[user: user] == nil { state.outageStart[user: user] = time }
        }
    }

    /// Peers saw `users` leave at `time`.
    private func peersLeft(_ users: [String], at time: RuntimeInstant) {
        state.withLock { state in
            guard state.outageStart.count > 0 else { return }
            for user in users {
                guard let start = state.outageStart.removeValue(user: user) else { continue }
                state.peerSeesLeave.record(nanoseconds: time.nanoseconds - start.nanoseconds)
            }
        }
    }

    /// The counts now: connections online, reconnecting and failed, and reconnect attempts sent so far.
    public func snapshot() -> (online: Int, reconnecting: Int, failed: Int, attempts: Int) {
        state.withLock { ($0.online, $0.reconnecting, $0.failed, $0.attemptBuckets.reduce(0, +)) }
    }

    /// The report, with the series carried up to `end` (seconds since the origin), for `clients` clients.
    public func report(end: Double, clients: Int) -> LoadReport {
        Self.report(merging: [tally(end: end)], end: end, clients: clients)
    }

    /// What the statistics counted, with the series carried up to `end`: the form that merges with other shards'
    /// and other processes'. Its histograms are compact copies (`LatencyRecorder.snapshot()`), taken under the
    /// statistics' lock: a live view that reads a tally a second leaves the run's own histograms unshared, and pays
    /// for what was recorded since its last read.
    public func tally(end: Double) -> LoadTally {
        let lastSecond = max(0, Int(end.rounded(.up)) - 1)
        let lastTenth = max(0, Int((end * 10).rounded(.up)) - 1)
        return state.withLock { state in
            _ = Self.second(ofIndex: lastSecond, in: &state)
            _ = Self.tenth(ofIndex: lastTenth, in: &state)
            let (durations, peerSeesLeave, delivery) = (
                state.durations.snapshot(), state.peerSeesLeave.snapshot(), state.delivery.snapshot()
            )
            return LoadTally(
                online: state.online,
                reconnecting: state.reconnecting,
                failed: state.failed,
                failures: state.failures,
                durations: durations,
                durationSeconds: state.durationSeconds,
                attemptBuckets: state.attemptBuckets,
                retryBuckets: state.retryBuckets,
                reconnectingPeaks: state.reconnectingPeaks,
                reconnectingEnds: state.reconnectingEnds,
                peerSeesLeave: peerSeesLeave,
                delivery: delivery,
                seconds: state.seconds,
                peakReconnecting: state.peakReconnecting,
                peakReconnectingAt: state.peakReconnectingAt,
                recoveredAt: state.recoveredAt
            )
        }
    }

    /// The report of a run shared by several simulations (shards) or processes, each with its own tally: counts,
    /// series and histograms add up; the peak of reconnecting connections is the largest sum of the parts' peaks
    /// within one 100 ms (exact for one part, at most that much early or high for several). Merging the tallies of
    /// one run's parts in any grouping gives the same report.
    public static func report(merging tallies: [LoadTally], end: Double, clients: Int) -> LoadReport {
        var state = tallies[0]
        if tallies.count > 1 {
            for other in tallies.dropFirst() { state.add(other) }
        }
        if state.parts > 1 {
            let peaks = state.reconnectingPeaks
            if let peak = peaks.max(), peak > 0, let at = peaks.firstIndex(of: peak) {
                state.peakReconnecting = peak
                state.peakReconnectingAt = Double(at) / 10
                state.recoveredAt = state.reconnectingEnds[at...].firstIndex { $0 * 100 <= peak }
                    .map { Double($0 + 1) / 10 }
            } else {
                state.peakReconnecting = 0
                state.peakReconnectingAt = 0
                state.recoveredAt = nil
            }
        }
        // "Back" means back: connections that gave up (or were refused or kicked) between the peak and the moment
        // the reconnecting count fell to 1 % of it are not back, and when more than 1 % of the peak did, 99 % never
        // came back.
        if let recovered = state.recoveredAt, state.peakReconnecting > 0 {
            let from = max(0, Int(state.peakReconnectingAt.rounded(.down)))
            let until = min(state.seconds.count, Int(recovered.rounded(.up)) + 1)
            let gaveUp = from < until ? state.seconds[from..<until].reduce(0) { $0 + $1.failedNow } : 0
            if gaveUp * 100 > state.peakReconnecting { state.recoveredAt = nil }
        }
        /// The peak and the mean over the busy span (first to last non-empty bucket).
        func shape(_ buckets: [Int]) -> (peak: Int, mean: Double) {
            let first = buckets.firstIndex { $0 > 0 }
            let lastBusy = buckets.lastIndex { $0 > 0 }
            let span = first.flatMap { first in lastBusy.map { Array(buckets[first...$0]) } } ?? []
            return (span.max() ?? 0, span.isEmpty ? 0 : Double(span.reduce(0, +)) / Double(span.count))
        }
        let (peak, mean) = shape(state.attemptBuckets)
        let retries = shape(state.retryBuckets)
        let durations = state.durations.summary  // in ms; all 0 when none completed
        return LoadReport(
            online: state.online,
            reconnecting: state.reconnecting,
            failed: state.failed,
            offline: max(0, clients - state.online - state.reconnecting - state.failed),
            failures: state.failures,
            reconnections: durations.count,
            reconnectSecondsP50: durations.p50Ms / 1000,
            reconnectSecondsP90: durations.p90Ms / 1000,
            reconnectSecondsP99: durations.p99Ms / 1000,
            reconnectSecondsMax: durations.maxMs / 1000,
            attemptsPer100msPeak: peak,
            attemptsPer100msMean: mean,
            attemptsPeakToMean: mean > 0 ? Double(peak) / mean : 0,
            retriesPer100msPeak: retries.peak,
            retriesPer100msMean: retries.mean,
            retriesPeakToMean: retries.mean > 0 ? Double(retries.peak) / retries.mean : 0,
            peakReconnecting: state.peakReconnecting,
            peakReconnectingAtSeconds: state.peakReconnectingAt,
            secondsUntil99PercentBack: state.recoveredAt.map { $0 - state.peakReconnectingAt },
            loginsPerSecondPeak: state.seconds.map(\.logins).max() ?? 0,
            reconnectSecondsHistogram: state.durationSeconds,
            peerSeesLeave: state.peerSeesLeave.summary,
            deliveryLatency: state.delivery.count > 0 ? state.delivery.summary : nil,
            timeSeries: state.seconds,
            tally: state
        )
    }

    /// The index of the 100 ms `time` falls in, with every earlier one filled in with the current count.
    private static func tenth(of time: RuntimeInstant, in state: inout State) -> Int {
        tenth(ofIndex: Int(max(0, time.nanoseconds - state.origin.nanoseconds) / 100_000_000), in: &state)
    }

    private static func tenth(ofIndex index: Int, in state: inout State) -> Int {
        while state.reconnectingPeaks.count <= index {
            state.reconnectingPeaks.append(state.reconnecting)
            state.reconnectingEnds.append(state.reconnecting)
        }
        return index
    }

    private static func leave(
        _ phase: RoomConnection.Phase,
        client: String,
        room: String,
        in state: inout State
    ) {
        switch phase {
        case .joined: state.online -= 1
        case .reconnecting:
            state.reconnecting -= 1
            state.lostAt[client, room] = nil
        case .joining: state.joining = max(0, state.joining - 1)
        }
    }

    /// The index of the second `time` falls in, with every second before it filled in.
    private static func second(of time: RuntimeInstant, in state: inout State) -> Int {
        second(ofIndex: Int(max(0, time.nanoseconds - state.origin.nanoseconds) / 1_000_000_000), in: &state)
    }

    private static func second(ofIndex index: Int, in state: inout State) -> Int {
        while state.seconds.count <= index {
            state.seconds.append(
                LoadReport.Second(
                    second: state.seconds.count,
                    online: state.online,
                    reconnecting: state.reconnecting,
                    failed: state.failed,
                    target: state.online + state.reconnecting + state.joining
                )
            )
        }
        return index
    }
}

/// What ``LoadStatistics`` measured: the end state, reconnect durations, the storm's shape, and a per-second series.
public struct LoadReport: Sendable, Codable, Equatable {
    /// One second of the run: the counts at its end, and what happened during it.
    public struct Second: Sendable, Codable, Equatable {
        public var second: Int
        public var online: Int
        public var reconnecting: Int
        public var failed: Int
        /// Connections lost, rejoined and failed during the second.
        public var lost = 0
        public var rejoined = 0
        public var failedNow = 0
        /// Reconnect attempts sent, and logins of any kind (joins and reconnections) sent.
        public var attempts = 0
        public var logins = 0
        /// Logins whose answer reached a client still waiting for it and left it in its room (joins and
        /// reconnections accepted): the servers' goodput, seen from where it counts.
        public var accepted = 0
        /// Connections that want to be in their rooms at the second's end: online, reconnecting, or joining for the
        /// first time (what a load tester targets; ``online`` is what it got).
        public var target = 0

        init(second: Int, online: Int, reconnecting: Int, failed: Int, target: Int) {
            self.second = second
            self.online = online
            self.reconnecting = reconnecting
            self.failed = failed
            self.target = target
        }
    }

    /// Connections online, reconnecting and failed (their room ended in failure and they have not joined it
    /// again) at the end, and clients offline (never joined, joining, or logged out): with one room per client,
    /// online + reconnecting + failed + offline = clients.
    public var online: Int
    public var reconnecting: Int
    public var failed: Int
    public var offline: Int
    /// Rooms that ended in failure during the run (gave up, refused, kicked), counting each time.
    public var failures: Int
    /// Reconnections completed, and how long they took (from the loss to the rejoin).
    public var reconnections: Int
    public var reconnectSecondsP50: Double
    public var reconnectSecondsP90: Double
    public var reconnectSecondsP99: Double
    public var reconnectSecondsMax: Double
    /// Reconnect attempts sent per 100 ms, from the first to the last busy interval: the storm's shape.
    public var attemptsPer100msPeak: Int
    public var attemptsPer100msMean: Double
    public var attemptsPeakToMean: Double
    /// The same for retries only (attempts after the first of each reconnection): the first attempt goes out as the
    /// loss is noticed, so clients that lose their connection together send it together whatever the policy; the
    /// retries are what a backoff's jitter spreads.
    public var retriesPer100msPeak: Int
    public var retriesPer100msMean: Double
    public var retriesPeakToMean: Double
    /// The most connections reconnecting at once, and when (seconds since the start).
    public var peakReconnecting: Int
    public var peakReconnectingAtSeconds: Double
    /// From that peak until 99 % of it is back: at most 1 % of it still reconnecting, and at most 1 % of it given up
    /// (or refused or kicked) on the way; `nil` if that never happened.
    public var secondsUntil99PercentBack: Double?
    /// The most logins (joins and reconnections) the server was sent in one second.
    public var loginsPerSecondPeak: Int
    /// How many reconnections took 0–1 s, 1–2 s, 2–3 s, …
    public var reconnectSecondsHistogram: [Int]
    /// From a user's outage (network down, blackhole, or its room's partition) to the first peer's callback saying
    /// the user left, for outages that peers saw (count 0 when no peer hears of peers: ZEGO without
    /// `userStatusNotify`).
    public var peerSeesLeave: LatencySummary
    /// Real clock only: from the deadline of the timer or message that caused a state change to its callbacks
    /// reaching the app, in real milliseconds.
    public var deliveryLatency: LatencySummary?
    public var timeSeries: [Second]
    /// Two sets of extra columns side by side (either may be missing); a row one of them lacks is zeros.
    private static func join(
        _ first: (header: String, rows: [String])?,
        _ second: (header: String, rows: [String])?
    ) -> (header: String, rows: [String])? {
        guard let first else { return second }
        guard let second else { return first }
        func zeros(_ header: String) -> String {
            Array(repeating: "0", count: header.split(separator: ",").count).joined(separator: ",")
        }
        let count = max(first.rows.count, second.rows.count)
        return (
            first.header + "," + second.header,
            (0..<count).map {
                ($0 < first.rows.count ? first.rows[$0] : zeros(first.header)) + ","
                    + ($0 < second.rows.count ? second.rows[$0] : zeros(second.header))
            }
        )
    }

    /// What the report was computed from, in the form that merges (`roomlink report merge`): reports of several
    /// processes merge into the report one process would have made of them all.
    public var tally: LoadTally?
    /// For each fault that ends (a storm, a wave of outages, a partition): how long after its end every connection
    /// online before it was back (``measureRecoveries(after:)``).
    public var recoveries: [FaultRecovery] = []

    /// When a fault struck and ended, in seconds from the scenario's start, and what it was.
    public struct FaultWindow: Sendable, Codable, Equatable {
        public var fault: String
        public var startSeconds: Double
        public var endSeconds: Double

        public init(fault: String, startSeconds: Double, endSeconds: Double) {
            self.fault = fault
            self.startSeconds = startSeconds
            self.endSeconds = endSeconds
        }
    }

    /// How a fault's connections came back.
    public struct FaultRecovery: Sendable, Codable, Equatable {
        public var window: FaultWindow
        /// Connections online in the second before the fault.
        public var onlineBefore: Int
        /// The fewest online while the fault lasted.
        public var onlineLowest: Int
        /// From the fault's end until as many were online again (to the end of that second); `nil` if never.
        public var secondsToAllBack: Double?
    }

    /// Measures, from the time series, how long after each fault every connection online before it was back.
    public mutating func measureRecoveries(after faults: [FaultWindow]) {
        recoveries = faults.map { window in
            let start = max(0, Int(window.startSeconds.rounded(.down)))
            let end = Int(window.endSeconds.rounded(.up))
            let before = start > 0 && start - 1 < timeSeries.count ? timeSeries[start - 1].online : 0
            let during = timeSeries.indices.filter { $0 >= start && $0 < end }.map { timeSeries[$0].online }
            let back = timeSeries.indices.first { $0 >= end && timeSeries[$0].online >= before }
            return FaultRecovery(
                window: window,
                onlineBefore: before,
                onlineLowest: during.min() ?? before,
                secondsToAllBack: back.map { max(0, Double($0 + 1) - window.endSeconds) }
            )
        }
    }

    /// The time series as CSV, one row per second, with a header.
    public var timeSeriesCSV: String { timeSeriesCSV(servers: nil) }

    /// The time series as CSV, with the servers' columns (offered, completed, wasted and refused logins, queue
    /// length, false departures) after the connections' when their capacity was modelled.
    public func timeSeriesCSV(servers: ServerReport?) -> String {
        timeSeriesCSV(servers: servers, connections: nil)
    }

    /// The time series as CSV, with the servers' columns when their capacity was modelled, and the connections'
    /// (attempts, opened, failed, logged in per second, connections open) against a real server.
    public func timeSeriesCSV(servers: ServerReport?, connections: ConnectionReport?) -> String {
        let rows = connections?.tally.seconds ?? []
        let connectionColumns = connections.map { _ in
            (
                header: "connection_attempts,connections_opened,connections_failed,logins_accepted,connections_open",
                rows: rows.map { "\($0.attempts),\($0.opened),\($0.failed),\($0.loggedIn),\($0.open)" }
            )
        }
        let extra = Self.join(servers?.timeSeriesCSVColumns, connectionColumns)
        var text = "second,online,reconnecting,failed,lost,rejoined,failed_now,attempts,logins,target"
        text += extra.map { "," + $0.header } ?? ""
        text += "\n"
        let empty = extra.map { String(repeating: ",0", count: $0.header.split(separator: ",").count) } ?? ""
        for (index, row) in timeSeries.enumerated() {
            text +=
                "\(row.second),\(row.online),\(row.reconnecting),\(row.failed),\(row.lost),\(row.rejoined),"
                + "\(row.failedNow),\(row.attempts),\(row.logins),\(row.target)"
            if let extra { text += index < extra.rows.count ? "," + extra.rows[index] : empty }
            text += "\n"
        }
        return text
    }
}
