@_spi(RoomLinkInternals) public import RoomLinkRuntime

#if canImport(Glibc)
import Glibc
#endif

/// The libevent loops of a process: by default one per core, sharing one clock.
///
/// Place an actor on a loop by its ID with `RuntimeLoopGroup.loop(for:)`; the placement is stable across runs.
///
/// ```swift
/// try await LibeventLoopGroup.withLoopGroup { group in
///     let loop = group.loop(for: "client-42")
///     try loop.schedule(after: .milliseconds(5)) { print("on", loop.index) }
/// }
/// ```
///
/// - Important: Call ``shutdown()`` when done (or use ``withLoopGroup(configuration:_:)``); each loop owns a
///   thread that runs until then.
public final class LibeventLoopGroup: TimerLatenessReporting {
    /// How a group's loops are made.
    public struct Configuration: Sendable {
        /// How many loops (threads); default one per online core.
        public var loopCount: Int
        /// How each loop keeps its timers; default ``TimerBackend/wheel``.
        public var timerBackend: TimerBackend
        /// log2 of the wheel's tick in nanoseconds; default 19 (≈ 0.52 ms). A timer fires at most one tick (plus
        /// wake-up latency) after its deadline; shorter ticks mean more wake-ups.
        public var wheelTickShift: UInt64
        /// Real seconds per scenario second: `0.01` runs 20 scenario minutes in 12 real seconds. Every deadline
        /// and `now` is in scenario time; only the loop's waiting is scaled.
        public var timeScale: Double
        /// Use libevent's precise monotonic clock (`EVENT_BASE_FLAG_PRECISE_TIMER`) instead of the coarse one,
        /// which fires up to ≈ 4 ms early or late. Default true.
        public var usesPreciseTimer: Bool

        /// Creates a configuration; every parameter has the documented default.
        public init(
            loopCount: Int = LibeventLoopGroup.coreCount,
            timerBackend: TimerBackend = .wheel,
            wheelTickShift: UInt64 = 19,
            timeScale: Double = 1,
            usesPreciseTimer: Bool = true
        ) {
            self.loopCount = loopCount
            self.timerBackend = timerBackend
            self.wheelTickShift = wheelTickShift
            self.timeScale = timeScale
            self.usesPreciseTimer = usesPreciseTimer
        }

        /// The tick shift for a scenario run at `timeScale`: a tick of about 4 ms of scenario time (22 at scale 1,
        /// 18 at 0.1, 15 at 0.01), at least 2^10 ns. Waking a loop costs more than the timers of a short tick (its
        /// caches went cold while it slept), so a run that can wait 4 ms wakes an eighth as often as at 19 and spends
        /// about a fifth less CPU; scaled, the tick shrinks with the scale, so timers stay as punctual in scenario
        /// time — far inside a network's latency.
        public static func scenarioTickShift(timeScale: Double) -> UInt64 {
            let ideal = Double(1 << 22) * timeScale
            guard ideal >= 1_024 else { return 10 }
            guard ideal < Double(1 << 22) else { return 22 }
            return UInt64(Int.bitWidth - 1 - Int(ideal).leadingZeroBitCount)  // ⌊log2(ideal)⌋
        }
    }

    /// The most loops a group may have (each is a thread).
    public static let maximumLoopCount = 1_024

    /// The number of online cores.
    public static var coreCount: Int { max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN))) }

    /// The loops, each on its own thread.
    public let eventLoops: [LibeventLoop]
    /// The configuration the loops were made with.
    public let configuration: Configuration
    private let epoch: UInt64
    private let timeScale: TimeScale

    /// Starts `configuration.loopCount` loops.
    ///
    /// - Throws: `RuntimeError.Code.invalidConfiguration` for a loop count outside 1…``maximumLoopCount``, a
    ///   time scale that is not a positive finite number, a tick shift over 30, or a thread the system refuses;
    ///   `RuntimeError.Code.libeventFailure` if libevent cannot make a base.
    public init(configuration: Configuration = Configuration()) throws(RuntimeError) {
        guard (1...Self.maximumLoopCount).contains(configuration.loopCount) else {
            throw .invalidConfiguration(
                "loopCount must be from 1 to \(Self.maximumLoopCount), got \(configuration.loopCount)"
            )
        }
        guard configuration.timeScale.isFinite, configuration.timeScale > 0 else {
            throw .invalidConfiguration("timeScale must be a positive number, got \(configuration.timeScale)")
        }
        guard configuration.wheelTickShift <= 30 else {
            throw .invalidConfiguration(
                "wheelTickShift must be at most 30 (≈ 1 s), got \(configuration.wheelTickShift)"
            )
        }
        self.configuration = configuration
        self.epoch = Libevent.monotonicNanoseconds()
        self.timeScale = TimeScale(configuration.timeScale)
        var loops: [LibeventLoop] = []
        do {
            for index in 0..<configuration.loopCount {
                loops.append(try LibeventLoop(index: index, epoch: epoch, configuration: configuration))
            }
        } catch {
            for loop in loops { loop.shutdown() }
            throw error
        }
        eventLoops = loops
    }

    /// Runs `body` with a new group and shuts the group down afterwards, whether `body` returns or throws.
    public static func withLoopGroup<T>(
        configuration: Configuration = Configuration(),
        _ body: (LibeventLoopGroup) async throws -> T
    ) async throws -> T {
        let group = try LibeventLoopGroup(configuration: configuration)
        do {
            let result = try await body(group)
            group.shutdown()
            return result
        } catch {
            group.shutdown()
            throw error
        }
    }

    public var loops: [any RuntimeLoop] { eventLoops }

    public var now: RuntimeInstant {
        RuntimeInstant(nanoseconds: timeScale.scenario(Libevent.monotonicNanoseconds() &- epoch))
    }

    public var scenarioSecondsPerSecond: Double { configuration.timeScale }

    /// The most a timer of any loop ran late (real time) since the previous call; each loop starts over.
    public func takeLatenessPeak() -> Duration {
        eventLoops.map { $0.takeLatenessPeak() }.max() ?? .zero
    }

    /// How late the timers of every loop ran — real time from each deadline to its handler's call, whatever the
    /// time scale — since the group started or since ``resetTimerLateness()``.
    public var timerLateness: LatencySummary { timerLatenessTally.summary }

    /// ``timerLateness``'s histogram, which merges with other processes'.
    public var timerLatenessTally: LatencyRecorder {
        var all = LatencyRecorder()
        for loop in eventLoops { all.merge(loop.timerLateness) }
        return all
    }

    /// Forgets the lateness recorded so far on every loop.
    public func resetTimerLateness() {
        for loop in eventLoops { loop.resetTimerLateness() }
    }

    /// Stops every loop: pending timers are cancelled, jobs already sent run, and every thread ends before this
    /// returns (unless called from one of the loops, whose thread then ends on its own).
    public func shutdown() {
        for loop in eventLoops { loop.shutdown() }
    }
}
