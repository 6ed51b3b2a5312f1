/// One serial place where actors run and timers fire: a libevent loop or the simulation.
///
/// A loop is a `SerialExecutor` (pin an actor to it through `unownedExecutor`), a `TaskExecutor` (prefer it for a
/// task with `Task(executorPreference:)`), and a ``TimerService`` whose handlers run on the same thread as the
/// actor's jobs. An actor pinned to a loop can therefore arm a timer and handle it with no lock and no hop:
///
/// ```swift
/// actor Heart: TimerHandler {
///     let loop: any RuntimeLoop
///     nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
///     func start() throws { try loop.schedulePeriodic(every: .seconds(5), handler: self) }
///     nonisolated func timerFired(_ timer: TimerHandle) { assumeIsolated { $0.beat() } }
///     func beat() { /* send a heartbeat */ }
/// }
/// ```
public protocol RuntimeLoop: SerialExecutor, TaskExecutor, TimerService {}

/// A set of loops that actors are spread over: the libevent loops of a process, or one simulation.
public protocol RuntimeLoopGroup: Sendable {
    /// Every loop of the group.
    var loops: [any RuntimeLoop] { get }

    /// The current time on the group's clock, in scenario time; the same on all its loops.
    var now: RuntimeInstant { get }
}

extension RuntimeLoopGroup {
    /// The loop for an identifier, stable across runs and processes (FNV-1a of the UTF-8 bytes).
    ///
    /// Use it to place a client or room actor: the same ID always lands on the same loop of a group of that size.
    public func loop(for id: String) -> any RuntimeLoop {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in id.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return loop(forHash: hash)
    }

    /// The loop for a numeric identifier, stable across runs.
    public func loop(forHash hash: UInt64) -> any RuntimeLoop {
        let all = loops
        return all[Int(hash % UInt64(all.count))]
    }
}
