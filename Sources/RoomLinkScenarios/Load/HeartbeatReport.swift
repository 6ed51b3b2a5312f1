/// What a ``HeartbeatLoad`` run measured. Times are in scenario time unless named wall or CPU.
public struct HeartbeatReport: Sendable, Codable, Equatable {
    public var clients: Int
    public var loops: Int
    public var periodSeconds: Double
    public var scenarioSeconds: Double
    /// Heartbeats due before the end that fired.
    public var fires: Int
    /// Heartbeats due before the end of the run; equal to ``fires`` unless the runtime skipped periods.
    public var expectedFires: Int
    /// How late heartbeats fired after their due time (scenario milliseconds; always 0 in virtual time).
    public var latenessP50Milliseconds: Double
    public var latenessP99Milliseconds: Double
    public var latenessP999Milliseconds: Double
    public var latenessMaxMilliseconds: Double
    /// Wall-clock duration of the whole run.
    public var wallSeconds: Double
    /// CPU time (user + system, whole process) over the steady state (after the first two periods).
    public var steadyCPUSeconds: Double
    /// Steady-state CPU per heartbeat.
    public var cpuPerFireMicroseconds: Double
    /// Steady-state CPU as a share of one core (1.0 = one core busy).
    public var coreShare: Double
    public var peakRSSBytes: Int
}
