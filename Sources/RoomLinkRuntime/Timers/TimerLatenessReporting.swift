/// A loop group that measures how late its timers run (real-time loops; virtual time is never late): what a run
/// reports about its own loops without knowing which loops they are.
public protocol TimerLatenessReporting: RuntimeLoopGroup {
    /// How late the timers of every loop ran — real time from each deadline to its handler's call.
    var timerLateness: LatencySummary { get }
    /// ``timerLateness``'s histogram, which merges with other processes'.
    var timerLatenessTally: LatencyRecorder { get }
    /// Scenario seconds per real second (1: real time).
    var scenarioSecondsPerSecond: Double { get }
    /// The worst lateness of any loop since the last call, and starts the next period.
    func takeLatenessPeak() -> Duration
}
