/// Work sent to a service thread from another thread, through its locked inbox.
package enum LoopMessage: Sendable {
    /// A job for the executor.
    case job(UnownedJob)
    /// A timer armed off-thread, whose handle `remoteID` was already returned to the caller.
    case arm(remoteID: UInt64, deadline: RuntimeInstant, period: Duration?, handler: TimerHandlerObject)
    /// A cancellation requested off-thread.
    case cancel(TimerHandle)
}
