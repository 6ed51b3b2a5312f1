/// One timer case at one size: the `timers` table's row and one `--json` line.
struct TimerCaseResult: Codable, Sendable {
    var kind = "timers"
    var name: String
    var n: Int
    /// Wall nanoseconds per schedule, on the arming thread.
    var scheduleNs: Double
    /// Process CPU nanoseconds per fired timer, while the timers fired.
    var fireCpuNs: Double
    /// Wall nanoseconds per cancel with `n` timers pending, on the cancelling thread.
    var cancelNs: Double
    var latenessP50Us: Double
    var latenessP99Us: Double
    var latenessMaxUs: Double
    var wallSeconds: Double
}

extension TimerCaseResult {
    /// A case's result from its costs, the lateness its timers recorded, and when it started (the runner names it).
    init(n: Int, scheduleNs: Double, fireCpuNs: Double, cancelNs: Double, stats: FireStats, startedAt started: Int64) {
        let late = stats.latenessMicroseconds()
        self.init(
            name: "",
            n: n,
            scheduleNs: scheduleNs,
            fireCpuNs: fireCpuNs,
            cancelNs: cancelNs,
            latenessP50Us: late.p50,
            latenessP99Us: late.p99,
            latenessMaxUs: late.max,
            wallSeconds: Double(Monotonic.now() - started) / 1e9
        )
    }
}

/// One heartbeat case: every client re-arms a periodic timer.
struct HeartbeatCaseResult: Codable, Sendable {
    var kind = "heartbeat"
    var name: String
    var clients: Int
    var periodSeconds: Double
    var windowSeconds: Double
    var fires: Int
    /// CPU nanoseconds per heartbeat over the window.
    var cpuPerFireNs: Double
    /// CPU as a percentage of one core over the window.
    var coreSharePercent: Double
}

/// How long after a timer's handler starts an actor method runs.
struct ActorDispatchResult: Codable, Sendable {
    var kind = "actorDispatch"
    var name: String
    var samples: Int
    /// From the handler's entry to the actor method's first line.
    var handlerToMethodP50Us: Double
    var handlerToMethodP99Us: Double
    /// From the timer's deadline to the actor method's first line.
    var deadlineToMethodP50Us: Double
    var deadlineToMethodP99Us: Double
}
