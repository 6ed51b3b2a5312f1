import RoomLinkTestSupport
import Testing

@_spi(RoomLinkInternals) @testable import RoomLinkRuntime

// A limit to catch hangs, not to time anything: ThreadSanitizer on two shared cores runs these several times slower.
@Suite(.hangLimit(minutes: 10))
struct DelayLineTests {
    /// Items added at 0, 0, 3 and 10 ms on a 5 ms line come out at 5, 5, 8 and 15 ms, in the order added.
    @Test
    func itemsComeOutTheirDelayAfterTheyWentInInOrder() async throws {
        try await SimulationRuntime.withSimulation(seed: 1) { sim in
            let log = OutcomeLog()
            let line = DelayLine<Int>(loop: sim, delay: .milliseconds(5)) { log.record($0, fired: true, at: sim.now) }
            let added = [(0, 0), (1, 0), (2, 3), (3, 10)]
            try await sim.run {
                for (item, ms) in added {
                    try sim.schedule(at: .zero.advanced(by: .milliseconds(ms))) { #expect(line.add(item)) }
                }
                try await sim.sleep(for: .seconds(1))
            }
            let state = log.snapshot
            #expect(state.order == [0, 1, 2, 3])
            // Four timers added the items, the run's sleep took one, and the line fired once per deadline: 5, 8, 15.
            #expect(sim.firedTimerCount == 4 + 1 + 3)
            for (item, ms) in added {
                #expect(state.times[item] == [.zero.advanced(by: .milliseconds(ms + 5))], "item \(item)")
            }
        }
    }

    /// Two parties answering each other through a zero-delay line: each answer waits for the line's next pass, so the
    /// exchange ends when they stop answering instead of spinning inside one firing; every answer comes out.
    @Test
    func itemsAddedWhileOthersComeOutWaitForTheNextPass() async throws {
        try await SimulationRuntime.withSimulation(seed: 1) { sim in
            let log = OutcomeLog()
            let passes = LockedBox<[Int]>([])
            let line = LockedBox<DelayLine<Int>?>(nil)
            line.withLock {
                $0 = DelayLine<Int>(loop: sim, delay: .zero) { item in
                    log.record(item, fired: true, at: sim.now)
                    passes.withLock { $0.append(item) }
                    if item < 5 { #expect(line.withLock { $0 }!.add(item + 1)) }
                }
            }
            try await sim.run {
                try sim.schedule(at: .zero.advanced(by: .milliseconds(1))) {
                    #expect(line.withLock { $0 }!.add(0))
                }
                try await sim.sleep(for: .seconds(1))
            }
            #expect(log.snapshot.order == [0, 1, 2, 3, 4, 5])
            // One timer for the first item, the sleep's, and one line firing per answer: an answer never arms a timer
            // of its own while the line is firing.
            #expect(sim.firedTimerCount == 1 + 1 + 6)
            #expect(log.snapshot.times.values.allSatisfy { $0 == [.zero.advanced(by: .milliseconds(1))] })
            line.withLock { $0 = nil }  // the closure holds the box: break the cycle
        }
    }

    /// Off its loop a line refuses items, and nothing comes out.
    @Test
    func addingOffTheLoopIsRefused() async throws {
        try await SimulationRuntime.withSimulation(seed: 1) { sim in
            let log = OutcomeLog()
            let line = DelayLine<Int>(loop: sim, delay: .milliseconds(5)) { log.record($0, fired: true, at: sim.now) }
            #expect(!line.add(7))
            try await sim.run { try await sim.sleep(for: .seconds(1)) }
            #expect(log.snapshot.total == 0)
        }
    }

    /// A line made with `prefetch` passes it, as each item comes out, the hint of the item four places behind it —
    /// in order, each once — and hands the items over as without it.
    @Test
    func whileAnItemComesOutTheHintOfTheOneFourBehindIsPrefetched() async throws {
        try await SimulationRuntime.withSimulation(seed: 1) { sim in
            let log = OutcomeLog()
            let prefetched = LockedBox<[UInt]>([])
            let line = DelayLine<Int>(
                loop: sim,
                delay: .milliseconds(5),
                prefetch: { address in prefetched.withLock { $0.append(UInt(bitPattern: address)) } },
                deliver: { log.record($0, fired: true, at: sim.now) }
            )
            @Sendable func hint(_ item: Int) -> UInt { 0x1000 + 64 * UInt(item) }
            try await sim.run {
                try sim.schedule(at: .zero) {
                    for item in 0..<10 {
                        #expect(line.add(item, prefetching: UnsafeRawPointer(bitPattern: hint(item))))
                    }
                }
                try await sim.sleep(for: .seconds(1))
            }
            #expect(log.snapshot.order == Array(0..<10))
            #expect(prefetched.withLock { $0 } == (4..<10).map(hint))
        }
    }
}
