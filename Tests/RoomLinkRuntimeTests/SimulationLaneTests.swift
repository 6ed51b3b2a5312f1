import RoomLinkTestSupport
import Testing

@_spi(RoomLinkInternals) @testable import RoomLinkRuntime

/// A simulation's lanes and reserved places: what they carry comes out exactly where timers armed at the same
/// moments would have fired, so a run's order — and its event log — is the same either way.
@Suite(.hangLimit(minutes: 10))
struct SimulationLaneTests {
    /// Lines in firing order, each with the virtual time (ms); written on the simulation's thread only.
    final class Order: @unchecked Sendable {
        // Safe: every append runs on the simulation's thread (timers and lanes fire there), and the test reads it
        // after the run has returned.
        var lines: [String] = []
        var rounds = 0
        func note(_ line: String, _ sim: SimulationRuntime) {
            lines.append("\(sim.now.nanoseconds / 1_000_000) \(line)")
        }
    }

    /// The same story told with timers only, then with a lane for the fixed-delay ones: the same order, ties at one
    /// instant included.
    @Test
    func aLanesItemsComeOutWhereTheirTimersWouldHave() async throws {
        func story(lanes: Bool) async throws -> [String] {
            try await SimulationRuntime.withSimulation(seed: 1) { sim in
                let order = Order()
                try await sim.run {
                    let lane = SimulationLane<String>(on: sim, delay: .milliseconds(10)) { name in
                        order.note(name, sim)
                        return false
                    }
                    #expect(lane != nil)
                    /// A message taking 10 ms: in the lane, or as a timer.
                    @Sendable func send(_ name: String) throws {
                        if lanes {
                            #expect(lane!.add(name))
                        } else {
                            try sim.schedule(after: .milliseconds(10)) { order.note(name, sim) }
                        }
                    }
                    try sim.schedule(at: .zero.advanced(by: .milliseconds(10))) { order.note("timer armed first", sim) }
                    try send("message a")
                    try sim.schedule(at: .zero.advanced(by: .milliseconds(10))) {
                        order.note("timer armed between", sim)
                    }
                    try send("message b")
                    // At 5 ms, more of both, some due at 15 ms together.
                    try sim.schedule(at: .zero.advanced(by: .milliseconds(5))) {
                        try? send("message c")
                        _ = try? sim.schedule(after: .milliseconds(10)) { order.note("timer at 15", sim) }
                        try? send("message d")
                    }
                    try await sim.sleep(for: .seconds(1))
                }
                return order.lines
            }
        }
        let timers = try await story(lanes: false)
        #expect(
            timers == [
                "10 timer armed first", "10 message a", "10 timer armed between", "10 message b", "15 message c",
                "15 timer at 15", "15 message d",
            ]
        )
        #expect(try await story(lanes: true) == timers)
    }

    /// An item that goes round again comes back a delay after its deadline, in the place a periodic timer
    /// rescheduled after its handler would take: after what its delivery armed for the same instant.
    @Test
    func aPeriodicItemComesRoundAfterWhatItsDeliveryArmed() async throws {
        try await SimulationRuntime.withSimulation(seed: 1) { sim in
            let order = Order()
            try await sim.run {
                let lane = SimulationLane<String>(on: sim, delay: .milliseconds(20)) { name in
                    order.note(name, sim)
                    // What the delivery arms for its next period's instant comes before the item's next round.
                    _ = try? sim.schedule(after: .milliseconds(20)) { order.note("armed by \(name)", sim) }
                    order.rounds += 1
                    return order.rounds < 3
                }!
                #expect(lane.add("beat"))
                try await sim.sleep(for: .seconds(1))
            }
            #expect(
                order.lines == [
                    "20 beat", "40 armed by beat", "40 beat", "60 armed by beat", "60 beat", "80 armed by beat",
                ]
            )
        }
    }

    @Test
    func aLaneRefusesWhatItCannotOrderExactly() async {
        await SimulationRuntime.withSimulation(seed: 1) { sim in
            // Shorter than two wheel ticks: an item could fall due within the tick being fired.
            #expect(SimulationLane<Int>(on: sim, delay: .microseconds(100)) { _ in false } == nil)
            let lane = SimulationLane<Int>(on: sim, delay: .milliseconds(5)) { _ in false }!
            // Off the simulation's thread (this test's task runs elsewhere).
            #expect(!lane.add(1))
        }
    }

    /// Places reserved at the start and armed later, one at a time: the order of arming everything at the start.
    @Test
    func timersArmedInReservedPlacesFireWhereTheyWereReserved() async throws {
        try await SimulationRuntime.withSimulation(seed: 1) { sim in
            let order = Order()
            try await sim.run {
                let at = RuntimeInstant.zero.advanced(by: .milliseconds(50))
                let reserved = sim.reserveSequences(2)
                try sim.schedule(at: at) { order.note("armed at once, after the reservation", sim) }
                // Armed later, both before the one armed at once: their places were taken first.
                try sim.schedule(at: .zero.advanced(by: .milliseconds(10))) {
                    let second = ClosureTimerHandler(onFire: { order.note("second place", sim) })
                    let first = ClosureTimerHandler(onFire: { order.note("first place", sim) })
                    _ = try? sim.schedule(at: at, sequence: reserved + 1, handler: second)
                    _ = try? sim.schedule(at: at, sequence: reserved, handler: first)
                }
                try await sim.sleep(for: .seconds(1))
            }
            #expect(order.lines == ["50 first place", "50 second place", "50 armed at once, after the reservation"])
        }
    }

    /// What keeps a lane and rides in it: a network's carrier and a message to one of its rooms, which holds the
    /// carrier. Messages still in flight when the simulation shuts down are dropped out of the lane itself, so such
    /// a cycle does not keep the whole simulated world alive after it.
    final class Owner: @unchecked Sendable {
        // Safe: `lane` is set once on the simulation's thread, before any item exists, and read nowhere else.
        var lane: SimulationLane<Owner>?
    }

    @Test
    func itemsInFlightAtShutdownAreReleased() async throws {
        weak var released: Owner?
        weak var simulation: SimulationRuntime?
        do {
            let sim = SimulationRuntime(seed: 1)
            simulation = sim
            released = try await sim.run {
                let owner = Owner()
                owner.lane = SimulationLane<Owner>(on: sim, delay: .seconds(10)) { _ in false }
                #expect(owner.lane!.add(owner))  // due long after the run ends: still in flight at shutdown
                try await sim.sleep(for: .seconds(1))
                return owner
            }
            #expect(released != nil)
            sim.shutdown()
        }
        #expect(released == nil)
        #expect(simulation == nil)
    }

    /// A lane made with `prefetchAhead` hands it, as each item comes out, the first hint and the word of the item two
    /// places behind — only for items added with a word, and only the hint's address (its line count stripped).
    @Test
    func prefetchAheadGetsTheHintAndWordOfTheItemTwoPlacesBehind() async throws {
        final class Calls: @unchecked Sendable {
            // Safe: appended to on the simulation's thread only, read after the run returned.
            var seen: [(delivering: Int, hint: UInt, word: UInt)] = []
            var delivering = -1
        }
        let calls = Calls()
        let memory = (0..<6).map { _ in UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 64) }
        defer { for block in memory { block.deallocate() } }
        let hints = memory.map { UInt(bitPattern: $0) }
        try await SimulationRuntime.withSimulation(seed: 1) { sim in
            try await sim.run {
                let lane = SimulationLane<Int>(
                    on: sim,
                    delay: .milliseconds(10),
                    prefetches: true,
                    prefetchAhead: { address, word in
                        calls.seen.append((calls.delivering, UInt(bitPattern: address), word))
                    }
                ) { item in
                    calls.delivering = item
                    return false
                }
                // Items 0…5 at once; item 3 without a word.
                for item in 0..<6 {
                    #expect(
                        lane!.add(
                            item,
                            prefetching: UnsafeRawPointer(bitPattern: hints[item]),
                            ahead: item == 3 ? 0 : UInt(item) + 100
                        )
                    )
                }
                try await sim.sleep(for: .seconds(1))
            }
        }
        // Handed before the delivery of the item two places ahead of it: items 2, 4 and 5 (3 has no word); 0 and 1
        // were at the front from the start.
        #expect(calls.seen.map(\.word) == [102, 104, 105])
        #expect(calls.seen.map(\.hint) == [2, 4, 5].map { hints[$0] })
        #expect(calls.seen.map(\.delivering) == [-1, 1, 2])
    }

    /// Without `prefetches`, a lane never calls `prefetchAhead`: it loads nothing ahead.
    @Test
    func aLaneThatDoesNotPrefetchNeverCallsPrefetchAhead() async throws {
        final class Count: @unchecked Sendable {
            // Safe: touched on the simulation's thread only, read after the run returned.
            var calls = 0
        }
        let count = Count()
        try await SimulationRuntime.withSimulation(seed: 1) { sim in
            try await sim.run {
                let lane = SimulationLane<Int>(
                    on: sim,
                    delay: .milliseconds(10),
                    prefetchAhead: { _, _ in count.calls += 1 }
                ) { _ in false }
                for item in 0..<6 { #expect(lane!.add(item, ahead: 1)) }
                try await sim.sleep(for: .seconds(1))
            }
        }
        #expect(count.calls == 0)
    }
}
