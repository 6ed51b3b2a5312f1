import RoomLinkTestSupport
import Testing

@testable import RoomLinkLibevent
@_spi(RoomLinkInternals) @testable import RoomLinkRuntime

// A limit to catch hangs, not to time anything: ThreadSanitizer on two shared cores runs these several times slower.
@Suite(.hangLimit(minutes: 10))
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
