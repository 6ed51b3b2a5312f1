extension TimerService {
    /// Suspends the calling task until `deadline` on this service's clock.
    ///
    /// In a simulation this advances virtual time, never wall time.
    ///
    /// - Throws: `CancellationError` if the task is cancelled first, ``RuntimeError`` if the service is shut down.
    public func sleep(until deadline: RuntimeInstant) async throws {
        let state = LockedBox(SleepState())
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let handler = SleepHandler(continuation: continuation)
                let handle: TimerHandle
                do {
                    handle = try schedule(at: deadline, handler: handler)
                } catch {
                    continuation.resume(throwing: error)
                    return
                }
                // Exactly one side cancels: whichever of this arm and the cancellation handler comes second.
                let cancelNow = state.withLock { state -> Bool in
                    state.handle = handle
                    return state.isCancelled
                }
                if cancelNow { cancel(handle) }
            }
        } onCancel: {
            let handle = state.withLock { state -> TimerHandle? in
                state.isCancelled = true
                return state.handle
            }
            if let handle { cancel(handle) }
        }
    }

    /// Suspends the calling task for `duration` on this service's clock.
    public func sleep(for duration: Duration) async throws {
        guard duration >= .zero else { throw RuntimeError.invalidDelay(duration) }
        try await sleep(until: now.advanced(by: duration))
    }
}

private struct SleepState {
    var handle: TimerHandle?
    var isCancelled = false
}

private struct SleepHandler: TimerHandler {
    let continuation: CheckedContinuation<Void, any Error>
    func timerFired(_ timer: TimerHandle) { continuation.resume() }
    func timerCancelled(_ timer: TimerHandle) { continuation.resume(throwing: CancellationError()) }
}
