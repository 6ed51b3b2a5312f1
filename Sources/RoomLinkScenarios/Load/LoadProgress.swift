internal import Foundation

/// How a running load test is doing, for a progress line: sampled every wall-clock interval while it runs.
public struct LoadProgress: Sendable, Equatable, Codable {
    /// Scenario time reached, and wall time spent.
    public var scenarioSeconds: Double
    public var scenarioEnd: Double
    public var wallSeconds: Double
    public var online: Int
    public var reconnecting: Int
    public var failed: Int
    /// Reconnect attempts sent so far.
    public var attempts: Int
    /// Events delivered so far, and per wall second since the previous sample.
    public var events: Int
    public var eventsPerSecond: Double
    public var rssBytes: Int
    /// Real clock: the most a timer ran late since the previous sample (real milliseconds); `nil` in virtual time.
    public var latePeakMs: Double? = nil

    /// A sample; ``latePeakMs`` is `nil` (virtual time) unless set.
    public init(
        scenarioSeconds: Double,
        scenarioEnd: Double,
        wallSeconds: Double,
        online: Int,
        reconnecting: Int,
        failed: Int,
        attempts: Int,
        events: Int,
        eventsPerSecond: Double,
        rssBytes: Int,
        latePeakMs: Double? = nil
    ) {
        self.scenarioSeconds = scenarioSeconds
        self.scenarioEnd = scenarioEnd
        self.wallSeconds = wallSeconds
        self.online = online
        self.reconnecting = reconnecting
        self.failed = failed
        self.attempts = attempts
        self.events = events
        self.eventsPerSecond = eventsPerSecond
        self.rssBytes = rssBytes
        self.latePeakMs = latePeakMs
    }

    /// One line: `t 312.0/1800 s  wall 4.2 s  online 98000  reconnecting 2000  failed 0  attempts 5123  events 412k
    /// (98k/s)  RSS 180 MiB`, and on the real clock `  late ≤ 4.1 ms` (the most a timer ran late since the previous
    /// line).
    public var line: String {
        let late = latePeakMs.map { String(format: "  late ≤ %.1f ms", $0) } ?? ""
        return String(
            format:
                "t %.1f/%.0f s  wall %.1f s  online %d  reconnecting %d  failed %d  attempts %d  events %d (%.0f/s)  RSS %d MiB",
            scenarioSeconds,
            scenarioEnd,
            wallSeconds,
            online,
            reconnecting,
            failed,
            attempts,
            events,
            eventsPerSecond,
            rssBytes / 1_048_576
        ) + late
    }
}
