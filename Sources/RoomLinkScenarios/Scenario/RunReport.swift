/// What a scenario run produced (contract §7's `--report`): counts of events, the spec oracle's verdict, and cost.
public struct RunReport: Sendable, Codable, Equatable {
    public var dialect: String
    public var clock: String
    public var seed: UInt64
    /// Clients (named users plus the population).
    public var clients: Int
    /// Rooms the server opened.
    public var rooms: Int
    /// Events delivered (lines of the event log).
    public var events: Int
    /// Events counted once per peer they name: a ZEGO `userUpdate` listing 40 users counts 40, as 40 Agora
    /// `userJoined` would. The same presence news delivered to the same clients gives the same count in every
    /// dialect.
    public var eventsPerPeer: Int
    /// Events by log `type`.
    public var eventsByType: [String: Int]
    /// Events with a `state` field (Agora, LiveKit `connectionState`) by that state.
    public var eventsByState: [String: Int]
    /// Events with a `reason` field by that reason.
    public var eventsByReason: [String: Int]
    /// Events with a `code` field (ZEGO `roomState`) by that code.
    public var eventsByCode: [String: Int]
    /// Messages the network delivered, both directions: a measure of the work a run did, whatever its dialect.
    public var messages: Int
    /// How many spec checks failed; the CLI exits non-zero when this is not 0.
    public var violations: Int
    /// The first violations found (at most 20), one line each.
    public var violationSample: [String]
    /// Events a bounded stream buffer dropped (0: the runner records through a sink, which never drops).
    public var droppedEvents: Int
    public var wallSeconds: Double
    public var scenarioSeconds: Double
    public var eventsPerWallSecond: Double
    public var peakRSSBytes: Int
    /// Peak RSS divided by clients: an upper bound of the memory per client.
    public var peakRSSBytesPerClient: Int
    /// What the run added to the resident set at its peak, per client: (peak RSS − RSS at the start) / clients.
    public var bytesPerClient: Int = 0
    /// CPU time (user + system, every thread) the run used, in seconds.
    public var cpuSeconds: Double = 0
    /// Of ``cpuSeconds``, what the live view took (`--metrics` and `--dashboard`: their servers' threads, answering
    /// and gathering the figures they serve); `nil` when nothing was served.
    public var liveViewCPUSeconds: Double? = nil
    /// How many simulations shared the run (see ``ScenarioRunner/shards``); 1 on the real clock.
    public var shards: Int = 1
    /// Real clock only: how late every timer of the run fired (heartbeats, retries, timeouts, and the network's
    /// deliveries — one timer per batch where they ride a loop's delay line), from its deadline to its handler's
    /// call, in real milliseconds.
    public var timerLateness: LatencySummary? = nil
    /// Real clock only: whether the loops kept up with the scenario (``keptUp(timerLateness:timeScale:latency:)``).
    /// When they did not, the run's timing is the machine's rather than the scenario's, and the CLI warns.
    public var keptUp: Bool? = nil
    /// Against a real server with a population login window: whether the loops kept up after the fill (the same
    /// test as ``keptUp``, on ``ConnectionReport/steadyTimerLateness``). A generator that fell behind only while the
    /// rooms filled measured the steady state on time, and its figures after the fill are the server's.
    public var keptUpAfterFill: Bool? = nil
    /// The load test's statistics (`roomlink load`), when the runner collected them.
    public var load: LoadReport? = nil
    /// Whether the run was stopped before the scenario's end (``RunInterruption``: a signal, a closed pipe). The
    /// report then covers the scenario up to ``scenarioSeconds``, and the oracle's verdict judged a log cut short.
    public var interrupted: Bool = false
    /// What the server nodes went through, when their capacity is modelled (contract §9; `"server"` in the scenario).
    public var servers: ServerReport? = nil
    /// The slice of the population the run played (`roomlink load --shard I/N`), if it played one.
    public var slice: RunSlice? = nil
    /// Real clock only: the timer lateness's histogram, so that reports of several processes merge exactly.
    public var timerLatenessTally: LatencyRecorder? = nil
    /// How many reports were merged into this one (`roomlink report merge`); 1 for a run's own.
    public var parts: Int = 1
    /// Against a real server: the connections' attempts, failures by cause and latencies.
    public var connections: ConnectionReport? = nil
    /// When the clients fetched their tokens (`--token-url`, `--token-server`, `--app-id`): the token storm.
    public var tokens: TokenReport? = nil
    /// A fleet's merged report that lacks a generator's part says so here, one line per part lacking (the slice,
    /// the generator, and its last figures when it pushed any); `nil` when nothing is lacking.
    public var lacks: [String]? = nil
}

extension RunReport {
    /// Whether loops whose timers ran `timerLateness` late (real time) kept up with a scenario played at `timeScale`
    /// over a network of one-way `latency`: their p99 lateness in scenario time (real ÷ scale) is under the latency
    /// (at least 10 ms). Later than that, a message can overtake the timer that should have sent it, and retry
    /// schedules and timeouts drift by more than the network itself moves things.
    public static func keptUp(timerLateness: LatencySummary, timeScale: Double, latency: Duration) -> Bool {
        let bound = max(latency, .milliseconds(10)) / .milliseconds(1)
        return timerLateness.p99Ms / timeScale < bound
    }
}
