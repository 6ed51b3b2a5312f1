/// An actor whose jobs run on ``loop``: its `unownedExecutor` is `loop.asUnownedSerialExecutor()`.
///
/// Timers and the simulated network call such an actor from its loop's thread, outside any task. There the standard
/// `assumeIsolated` asks the concurrency runtime for the current executor, finds none, checks for the main executor
/// and only then asks the loop — 5 % of a million-client run's CPU. ``onLoop(_:)`` asks the loop directly.
///
/// ```swift
/// actor Heart: LoopPinnedActor, TimerHandler {
///     nonisolated let loop: any RuntimeLoop
///     nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
///     nonisolated func timerFired(_ timer: TimerHandle) { onLoop { $0.beat() } }
///     func beat() { /* send a heartbeat */ }
/// }
/// ```
///
/// - Important: Conform only an actor whose `unownedExecutor` is its `loop`'s: ``onLoop(_:)`` relies on it.
public protocol LoopPinnedActor: Actor {
    /// The loop the actor's jobs run on: the executor its `unownedExecutor` returns.
    nonisolated var loop: any RuntimeLoop { get }
}

extension LoopPinnedActor {
    /// Runs `operation` isolated to this actor, synchronously, from code running on its loop's thread (a timer's
    /// handler, a ``DelayLine``'s delivery, a job of another actor on the same loop).
    ///
    /// - Precondition: The calling thread is `loop`'s (checked, as `assumeIsolated` checks its executor).
    @inlinable
    public nonisolated func onLoop<T: Sendable>(_ operation: (isolated Self) throws -> T) rethrows -> T {
        precondition(loop.isInServiceThread, "\(Self.self) was called off its loop's thread")
        // Safe: the actor's executor is `loop` (this protocol's contract), and a loop runs jobs — and so this
        // actor's isolated code — on its own thread only, one at a time. Being on that thread is exactly what
        // `assumeIsolated` finds out in the end (a loop's `isIsolatingCurrentContext` is `isInServiceThread`); the
        // cast is how the standard library itself enters the isolated closure once its check has passed.
        return try withoutActuallyEscaping(operation) { (isolated: @escaping (isolated Self) throws -> T) throws -> T in
            try unsafeBitCast(isolated, to: ((Self) throws -> T).self)(self)
        }
    }

    /// Calls `function` isolated to this actor with `argument`, from code running on its loop's thread: for a
    /// function value made once and kept. (A closure written at the call, `onLoop { ... }`, is checked again on
    /// entry: the compiler puts a dynamic executor check in the prologue of a synchronous isolated closure passed as
    /// an argument — the runtime's executor lookup this type exists to avoid.)
    ///
    /// - Precondition: The calling thread is `loop`'s.
    @inlinable
    public nonisolated func onLoop<Argument>(
        call function: @Sendable (isolated Self, Argument) -> Void,
        with argument: Argument
    ) {
        precondition(loop.isInServiceThread, "\(Self.self) was called off its loop's thread")
        // Safe for the reasons given in `onLoop(_:)`.
        withoutActuallyEscaping(function) { (isolated: @escaping @Sendable (isolated Self, Argument) -> Void) in
            unsafeBitCast(isolated, to: (@Sendable (Self, Argument) -> Void).self)(self, argument)
        }
    }
}
