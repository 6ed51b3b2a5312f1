import RoomLinkTestSupport
import Testing

@testable import RoomLinkLibevent
@_spi(RoomLinkInternals) @testable import RoomLinkRuntime

/// A counter pinned to a loop, which its timer reaches through both forms of `onLoop`.
actor PinnedCounter: LoopPinnedActor, TimerHandler {
    nonisolated let loop: any RuntimeLoop
    let log = OutcomeLog()
    private(set) var total = 0
    private(set) var calls: [Int] = []
    private(set) var onLoopThread: [Bool] = []
    /// `add` as a function value made once, for `onLoop(call:with:)`.
    static let add: @Sendable (isolated PinnedCounter, Int) -> Void = { $0.add($1) }

    init(loop: any RuntimeLoop) { self.loop = loop }
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    nonisolated func timerFired(_ timer: TimerHandle) {
        onLoop(call: Self.add, with: 2)
        let total = onLoop { counter in
            counter.add(1)
            return counter.total
        }
        log.record(total, fired: true, at: loop.now)
    }

    func add(_ amount: Int) {
        total += amount
        calls.append(amount)
        onLoopThread.append(loop.isInServiceThread)
    }
}

// A limit to catch hangs, not to time anything: ThreadSanitizer on two shared cores runs these several times slower.
@Suite(.timeLimit(.minutes(3)))
struct LoopPinnedActorTests {
    /// Three timer firings on the loop's thread each enter the actor twice, in order, and see what the last left.
    @Test
    func onLoopEntersTheActorFromItsLoopsThread() async throws {
        try await LibeventLoopGroup.withLoopGroup(configuration: .init(loopCount: 2)) { group in
            let counter = PinnedCounter(loop: group.eventLoops[1])
            for milliseconds in [1, 2, 3] {
                try group.eventLoops[1].schedule(after: .milliseconds(milliseconds), handler: counter)
            }
            await counter.log.waitForOutcomes(3)
            #expect(counter.log.snapshot.order == [3, 6, 9])
            #expect(await counter.calls == [2, 1, 2, 1, 2, 1])
            #expect(await counter.onLoopThread == Array(repeating: true, count: 6))
        }
    }

    /// Off the loop's thread `onLoop` stops the process, as `assumeIsolated` does off the actor's executor, instead of
    /// touching the actor's state from a second thread.
    @Test
    func onLoopOffTheLoopsThreadStopsTheProcess() async {
        await #expect(processExitsWith: .failure) {
            try await LibeventLoopGroup.withLoopGroup(configuration: .init(loopCount: 1)) { group in
                let counter = PinnedCounter(loop: group.eventLoops[0])
                counter.onLoop(call: PinnedCounter.add, with: 1)
            }
        }
    }
}
