internal import Foundation

extension ConnectionReport {
    /// The connections' lines of a run's summary: attempts, opened, failures by cause, the latencies.
    public var summary: String {
        let connections = self
        let causes = connections.failures.filter { $0.value > 0 }.sorted { $0.key < $1.key }
            .map { "\($0.key) \($0.value)" }
        func percentiles(_ summary: LatencySummary) -> String {
            summary.count == 0
                ? "none"
                : String(
                    format: "p50 %.2f / p99 %.2f / p99.9 %.2f / max %.2f ms",
                    summary.p50Ms,
                    summary.p99Ms,
                    summary.p999Ms,
                    summary.maxMs
                )
        }
        let heartbeat = connections.heartbeatRoundTrip
        // After the fill, apart from it: what the steady state costs, without the logins' load.
        var steady = ""
        if let from = connections.steadyFrom, let after = connections.steadyHeartbeatRoundTrip, after.count > 0 {
            steady = String(
                format: "; after the fill (from %d s) p50 %.2f / p99 %.2f ms",
                from,
                after.p50Ms,
                after.p99Ms
            )
        }
        return """
              connections \(connections.attempts) attempts (peak \(connections.attemptsPerSecondPeak)/s), \
            \(connections.opened) opened (peak \(connections.openedPerSecondPeak)/s, \(connections.openPeak) open at \
            most), \(connections.loggedIn) logins accepted; failures: \(causes.isEmpty ? "none" : causes.joined(separator: ", "))
              connect     TCP \(percentiles(connections.tcpConnect)); login \(percentiles(connections.login))
              heartbeat   round trip \(heartbeat.count == 0 ? "none" : String(format: "p50 %.2f / p99 %.2f ms", heartbeat.p50Ms, heartbeat.p99Ms))\(steady)

            """
    }

}

extension RunReport {
    /// The report said for a person, a few lines: what `roomlink run` and `load` print on standard error when no
    /// `--report` file is asked for.
    public var summary: String {
        let report = self
        let types = report.eventsByType.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        var load = ""
        let afterFill = report.connections?.steadyTimerLateness.map { "; after the fill \($0.text)" } ?? ""
        let liveView =
            report.liveViewCPUSeconds.map {
                "  live view   \(String(format: "%.2f", $0)) s of that CPU time (--metrics, --dashboard)\n"
            } ?? ""
        let lateness =
            report.timerLateness.map {
                "  timers late p50 / p99 / max \($0.text) (\($0.count) timers)\(afterFill)\n"
            } ?? ""
        if let stats = report.load {
            func f(_ value: Double) -> String { String(format: "%.2f", value) }
            load = """
                  connections online \(stats.online), reconnecting \(stats.reconnecting), failed \(stats.failed), offline \
                \(stats.offline) at the end (\(stats.failures) failures in all)
                  reconnections \(stats.reconnections): p50 \(f(stats.reconnectSecondsP50)) s, p90 \(f(stats.reconnectSecondsP90)) s, \
                p99 \(f(stats.reconnectSecondsP99)) s, max \(f(stats.reconnectSecondsMax)) s
                  storm        \(stats.peakReconnecting) reconnecting at \(f(stats.peakReconnectingAtSeconds)) s; 99 % back \
                \(stats.secondsUntil99PercentBack.map { "after \(f($0)) s" } ?? "never"); attempts per 100 ms peak \
                \(stats.attemptsPer100msPeak), mean \(f(stats.attemptsPer100msMean)) (peak/mean \(f(stats.attemptsPeakToMean))), \
                retries only peak \(stats.retriesPer100msPeak), mean \(f(stats.retriesPer100msMean)) (peak/mean \
                \(f(stats.retriesPeakToMean))); \
                logins per second peak \(stats.loginsPerSecondPeak)
                  peer sees leave \(stats.peerSeesLeave.count == 0 ? "not seen" : "p50 / p99 / max \(stats.peerSeesLeave.text) (\(stats.peerSeesLeave.count))")

                """
            for recovery in stats.recoveries {
                load += "  recovery    \(recovery.window.fault): \(recovery.onlineBefore) online before, "
                load += "\(recovery.onlineLowest) at the lowest; "
                load += recovery.secondsToAllBack.map { "all back \(f($0)) s after it ended\n" } ?? "not all back\n"
            }
            if let delivery = stats.deliveryLatency {
                load += "  delivery    p50 / p99 / max \(delivery.text) from cause to callback (\(delivery.count))\n"
            }
        }
        return """
            roomlink — \(report.dialect), \(report.clients) clients, \(report.rooms) rooms, \
            \(String(format: "%.1f", report.scenarioSeconds)) s of scenario time on the \(report.clock) clock\
            \(report.interrupted ? " (interrupted: the run stopped early)" : "")
              events      \(report.events) (\(types.joined(separator: ", ")))
              violations  \(report.violations)
              wall time   \(String(format: "%.3f", report.wallSeconds)) s
              peak RSS    \(report.peakRSSBytes / 1_048_576) MiB (\(report.bytesPerClient) B per client added)
              CPU time    \(String(format: "%.1f", report.cpuSeconds)) s (\(String(format: "%.2f", report.wallSeconds > 0 ? report.cpuSeconds / report.wallSeconds : 0)) cores)
            \(liveView)\(lateness)\(load)\(report.connections.map(\.summary) ?? "")\(report.servers.map { "  " + $0.summaryLine + "\n" } ?? "")\
            \(report.tokens.map { "  " + $0.summaryLine + "\n" } ?? "")\
            \((report.lacks ?? []).map { "  lacks       " + $0 + "\n" }.joined())
            """
    }
}
