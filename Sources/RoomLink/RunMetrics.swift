internal import Prometheus
public import RoomLinkNetwork
import RoomLinkRuntime
public import RoomLinkScenarios

/// `roomlink load|run --metrics`: a run's live figures for Prometheus, in its text format or in OpenMetrics (for a
/// scraper that asks for it), through swift-prometheus's registry.
///
/// A scrape reads a ``LiveRunSnapshot`` and brings the registry up to it: gauges are set, counters grow by what was
/// counted since the previous scrape. Histograms are written from the run's HDR histograms, bucket by bucket, in the
/// same format: swift-prometheus fills a histogram one observation at a time, and replaying the thousands of timer
/// firings a second into it cost a real-clock run 3 % of its CPU (BENCHMARKS.md, issue 60). In virtual time every figure moves with the
/// scenario's clock: `roomlink_scenario_seconds{clock="virtual"}` says how far it has gone.
///
/// docs/live.md lists every metric.
public final class RunMetrics: Sendable {
    private let live: LiveRun
    private let registry = PrometheusCollectorRegistry()
    /// What the previous scrape brought the registry to; scrapes take turns.
    private let seen = LockedBox(Seen())
    private let constantLabels: [(String, String)]

    private struct Seen {
        var counters: [String: Double] = [:]
        /// The histograms of the last scrape, rendered (swift-prometheus fills a histogram one observation at a
        /// time: a run's HDR histograms, millions of observations, are written from their buckets instead).
        var histograms: [String] = []
    }

    /// Metrics of the run `live` watches; `labels` go on every series (a fleet's generator, `generator="2"`).
    public init(live: LiveRun, labels: [(String, String)] = []) {
        self.live = live
        self.constantLabels = labels
    }

    /// The figures now, in Prometheus's text format (0.0.4) or in OpenMetrics 1.0.
    public func render(openMetrics: Bool = false) -> String {
        let text = seen.withLock { seen -> String in
            seen.histograms = []
            if let snapshot = live.snapshot() { update(from: snapshot, seen: &seen) }
            return registry.emitToString() + seen.histograms.joined()
        }
        return openMetrics ? Self.openMetrics(text) : text
    }

    /// Answers a scrape: `/metrics` in the format its `Accept` header prefers (OpenMetrics when it names
    /// `application/openmetrics-text`, as Prometheus does).
    public func respond(to request: MonitorRequest) -> MonitorResponse {
        guard request.path == "/metrics" else { return .error(404, "no \(request.path) here: scrape /metrics") }
        if request.accept.contains("application/openmetrics-text") {
            return MonitorResponse(
                contentType: "application/openmetrics-text; version=1.0.0; charset=utf-8",
                text: render(openMetrics: true)
            )
        }
        return MonitorResponse(contentType: "text/plain; version=0.0.4; charset=utf-8", text: render())
    }

    /// Prometheus's text format as OpenMetrics: a counter's family is named without its `_total` (its samples keep
    /// it), and the exposition ends with `# EOF`. Gauges and histograms read the same in both.
    public static func openMetrics(_ text: String) -> String {
        var lines: [Substring] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            let words = line.split(separator: " ", maxSplits: 3)
            if words.count == 4, words[0] == "#", words[1] == "TYPE", words[3] == "counter",
                words[2].hasSuffix("_total")
            {
                lines.append("# TYPE \(words[2].dropLast("_total".count)) counter")
            } else if words.count >= 3, words[0] == "#", words[1] == "HELP", words[2].hasSuffix("_total") {
                let rest = words.count == 4 ? " " + words[3] : ""
                lines.append("# HELP \(words[2].dropLast("_total".count))\(rest)")
            } else {
                lines.append(line)
            }
        }
        return lines.isEmpty ? "# EOF\n" : lines.joined(separator: "\n") + "\n# EOF\n"
    }

    // MARK: - Bringing the registry up to a snapshot

    private func update(from snapshot: LiveRunSnapshot, seen: inout Seen) {
        let progress = snapshot.progress
        gauge(
            "roomlink_scenario_seconds",
            [("clock", snapshot.clock), ("dialect", snapshot.dialect)],
            "Scenario time the run has reached (virtual: the simulated clock; real: the wall's, scaled).",
            progress.scenarioSeconds
        )
        gauge("roomlink_scenario_end_seconds", [], "Scenario time at which the run ends.", progress.scenarioEnd)
        gauge(
            "roomlink_run_finished",
            [],
            "1 once the run has returned: the figures are its last.",
            snapshot.finished ? 1 : 0
        )
        gauge(
            "roomlink_generator_resident_memory_bytes",
            [],
            "The generator's resident memory.",
            Double(progress.rssBytes)
        )
        let help = "Clients by state: online, reconnecting, failed (their room ended in failure), offline (the rest)."
        let load = snapshot.load
        let online = load?.online ?? progress.online
        let reconnecting = load?.reconnecting ?? progress.reconnecting
        let failed = load?.failed ?? progress.failed
        gauge("roomlink_clients", [("state", "online")], help, Double(online))
        gauge("roomlink_clients", [("state", "reconnecting")], help, Double(reconnecting))
        gauge("roomlink_clients", [("state", "failed")], help, Double(failed))
        gauge(
            "roomlink_clients",
            [("state", "offline")],
            help,
            Double(max(0, snapshot.clients - online - reconnecting - failed))
        )
        for (type, count) in snapshot.eventsByType {
            counter(
                "roomlink_client_events_total",
                [("type", type)],
                "Events delivered to the clients' apps, by type.",
                Double(count),
                seen: &seen
            )
        }
        for (key, count) in snapshot.refusals {
            let parts = key.split(separator: " ", maxSplits: 1).map(String.init)
            counter(
                "roomlink_client_refusals_total",
                [("reason", parts[0]), ("code", parts.count > 1 ? parts[1] : "")],
                "Refusals and removals the clients' apps were told of (failed logins, kick-outs, tokens refused), "
                    + "by reason and vendor code.",
                Double(count),
                seen: &seen
            )
        }
        if let load {
            let seconds = load.seconds
            let logins = "Logins the clients sent (joins and reconnections) and those accepted (goodput)."
            counter(
                "roomlink_client_logins_total",
                [("outcome", "sent")],
                logins,
                Double(seconds.reduce(0) { $0 + $1.logins }),
                seen: &seen
            )
            counter(
                "roomlink_client_logins_total",
                [("outcome", "accepted")],
                logins,
                Double(seconds.reduce(0) { $0 + $1.accepted }),
                seen: &seen
            )
            counter(
                "roomlink_client_reconnect_attempts_total",
                [],
                "Reconnect attempts the clients sent.",
                Double(seconds.reduce(0) { $0 + $1.attempts }),
                seen: &seen
            )
            counter(
                "roomlink_client_connections_lost_total",
                [],
                "Connections the clients lost (each starts a reconnection).",
                Double(seconds.reduce(0) { $0 + $1.lost }),
                seen: &seen
            )
            counter(
                "roomlink_client_failures_total",
                [],
                "Rooms that ended in failure for a client: given up, refused or kicked.",
                Double(load.failures),
                seen: &seen
            )
            histogram(
                "roomlink_client_reconnect_duration_seconds",
                "How long completed reconnections took.",
                load.durations,
                buckets: [0.5, 1, 2, 3, 5, 8, 13, 21, 34, 60, 120, 300],
                seen: &seen
            )
        }
        if let connections = snapshot.connections {
            let seconds = connections.seconds
            let help = "Connections to the server: attempted, opened, and failed (by cause)."
            counter(
                "roomlink_client_connections_total",
                [("outcome", "attempted")],
                help,
                Double(seconds.reduce(0) { $0 + $1.attempts }),
                seen: &seen
            )
            counter(
                "roomlink_client_connections_total",
                [("outcome", "opened")],
                help,
                Double(seconds.reduce(0) { $0 + $1.opened }),
                seen: &seen
            )
            for cause in ConnectionFailure.allCases {
                counter(
                    "roomlink_client_connection_failures_total",
                    [("cause", cause.rawValue)],
                    "Connections that failed, by cause.",
                    Double(connections.failures[cause.rawValue] ?? 0),
                    seen: &seen
                )
            }
            gauge(
                "roomlink_client_connections_open",
                [],
                "Connections open to the server now.",
                Double(seconds.last?.open ?? 0)
            )
            let milliseconds = [1.0, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000].map { $0 / 1000 }
            histogram(
                "roomlink_client_heartbeat_round_trip_seconds",
                "Heartbeat round trips, sent to answered.",
                connections.heartbeatRoundTrip,
                buckets: milliseconds,
                seen: &seen
            )
            histogram(
                "roomlink_client_login_duration_seconds",
                "Accepted logins, from the login sent to its answer.",
                connections.login,
                buckets: milliseconds,
                seen: &seen
            )
        }
        if let tokens = snapshot.tokens {
            let seconds = tokens.seconds
            let help = "Token fetches from the token server: sent, fetched and failed."
            counter(
                "roomlink_token_fetches_total",
                [("outcome", "sent")],
                help,
                Double(seconds.reduce(0) { $0 + $1.fetches }),
                seen: &seen
            )
            counter(
                "roomlink_token_fetches_total",
                [("outcome", "fetched")],
                help,
                Double(seconds.reduce(0) { $0 + $1.fetched }),
                seen: &seen
            )
            counter(
                "roomlink_token_fetches_total",
                [("outcome", "failed")],
                help,
                Double(seconds.reduce(0) { $0 + $1.failed }),
                seen: &seen
            )
            for (cause, count) in tokens.failures {
                counter(
                    "roomlink_token_fetch_failures_total",
                    [("cause", cause)],
                    "Token fetches that failed, by cause.",
                    Double(count),
                    seen: &seen
                )
            }
            histogram(
                "roomlink_token_fetch_duration_seconds",
                "Token fetches, sent to answered.",
                tokens.latency,
                buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
                seen: &seen
            )
        }
        if let lateness = snapshot.timerLateness {
            histogram(
                "roomlink_generator_timer_lateness_seconds",
                "How late the generator's own timers fired (real clock): a generator that falls behind shows here.",
                lateness,
                buckets: [0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
                seen: &seen
            )
        }
    }

    private func descriptor(_ name: String, _ help: String) -> MetricNameDescriptor {
        // Every name is `roomlink_<metric>[_<unit>]`: swift-prometheus puts them back together.
        let parts = name.dropFirst("roomlink_".count).split(separator: "_")
        let unit = ["total", "seconds", "bytes"].contains(parts.last ?? "") ? String(parts.last!) : ""
        let metric = (unit.isEmpty ? parts : parts.dropLast()).joined(separator: "_")
        return MetricNameDescriptor(namespace: "roomlink", metricName: metric, unitName: unit, helpText: help)
    }

    private func gauge(_ name: String, _ labels: [(String, String)], _ help: String, _ value: Double) {
        registry.makeGauge(descriptor: descriptor(name, help), labels: labels + constantLabels).set(to: value)
    }

    private func counter(
        _ name: String,
        _ labels: [(String, String)],
        _ help: String,
        _ value: Double,
        seen: inout Seen
    ) {
        let key = Self.key(name, labels)
        let counter = registry.makeCounter(descriptor: descriptor(name, help), labels: labels + constantLabels)
        let before = seen.counters[key] ?? 0
        // Counters only grow: a tally that went back (it cannot) would be left where it was.
        if value > before { counter.increment(by: value - before) }
        seen.counters[key] = max(value, before)
    }

    /// A histogram of `recorder`'s durations in Prometheus's text format (the same in OpenMetrics): its buckets at
    /// `buckets` (seconds), `+Inf`, the sum and the count, read from the HDR histogram's buckets in one pass.
    private func histogram(
        _ name: String,
        _ help: String,
        _ recorder: LatencyRecorder,
        buckets: [Double],
        seen: inout Seen
    ) {
        let bounds = buckets.map { Int64(($0 * 1e9).rounded()) }
        let (counts, total, sum) = recorder.cumulativeCounts(atNanoseconds: bounds)
        let labels = constantLabels.map { "\($0.0)=\"\(Self.escape($0.1))\"" }
        func series(_ suffix: String, _ extra: String? = nil) -> String {
            let all = labels + (extra.map { [$0] } ?? [])
            return name + suffix + (all.isEmpty ? "" : "{" + all.joined(separator: ",") + "}")
        }
        var text = "# HELP \(name) \(help)\n# TYPE \(name) histogram\n"
        for (bound, count) in zip(buckets, counts) {
            text += series("_bucket", "le=\"\(bound)\"") + " \(count)\n"
        }
        text += series("_bucket", "le=\"+Inf\"") + " \(total)\n"
        text += series("_sum") + " \(sum / 1e9)\n"
        text += series("_count") + " \(total)\n"
        seen.histograms.append(text)
    }

    /// A label value as the text format writes it: backslash, quote and newline escaped.
    private static func escape(_ value: String) -> String {
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    private static func key(_ name: String, _ labels: [(String, String)]) -> String {
        name + "{" + labels.map { "\($0.0)=\($0.1)" }.joined(separator: ",") + "}"
    }
}
