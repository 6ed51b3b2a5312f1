internal import Histogram

/// A load test's statistics, gathered from every client's engine as the run goes (an ``EngineObserver``): how many
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
        /// When each connection now reconnecting lost its connection.
        var lostAt: [String: RuntimeInstant] = [:]
        var durations = Histogram<UInt64>(
            highestTrackableValue: 86_400_000_000_000,
            numberOfSignificantValueDigits: .three
        )
        /// Reconnect durations in whole seconds: how many took 0–1 s, 1–2 s, … (for the report's histogram).
        var durationSeconds: [Int] = []
        var completed = 0
        /// Per second since the origin: the counts at its end, and what happened during it.
        var seconds: [LoadReport.Second] = []
        /// Reconnect attempts sent, per 100 ms since the origin.
        var attemptBuckets: [Int] = []
        /// The most connections reconnecting at once, and when.
        var peakReconnecting = 0
        var peakReconnectingAt = 0.0
        /// When reconnecting fell to 1 % of its peak after it (seconds), if it did.
        var recoveredAt: Double?
    }

    private let state: LockedBox<State>

    /// Statistics whose time zero is `origin` (the scenario's start).
    public init(origin: RuntimeInstant) {
        state = LockedBox(State(origin: origin))
    }

    public func transition(_ transition: RoomTransition, client: String, room: String, at time: RuntimeInstant) {
        switch transition {
        case .joining, .stillLost, .reconnectMode, .peersCleared, .tokenRenewedWhileReconnecting, .peersChanged,
            .tokenWillExpire:
            return  // no change of counts: the most frequent transitions (peer updates) take no lock
        case .joined, .lost, .rejoined, .gaveUp, .rejected, .kicked, .left:
            break
        }
        state.withLock { state in
            let second = Self.second(of: time, in: &state)
            let key = client + "\u{1F}" + room
            switch transition {
            case .joined:
                state.online += 1
            case .lost:
                state.online -= 1
                state.reconnecting += 1
                state.lostAt[key] = time
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
                if let lost = state.lostAt.removeValue(forKey: key) {
                    let nanoseconds = max(0, time.nanoseconds - lost.nanoseconds)
                    state.durations.record(UInt64(nanoseconds))
                    state.completed += 1
                    let bucket = Int(nanoseconds / 1_000_000_000)
                    if bucket >= state.durationSeconds.count {
                        state.durationSeconds.append(
                            contentsOf: repeatElement(0, count: bucket - state.durationSeconds.count + 1)
                        )
                    }
                    state.durationSeconds[bucket] += 1
                }
            case .gaveUp(let phase), .rejected(_, let phase), .kicked(_, let phase):
                Self.leave(phase, key: key, in: &state)
                state.failed += 1
                state.seconds[second].failedNow += 1
            case .left(let phase):
                Self.leave(phase, key: key, in: &state)
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
        }
    }

    public func attempt(client: String, room: String, reconnecting: Bool, at time: RuntimeInstant) {
        state.withLock { state in
            let second = Self.second(of: time, in: &state)
            state.seconds[second].logins += 1
            guard reconnecting else { return }
            state.seconds[second].attempts += 1
            let bucket = Int(max(0, time.nanoseconds - state.origin.nanoseconds) / 100_000_000)
            if bucket >= state.attemptBuckets.count {
                state.attemptBuckets.append(
                    contentsOf: repeatElement(0, count: bucket - state.attemptBuckets.count + 1)
                )
            }
            state.attemptBuckets[bucket] += 1
        }
    }

    /// The counts now: connections online, reconnecting and failed, and reconnect attempts sent so far.
    public func snapshot() -> (online: Int, reconnecting: Int, failed: Int, attempts: Int) {
        state.withLock { ($0.online, $0.reconnecting, $0.failed, $0.attemptBuckets.reduce(0, +)) }
    }

    /// The report, with the series carried up to `end` (seconds since the origin).
    public func report(end: Double) -> LoadReport {
        state.withLock { state in
            let last = max(0, Int(end.rounded(.up)) - 1)
            _ = Self.second(ofIndex: last, in: &state)
            let buckets = state.attemptBuckets
            let first = buckets.firstIndex { $0 > 0 }
            let lastBusy = buckets.lastIndex { $0 > 0 }
            let span = first.flatMap { first in lastBusy.map { Array(buckets[first...$0]) } } ?? []
            let peak = span.max() ?? 0
            let mean = span.isEmpty ? 0 : Double(span.reduce(0, +)) / Double(span.count)
            func seconds(_ percentile: Double) -> Double {
                state.completed == 0 ? 0 : Double(state.durations.valueAtPercentile(percentile)) / 1e9
            }
            return LoadReport(
                online: state.online,
                reconnecting: state.reconnecting,
                failed: state.failed,
                reconnections: state.completed,
                reconnectSecondsP50: seconds(50),
                reconnectSecondsP90: seconds(90),
                reconnectSecondsP99: seconds(99),
                reconnectSecondsMax: state.completed == 0 ? 0 : Double(state.durations.max) / 1e9,
                attemptsPer100msPeak: peak,
                attemptsPer100msMean: mean,
                attemptsPeakToMean: mean > 0 ? Double(peak) / mean : 0,
                peakReconnecting: state.peakReconnecting,
                peakReconnectingAtSeconds: state.peakReconnectingAt,
                secondsUntil99PercentBack: state.recoveredAt.map { $0 - state.peakReconnectingAt },
                loginsPerSecondPeak: state.seconds.map(\.logins).max() ?? 0,
                reconnectSecondsHistogram: state.durationSeconds,
                timeSeries: state.seconds
            )
        }
    }

    private static func leave(_ phase: RoomConnection.Phase, key: String, in state: inout State) {
        switch phase {
        case .joined: state.online -= 1
        case .reconnecting:
            state.reconnecting -= 1
            state.lostAt[key] = nil
        case .joining: break
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
                    failed: state.failed
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

        init(second: Int, online: Int, reconnecting: Int, failed: Int) {
            self.second = second
            self.online = online
            self.reconnecting = reconnecting
            self.failed = failed
        }
    }

    /// Connections online, reconnecting and failed at the end.
    public var online: Int
    public var reconnecting: Int
    public var failed: Int
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
    /// The most connections reconnecting at once, and when (seconds since the start).
    public var peakReconnecting: Int
    public var peakReconnectingAtSeconds: Double
    /// From that peak until 1 % of it is still reconnecting; `nil` if that never happened.
    public var secondsUntil99PercentBack: Double?
    /// The most logins (joins and reconnections) the server was sent in one second.
    public var loginsPerSecondPeak: Int
    /// How many reconnections took 0–1 s, 1–2 s, 2–3 s, …
    public var reconnectSecondsHistogram: [Int]
    public var timeSeries: [Second]

    /// The time series as CSV, one row per second, with a header.
    public var timeSeriesCSV: String {
        var text = "second,online,reconnecting,failed,lost,rejoined,failed_now,attempts,logins\n"
        for row in timeSeries {
            text +=
                "\(row.second),\(row.online),\(row.reconnecting),\(row.failed),\(row.lost),\(row.rejoined),"
                + "\(row.failedNow),\(row.attempts),\(row.logins)\n"
        }
        return text
    }
}
