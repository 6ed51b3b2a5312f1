import Dispatch

/// Runs the jobs that reach a loop or simulation after it shut down, one at a time, so that no task awaiting an
/// actor pinned there hangs forever.
///
/// Shutting down a loop while its actors still have work is a programming error; this keeps the error visible as
/// slow execution instead of a hang. Serial execution preserves the actors' isolation.
package final class RetiredExecutor: Sendable {
    package static let shared = RetiredExecutor()
    private let queue = DispatchQueue(label: "roomlink.retired-executor")

    /// Runs `job` later, as if on `executor`.
    package func run(_ job: UnownedJob, on executor: some SerialExecutor & TaskExecutor) {
        let serial = executor.asUnownedSerialExecutor()
        let task = executor.asUnownedTaskExecutor()
        queue.async { job.runSynchronously(isolatedTo: serial, taskExecutor: task) }
    }
}
