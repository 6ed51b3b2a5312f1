package import RoomLinkRuntime

/// Records every outcome of a set of timers, and lets a test wait until all of them have one.
package final class OutcomeLog: Sendable {
    package init() {}

    package struct State {
        package var fired: [Int: Int] = [:]
        package var cancelled: [Int: Int] = [:]
        package var order: [Int] = []
        package var times: [Int: [RuntimeInstant]] = [:]
        var waiter: (ready: @Sendable (State) -> Bool, continuation: CheckedContinuation<Void, Never>)?
        /// Outcomes recorded so far (kept as a count: summing the dictionaries per record is quadratic).
        package fileprivate(set) var total = 0
    }

    package let state = LockedBox(State())

    package func record(_ id: Int, fired: Bool, at time: RuntimeInstant) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.total += 1
            if fired {
                state.fired[id, default: 0] += 1
                state.order.append(id)
                state.times[id, default: []].append(time)
            } else {
                state.cancelled[id, default: 0] += 1
            }
            guard let waiter = state.waiter, waiter.ready(state) else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume()
    }

    /// Waits until `count` outcomes have been recorded.
    package func waitForOutcomes(_ count: Int) async {
        await waitUntil { $0.total >= count }
    }

    /// Waits until `ready` holds for the recorded outcomes.
    package func waitUntil(_ ready: @escaping @Sendable (State) -> Bool) async {
        await withCheckedContinuation { continuation in
            let isReady = state.withLock { state -> Bool in
                if ready(state) { return true }
                state.waiter = (ready, continuation)
                return false
            }
            if isReady { continuation.resume() }
        }
    }

    package var snapshot: State { state.withLock { $0 } }
}

/// A handler that records its outcomes in an ``OutcomeLog`` with the service's time.
package struct RecordingHandler: TimerHandler {
    let id: Int
    let log: OutcomeLog
    let service: any TimerService

    package init(id: Int, log: OutcomeLog, service: any TimerService) {
        self.id = id
        self.log = log
        self.service = service
    }

    package func timerFired(_ timer: TimerHandle) { log.record(id, fired: true, at: service.now) }
    package func timerCancelled(_ timer: TimerHandle) { log.record(id, fired: false, at: service.now) }
}
