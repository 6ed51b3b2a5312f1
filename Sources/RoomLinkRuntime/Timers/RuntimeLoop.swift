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
public protocol RuntimeLoop: SerialExecutor, TaskExecutor, TimerService {
    /// While a timer's handler runs on this loop: the real time since the timer was due (how late the work it
    /// started is so far). `nil` outside a timer's handler, and always in virtual time, where nothing is late.
    /// Read it on the loop's thread.
    var firingLateness: Duration? { get }

    /// Runs `body` as if a timer due at `deadline` were firing: ``firingLateness`` measures from `deadline` while it
    /// runs. For work a handler hands out later than its own deadline (a ``DelayLine``'s items). Call it on the loop's
    /// thread, from a timer's handler.
    func runAsFiring(deadline: RuntimeInstant, _ body: () -> Void)
}

extension RuntimeLoop {
    public var firingLateness: Duration? { nil }

    /// Runs `body` (nothing is ever late where nothing measures lateness).
    public func runAsFiring(deadline: RuntimeInstant, _ body: () -> Void) { body() }

    /// Whether the calling thread is this loop's, for `assumeIsolated` on actors pinned here.
    public func isIsolatingCurrentContext() -> Bool? {
        isInServiceThread
    }

    /// Runs `job` on the calling thread, isolated to this loop as both its serial and its task executor.
    @_spi(RoomLinkInternals) public func runSynchronously(_ job: UnownedJob) {
        job.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor())
    }
}
