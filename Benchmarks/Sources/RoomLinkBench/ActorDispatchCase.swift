import Histogram
import RoomLink

/// How soon an actor method runs after its timer expires: an actor pinned to the loop, called in place with
/// `assumeIsolated`, against a default actor reached through a new `Task`.
enum ActorDispatchCase {
    /// Collects (handler → method, deadline → method) delays in nanoseconds.
    protocol Target: Actor {
        func record(entered: Int64, deadline: Int64)
        var delays: [(Int64, Int64)] { get }
    }

    actor Pinned: Target {
        let loop: LibeventLoop
        var delays: [(Int64, Int64)] = []
        init(loop: LibeventLoop) { self.loop = loop }
        nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
        func record(entered: Int64, deadline: Int64) {
            let now = Monotonic.now()
            delays.append((now - entered, now - deadline))
        }
    }

    actor Hopped: Target {
        var delays: [(Int64, Int64)] = []
        func record(entered: Int64, deadline: Int64) {
            let now = Monotonic.now()
            delays.append((now - entered, now - deadline))
        }
    }

    struct PinnedHandler: TimerHandler {
        let target: Pinned
        let deadline: Int64
        func timerFired(_ timer: TimerHandle) {
            let entered = Monotonic.now()
            target.assumeIsolated { $0.record(entered: entered, deadline: deadline) }
        }
    }

    struct HopHandler: TimerHandler {
        let target: Hopped
        let deadline: Int64
        func timerFired(_ timer: TimerHandle) {
            let entered = Monotonic.now()
            Task { await target.record(entered: entered, deadline: deadline) }
        }
    }

    static func run(samples: Int) async throws -> [ActorDispatchResult] {
        try await LibeventLoopGroup.withLoopGroup(configuration: .init(loopCount: 1)) { group in
            let loop = group.eventLoops[0]
            let epochOffset = Monotonic.now() - loop.now.nanoseconds
            let pinned = Pinned(loop: loop)
            let hopped = Hopped()
            // Timers 1 ms apart, so each expiry is its own wake-up, as a heartbeat or retry would be.
            let start = loop.now.advanced(by: .milliseconds(50))
            for i in 0..<samples {
                let deadline = start.advanced(by: .milliseconds(Int64(i)))
                let monotonicDeadline = deadline.nanoseconds + epochOffset
                try loop.schedule(at: deadline, handler: PinnedHandler(target: pinned, deadline: monotonicDeadline))
                try loop.schedule(at: deadline, handler: HopHandler(target: hopped, deadline: monotonicDeadline))
            }
            try await loop.sleep(until: start.advanced(by: .milliseconds(Int64(samples) + 50)))
            return [
                summarize("pinned-actor/assumeIsolated", await pinned.delays),
                summarize("default-actor/Task-hop", await hopped.delays),
            ]
        }
    }

    static func summarize(_ name: String, _ delays: [(Int64, Int64)]) -> ActorDispatchResult {
        var handler = Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
        var deadline = handler
        for (h, d) in delays {
            _ = handler.record(UInt64(max(0, h)))
            _ = deadline.record(UInt64(max(0, d)))
        }
        return ActorDispatchResult(
            name: name,
            samples: delays.count,
            handlerToMethodP50Us: Double(handler.valueAtPercentile(50)) / 1e3,
            handlerToMethodP99Us: Double(handler.valueAtPercentile(99)) / 1e3,
            deadlineToMethodP50Us: Double(deadline.valueAtPercentile(50)) / 1e3,
            deadlineToMethodP99Us: Double(deadline.valueAtPercentile(99)) / 1e3
        )
    }
}
