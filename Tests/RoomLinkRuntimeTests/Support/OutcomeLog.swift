@testable import RoomLinkRuntime

/// Records every outcome of a set of timers, and lets a test wait until all of them have one.
final class OutcomeLog: Sendable {
    struct State {
        var fired: [Int: Int] = [:]
        var cancelled: [Int: Int] = [:]
        var order: [Int] = []
        var times: [Int: [RuntimeInstant]] = [:]
        var waiter: (count: Int, continuation: CheckedContinuation<Void, Never>)?
        var total: Int { fired.values.reduce(0, +) + cancelled.values.reduce(0, +) }
    }

    let state = LockedBox(State())

    func record(_ id: Int, fired: Bool, at time: RuntimeInstant) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if fired {
                state.fired[id, default: 0] += 1
                state.order.append(id)
                state.times[id, default: []].append(time)
            } else {
                state.cancelled[id, default: 0] += 1
            }
            guard let waiter = state.waiter, state.total >= waiter.count else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume()
    }

    /// Waits until `count` outcomes have been recorded.
    func waitForOutcomes(_ count: Int) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                if state.total >= count { return true }
                state.waiter = (count, continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    var snapshot: State { state.withLock { $0 } }
}

/// A handler that records its outcomes in an ``OutcomeLog`` with the service's time.
struct RecordingHandler: TimerHandler {
    let id: Int
    let log: OutcomeLog
    let service: any TimerService

    func timerFired(_ timer: TimerHandle) { log.record(id, fired: true, at: service.now) }
    func timerCancelled(_ timer: TimerHandle) { log.record(id, fired: false, at: service.now) }
}
