import Prometheus
import RoomLinkEngine
import RoomLinkLibevent
import RoomLinkRuntime
import RoomLinkWire

/// `/metrics`: the server's counters in Prometheus's text format, through swift-prometheus's registry.
///
/// The loops count into ``NetworkServerStatistics``' atomics (a relaxed add per frame); a scrape copies them into the
/// registry's metrics and renders it. Scrapes run on the admin loop, one at a time.
final class ServerMetrics: Sendable {
    private let registry = PrometheusCollectorRegistry()
    private let server: NetworkServer
    private let group: LibeventLoopGroup
    private let counters: [(NetworkServerStatistics.Counter, Counter)]
    private let closed: [(CloseReason, Counter)]
    private let open: Gauge
    private let rooms: Gauge
    private let queueDelay: [(Double, Gauge)]
    private let queuedLogins: Counter?
    private let lateness: [(Double, Gauge)]
    private let callbacks: CallbackMetrics?

    /// The room callbacks' figures (`serve --callback`).
    private struct CallbackMetrics: Sendable {
        let outcomes: [(CallbackStatistics.Counter, Counter)]
        let failures: [(CallbackFailureCause, Counter)]
        let losses: [(CallbackFailureCause, Counter)]
        let drops: [(CallbackDropReason, Counter)]
        let pending: Gauge
        let peak: Gauge
    }

    init(server: NetworkServer, group: LibeventLoopGroup) {
        self.server = server
        self.group = group
        let registry = registry
        let dialect = server.configuration.dialect.rawValue
        // Every name is `roomlink_<metric>_<unit>`.
        func descriptor(_ name: String, _ help: String) -> MetricNameDescriptor {
            let parts = name.dropFirst("roomlink_".count).split(separator: "_")
            let unit = ["total", "seconds"].contains(parts.last ?? "") ? String(parts.last!) : ""
            let metric = (unit.isEmpty ? parts : parts.dropLast()).joined(separator: "_")
            return MetricNameDescriptor(namespace: "roomlink", metricName: metric, unitName: unit, helpText: help)
        }
        func counter(_ name: String, _ labels: [(String, String)] = [], _ help: String) -> Counter {
            registry.makeCounter(descriptor: descriptor(name, help), labels: labels + [("dialect", dialect)])
        }
        func gauge(_ name: String, _ labels: [(String, String)] = [], _ help: String) -> Gauge {
            registry.makeGauge(descriptor: descriptor(name, help), labels: labels + [("dialect", dialect)])
        }
        counters = [
            (.connectionsAccepted, counter("roomlink_connections_accepted_total", [], "Connections accepted.")),
            (
                .loginRequests,
                counter("roomlink_logins_total", [("outcome", "requested")], "Login requests, by outcome.")
            ),
            (
                .loginsAccepted,
                counter("roomlink_logins_total", [("outcome", "accepted")], "Login requests, by outcome.")
            ),
            (
                .loginsRejected,
                counter("roomlink_logins_total", [("outcome", "rejected")], "Login requests, by outcome.")
            ),
            (.loginsBusy, counter("roomlink_logins_total", [("outcome", "busy")], "Login requests, by outcome.")),
            (.heartbeatsReceived, counter("roomlink_heartbeats_total", [], "Heartbeats received.")),
            (.presenceChangesSent, counter("roomlink_presence_changes_total", [], "User updates sent to members.")),
            (.framesReceived, counter("roomlink_frames_total", [("direction", "in")], "Frames, by direction.")),
            (.framesSent, counter("roomlink_frames_total", [("direction", "out")], "Frames, by direction.")),
            (.bytesReceived, counter("roomlink_bytes_total", [("direction", "in")], "Bytes, by direction.")),
            (.bytesSent, counter("roomlink_bytes_total", [("direction", "out")], "Bytes, by direction.")),
            (.acceptFailures, counter("roomlink_accept_failures_total", [], "Failed accepts (out of descriptors).")),
            (
                .webhooksDelivered,
                counter("roomlink_webhooks_total", [("outcome", "delivered")], "Webhook events, by outcome.")
            ),
            (
                .webhooksFailed,
                counter("roomlink_webhooks_total", [("outcome", "failed")], "Webhook events, by outcome.")
            ),
            (
                .webhooksDropped,
                counter("roomlink_webhooks_total", [("outcome", "dropped")], "Webhook events, by outcome.")
            ),
            (
                .tlsHandshakesFailed,
                counter("roomlink_tls_handshake_failures_total", [], "Accepted connections whose TLS handshake failed.")
            ),
        ]
        closed = CloseReason.allCases.map {
            (
                $0,
                counter(
                    "roomlink_connections_closed_total",
                    [("reason", $0.rawValue)],
                    "Connections closed, by reason."
                )
            )
        }
        open = gauge("roomlink_connections_open", [], "Connections open now.")
        rooms = gauge("roomlink_rooms", [], "Rooms created.")
        // Queue delays exist only where the server's capacity is modelled.
        let modelled = server.rooms.nodes != nil
        queueDelay = (modelled ? [0.5, 0.9, 0.99] : []).map {
            (
                $0,
                gauge("roomlink_queue_delay_seconds", [("quantile", "\($0)")], "How long messages waited for a worker.")
            )
        }
        queuedLogins =
            modelled
            ? counter("roomlink_queued_messages_total", [], "Messages served by a worker (capacity modelled).") : nil
        lateness = [0.5, 0.99].map {
            ($0, gauge("roomlink_timer_lateness_seconds", [("quantile", "\($0)")], "How late the loops' timers ran."))
        }
        callbacks = server.callbacks.map { callbacks in
            let vendor = ("vendor", callbacks.format.vendor.rawValue)
            return CallbackMetrics(
                outcomes: CallbackStatistics.Counter.allCases.map {
                    (
                        $0,
                        counter(
                            "roomlink_callbacks_total",
                            [("outcome", $0.rawValue), vendor],
                            "Room callbacks, by outcome."
                        )
                    )
                },
                failures: CallbackFailureCause.allCases.map {
                    (
                        $0,
                        counter(
                            "roomlink_callback_failures_total",
                            [("cause", $0.rawValue), vendor],
                            "Failed callback attempts (retried or not), by cause."
                        )
                    )
                },
                losses: CallbackFailureCause.allCases.map {
                    (
                        $0,
                        counter(
                            "roomlink_callback_losses_total",
                            [("cause", $0.rawValue), vendor],
                            "Callbacks lost after their last attempt, by its cause."
                        )
                    )
                },
                drops: CallbackDropReason.allCases.map {
                    (
                        $0,
                        counter(
                            "roomlink_callback_drops_total",
                            [("reason", $0.rawValue), vendor],
                            "Callbacks dropped before delivery, by reason."
                        )
                    )
                },
                pending: gauge("roomlink_callbacks_pending", [vendor], "Callbacks queued, in flight or to be retried."),
                peak: gauge("roomlink_callbacks_pending_peak", [vendor], "The most callbacks ever pending at once.")
            )
        }
    }

    /// The metrics now, rendered.
    func render() -> String {
        let statistics = server.statistics
        for (name, counter) in counters { set(counter, statistics[name]) }
        for (reason, counter) in closed { set(counter, statistics.connectionsClosed(by: reason)) }
        open.set(to: Double(statistics.connectionsOpen))
        rooms.set(to: Double(server.rooms.roomCount))
        if let nodes = server.rooms.nodes {
            var delay = LatencyRecorder()
            var served = 0
            for node in nodes.statistics {
                delay.merge(node.queueDelay)
                served += node.messages
            }
            let summary = delay.summary
            for (quantile, gauge) in queueDelay {
                let milliseconds = quantile == 0.5 ? summary.p50Ms : quantile == 0.9 ? summary.p90Ms : summary.p99Ms
                gauge.set(to: milliseconds / 1_000)
            }
            if let queuedLogins { set(queuedLogins, served) }
        }
        if let metrics = callbacks, let statistics = server.callbacks?.statistics {
            for (name, counter) in metrics.outcomes { set(counter, statistics[name]) }
            for (cause, counter) in metrics.failures { set(counter, statistics.failures(cause)) }
            for (cause, counter) in metrics.losses { set(counter, statistics.losses(cause)) }
            for (reason, counter) in metrics.drops { set(counter, statistics.drops(reason)) }
            metrics.pending.set(to: Double(statistics.pending))
            metrics.peak.set(to: Double(statistics.peakPending))
        }
        let timers = group.timerLateness
        for (quantile, gauge) in lateness { gauge.set(to: (quantile == 0.5 ? timers.p50Ms : timers.p99Ms) / 1_000) }
        return registry.emitToString()
    }

    private func set(_ counter: Counter, _ value: Int) {
        counter.reset()
        counter.increment(by: Int64(value))
    }
}
