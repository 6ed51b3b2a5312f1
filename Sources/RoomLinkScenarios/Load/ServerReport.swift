internal import Foundation

/// What the server nodes went through in a run whose server capacity is modelled (contract §9): per node and in total,
/// offered and completed logins, wasted and refused work, queue delay and length over time, false departures — and
/// whether the system recovered once the last fault was over. The report's `servers` object.
public struct ServerReport: Sendable, Codable, Equatable {
    /// One node's totals, or all nodes' (``total``).
    public struct Node: Sendable, Codable, Equatable {
        /// The node's index; −1 for the total.
        public var node: Int
        /// Logins that arrived (offered load) and that were served (wasted ones included).
        public var offeredLogins: Int
        public var completedLogins: Int
        /// Logins served for nobody: for a node, those whose answer could not reach its client before it stopped
        /// waiting (the node's estimate, the answer's trip taken as long as the request's); for the total, with the
        /// clients' side known, every completed login that did not leave a client in its room (``goodputLogins``).
        public var wastedLogins: Int
        /// For the total, with the clients' side known: logins whose answer reached a client still waiting for it and
        /// left it in its room — goodput, counted where it lands.
        public var goodputLogins: Int?
        /// Logins refused by admission control (busy), and dropped unserved because they expired in the queue.
        public var refusedLogins: Int
        public var shedLogins: Int
        public var heartbeats: Int
        /// Heartbeats that arrived in time but were served after the room had dropped their member.
        public var lateHeartbeats: Int
        /// Members dropped for silence while one of their heartbeats was waiting for a worker: live clients the
        /// server's own delay removed (peers saw them leave, and join again when they reconnected).
        public var falseDepartures: Int
        /// Messages served, of every kind.
        public var messages: Int
        /// The most messages waiting for a worker at once (for the total: the largest node's).
        public var peakQueue: Int
        /// How long messages waited for a worker.
        public var queueDelay: LatencySummary
        /// The most logins offered, and served, in one second.
        public var offeredLoginsPerSecondPeak: Int
        public var completedLoginsPerSecondPeak: Int
    }

    /// One second of the run, over all nodes.
    public struct Second: Sendable, Codable, Equatable {
        public var second: Int
        public var offeredLogins: Int
        public var completedLogins: Int
        public var wastedLogins: Int
        /// Logins that left a client in its room during the second (goodput, from the clients' side; without it, the
        /// completed logins less the nodes' estimate of wasted ones).
        public var goodputLogins: Int
        public var refusedLogins: Int
        /// The sum over nodes of each one's longest queue during the second.
        public var queue: Int
        public var falseDepartures: Int
    }

    /// The capacity, admission and queue bound, as written on the command line.
    public var policy: String
    public var total: Node
    public var nodes: [Node]
    /// When the last fault of the timeline ended (seconds from the start; the run's end if one never did), if the
    /// timeline has faults.
    public var lastFaultEndSeconds: Double?
    /// Whether, after the last fault ended, 99 % of the connections online before the first fault were back with the
    /// queues drained (no message waiting a second for a worker); `nil` without faults.
    public var recovered: Bool?
    /// From the end of the last fault to that moment.
    public var recoverySeconds: Double?
    /// The faults ended, but at the end of the run (its last 30 s, at least 10 s after the faults) the nodes still
    /// served fewer logins in time (goodput) than were offered: a metastable failure, which the summary calls out.
    public var sustainedOverload: Bool
    public var timeSeries: [Second]
}

extension ServerReport {
    /// The report of `nodes` (one entry per node; shards' statistics of one node already merged), judged against
    /// the load statistics' per-second series.
    init(
        policy: ServerPolicy,
        nodes statistics: [ServerNodeStatistics],
        load: LoadReport?,
        firstFault: Double?,
        lastFaultEnd: Double?,
        end: Double
    ) {
        self.policy = [
            "nodes=\(policy.nodes)",
            policy.capacity.map { "capacity \($0.text)" },
            policy.admission.map { "admission \($0.text)" },
            policy.maxQueue.map { "max-queue \($0.roomLinkText)" },
            policy.shedExpired ? "shed-expired" : nil,
        ].compactMap(\.self).joined(separator: "; ")
        nodes = statistics.enumerated().map { Self.node($0.offset, $0.element) }
        var merged = statistics.first ?? ServerNodeStatistics(origin: .zero)
        for other in statistics.dropFirst() { merged.merge(other) }
        total = Self.node(-1, merged)
        total.peakQueue = nodes.map(\.peakQueue).max() ?? 0
        let seconds = Int(end.rounded(.up))
        // Goodput is counted where it lands: a login is useful when its answer reaches a client still waiting for it
        // and leaves it in its room — the clients' accepted logins, when the load statistics have them.
        let accepted = load.map { report in
            var perSecond = [Int](repeating: 0, count: max(seconds, merged.seconds.count))
            for row in report.timeSeries where row.second >= 0 && row.second < perSecond.count {
                perSecond[row.second] += row.accepted
            }
            return perSecond
        }
        if let accepted {
            let goodput = accepted.reduce(0, +)
            total.goodputLogins = goodput
            total.wastedLogins = max(0, total.completedLogins - goodput)
        }
        timeSeries = (0..<max(seconds, merged.seconds.count)).map { index in
            let row = index < merged.seconds.count ? merged.seconds[index] : ServerNodeStatistics.Second()
            let goodput = accepted?[index] ?? max(0, row.completed - row.wasted)
            return Second(
                second: index,
                offeredLogins: row.offered,
                completedLogins: row.completed,
                wastedLogins: accepted == nil ? row.wasted : max(0, row.completed - goodput),
                goodputLogins: goodput,
                refusedLogins: row.refused,
                queue: row.queuePeak,
                falseDepartures: row.falseDepartures
            )
        }
        self.lastFaultEndSeconds = lastFaultEnd
        recovered = nil
        recoverySeconds = nil
        sustainedOverload = false
        guard let lastFaultEnd, let firstFault else { return }
        // Overload that outlives its trigger: over the run's last 30 s after the faults ended (at least 10 s of them),
        // logins were still offered and fewer of them left a client in its room (goodput) than were offered. A system
        // that recovered has settled: its late logins are all answered in time.
        let after = timeSeries.filter { Double($0.second) >= lastFaultEnd.rounded(.up) && Double($0.second) < end }
        let tail = after.suffix(30)
        let offered = tail.reduce(0) { $0 + $1.offeredLogins }
        let goodput = tail.reduce(0) { $0 + $1.goodputLogins }
        sustainedOverload = after.count >= 10 && offered > 0 && goodput < offered
        guard let series = load?.timeSeries, !series.isEmpty else { return }
        let before = series.filter { Double($0.second) < firstFault }.map(\.online).max() ?? 0
        let wanted = Int((Double(before) * 0.99).rounded(.up))
        let firstBack = series.first { row in
            Double(row.second) + 1 >= lastFaultEnd && row.online >= wanted
                && (row.second >= merged.seconds.count || merged.seconds[row.second].maxWaitNanoseconds < 1_000_000_000)
        }
        recovered = firstBack != nil && !sustainedOverload
        recoverySeconds = firstBack.map { max(0, Double($0.second + 1) - lastFaultEnd) }
    }

    private static func node(_ index: Int, _ statistics: ServerNodeStatistics) -> Node {
        Node(
            node: index,
            offeredLogins: statistics.offeredLogins,
            completedLogins: statistics.completedLogins,
            wastedLogins: statistics.wastedLogins,
            goodputLogins: nil,
            refusedLogins: statistics.refusedLogins,
            shedLogins: statistics.shedLogins,
            heartbeats: statistics.heartbeats,
            lateHeartbeats: statistics.lateHeartbeats,
            falseDepartures: statistics.falseDepartures,
            messages: statistics.messages,
            peakQueue: statistics.peakQueue,
            queueDelay: statistics.queueDelay.summary,
            offeredLoginsPerSecondPeak: statistics.seconds.map(\.offered).max() ?? 0,
            completedLoginsPerSecondPeak: statistics.seconds.map(\.completed).max() ?? 0
        )
    }

    /// The time series as CSV, one row per second, with a header: the columns a load report's series adds.
    public var timeSeriesCSVColumns: (header: String, rows: [String]) {
        (
            "offered_logins,completed_logins,wasted_logins,refused_logins,queue,false_departures",
            timeSeries.map {
                "\($0.offeredLogins),\($0.completedLogins),\($0.wastedLogins),\($0.refusedLogins),\($0.queue),"
                    + "\($0.falseDepartures)"
            }
        )
    }

    /// One line for a run's summary.
    public var summaryLine: String {
        var line =
            "servers: \(total.completedLogins)/\(total.offeredLogins) logins served, "
            + (total.goodputLogins.map { "\($0) answered in time (goodput), " } ?? "")
            + "\(total.wastedLogins) wasted, "
            + "\(total.refusedLogins) refused, \(total.shedLogins) shed; queue delay \(total.queueDelay.text), "
            + "peak queue \(total.peakQueue); \(total.falseDepartures) false departures, "
            + "\(total.lateHeartbeats) late heartbeats"
        if let recovered {
            line +=
                recovered
                ? "; recovered \(String(format: "%.0f", recoverySeconds ?? 0)) s after the last fault"
                : "; did NOT recover after the last fault"
        }
        if sustainedOverload {
            line += "\nSUSTAINED OVERLOAD: goodput stayed below the offered load after the trigger ended"
        }
        return line
    }
}
