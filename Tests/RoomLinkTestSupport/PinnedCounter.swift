package import RoomLinkRuntime

/// A counter pinned to a loop, which its timer reaches through both forms of `LoopPinnedActor.onLoop`: each firing
/// adds 2 through a function value, then 1 through a closure, and logs the total it sees.
package actor PinnedCounter: LoopPinnedActor, TimerHandler {
    package nonisolated let loop: any RuntimeLoop
    package nonisolated let log = OutcomeLog()
    package private(set) var total = 0
    package private(set) var calls: [Int] = []
    package private(set) var onLoopThread: [Bool] = []
    /// `add` as a function value made once, for `onLoop(call:with:)`.
    package static let add: @Sendable (isolated PinnedCounter, Int) -> Void = { $0.add($1) }

    package init(loop: any RuntimeLoop) { self.loop = loop }
    package nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    package nonisolated func timerFired(_ timer: TimerHandle) {
        onLoop(call: Self.add, with: 2)
        let total = onLoop { counter in
            counter.add(1)
            return counter.total
        }
        log.record(total, fired: true, at: loop.now)
    }

    package func add(_ amount: Int) {
        total += amount
        calls.append(amount)
        onLoopThread.append(loop.isInServiceThread)
    }
}
