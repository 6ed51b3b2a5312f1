public import ArgumentParser
import RoomLink

/// Which clock and runtime a command runs on.
struct ClockOptions: ParsableArguments {
    enum ClockKind: String, ExpressibleByArgument, CaseIterable {
        case virtual, real
    }

    @Option(help: "virtual: deterministic virtual time (fast); real: libevent loops in real time.")
    var clock: ClockKind = .virtual

    @Option(help: "Real seconds per scenario second on the real clock (0.01 runs 20 min in 12 s).")
    var timeScale: Double = 1

    @Option(help: "Seed of the random streams (default 0, or the scenario's seed for `run`).")
    var seed: UInt64?

    @Option(help: "libevent loops (threads) on the real clock; default one per core.")
    var loops: Int = LibeventLoopGroup.coreCount

    @Option(
        help: """
            Virtual clock: simulations (threads) that share a population scenario by room (default: one per core for \
            `load`, 1 for `run`; an event log always takes 1, to keep its order).
            """
    )
    var shards: Int?

    @Option(
        help: """
            Real clock: log2 of the timer wheel's tick in ns (19 ≈ 0.5 ms; 22 ≈ 4 ms wakes a loop an eighth as often, \
            for a coarser lateness). Default for `run` and `load`: about 4 ms of scenario time (22 at scale 1, 15 at \
            0.01); 19 for `heartbeats` (which measures lateness).
            """
    )
    var wheelTickShift: UInt64?

    @Option(help: "How real-clock loops keep timers: \(TimerBackend.allCases.map(\.rawValue).joined(separator: ", ")).")
    var timerBackend: TimerBackend = .wheel

    @Option(
        help: """
            The memory a population may be estimated to need (≈ 2 KiB a ZEGO client, 4 KiB an Agora or LiveKit one) \
            before the run is refused: bytes or 512M, 24G; default 90 % of this machine's memory.
            """
    )
    var memoryLimit: ByteCount?

    func validate() throws {
        guard timeScale.isFinite, timeScale > 0 else {
            throw ValidationError("--time-scale must be a positive number, got \(timeScale)")
        }
        if clock == .virtual, timeScale != 1 {
            throw ValidationError("--time-scale applies to --clock real only (virtual time takes no wall time)")
        }
        if let shards, !(1...LibeventLoopGroup.maximumLoopCount).contains(shards) {
            throw ValidationError("--shards must be from 1 to \(LibeventLoopGroup.maximumLoopCount), got \(shards)")
        }
        if let wheelTickShift, !(10...30).contains(wheelTickShift) {
            throw ValidationError("--wheel-tick-shift must be from 10 to 30, got \(wheelTickShift)")
        }
        guard (1...LibeventLoopGroup.maximumLoopCount).contains(loops) else {
            throw ValidationError("--loops must be from 1 to \(LibeventLoopGroup.maximumLoopCount), got \(loops)")
        }
    }

    /// Runs `body` with the chosen runtime and shuts it down afterwards; real-clock loops tick every
    /// 2^`defaultTickShift` ns (by default about 4 ms of scenario time:
    /// `LibeventLoopGroup.Configuration.scenarioTickShift(timeScale:)`) unless `--wheel-tick-shift` says otherwise.
    func withRuntime<T: Sendable>(
        defaultTickShift: UInt64? = nil,
        _ body: (any RuntimeLoopGroup) async throws -> T
    ) async throws -> T {
        switch clock {
        case .virtual:
            return try await SimulationRuntime.withSimulation(seed: seed ?? 0) { try await body($0) }
        case .real:
            let configuration = LibeventLoopGroup.Configuration(
                loopCount: loops,
                timerBackend: timerBackend,
                wheelTickShift: wheelTickShift ?? defaultTickShift
                    ?? LibeventLoopGroup.Configuration.scenarioTickShift(timeScale: timeScale),
                timeScale: timeScale
            )
            return try await LibeventLoopGroup.withLoopGroup(configuration: configuration) { try await body($0) }
        }
    }
}

extension TimerBackend: ExpressibleByArgument {}
extension Scenario.Dialect: ExpressibleByArgument {}
