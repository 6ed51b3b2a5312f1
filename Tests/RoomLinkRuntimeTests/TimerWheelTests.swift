import RoomLinkTestSupport
import Testing

@_spi(RoomLinkInternals) @testable import RoomLinkRuntime

@Suite(.hangLimit(minutes: 10))
struct TimerWheelTests {
    /// A timer table's entry packs into 72 bytes (the wheel's state after the record's flags): a million-client run
    /// keeps a million.
    @Test func anEntryStaysPacked() {
        #expect(MemoryLayout<TimerWheel<TimerRecord>.Entry>.stride <= 72)
    }

    @Test(arguments: [UInt64(0), 10, 19])
    func expiresTimersInDeadlineOrderAcrossAllLevels(tickShift: UInt64) {
        // Given deadlines from one tick to years away, so every level of the wheel holds some.
        var wheel = TimerWheel<Int>(tickShift: tickShift)
        var random = SeededRandom(seed: 7)
        var deadlines: [Int: UInt64] = [:]
        for id in 0..<5_000 {
            let magnitude = UInt64.random(in: 0...56, using: &random)
            let deadline = UInt64.random(in: 0...(1 << magnitude), using: &random)
            deadlines[id] = deadline
            _ = wheel.insert(deadline: deadline, payload: id)
        }
        // When the wheel advances in uneven steps to the end of time.
        var expired: [TimerWheel<Int>.Expired] = []
        var now: UInt64 = 0
        var steps = 0
        while let next = wheel.nextDeadline() {
            now = max(now, next) + UInt64.random(in: 0...3, using: &random)
            let before = expired.count
            wheel.advance(to: now, into: &expired)
            for item in expired[before...] {
                // Then no timer is early, and each batch is in deadline order.
                #expect(item.deadline <= now)
                #expect(wheel.free(item.id) != nil)
            }
            steps += 1
        }
        #expect(expired.count == 5_000)
        #expect(wheel.count == 0)
        let fired = expired.map(\.deadline)
        #expect(fired == fired.sorted(), "timers expired out of deadline order")
        #expect(Set(expired.map(\.deadline)) == Set(deadlines.values))
    }

    @Test
    func neverExpiresATimerBeforeItsDeadline() {
        var wheel = TimerWheel<Int>(tickShift: 19)
        let id = wheel.insert(deadline: 1_000_001, payload: 1)
        var expired: [TimerWheel<Int>.Expired] = []
        // The deadline's tick ends at 2^19 × 2 ns; advancing to just before it expires nothing.
        wheel.advance(to: 1_048_575, into: &expired)
        #expect(expired.isEmpty)
        #expect(wheel.nextDeadline() == 1_048_576)
        wheel.advance(to: 1_048_576, into: &expired)
        #expect(expired.map(\.id) == [id])
    }

    @Test
    func removedTimersNeverExpireAndStaleIDsDoNotMatchReusedSlots() {
        var wheel = TimerWheel<String>(tickShift: 0)
        let first = wheel.insert(deadline: 100, payload: "first")
        #expect(wheel.remove(first) == "first")
        #expect(wheel.remove(first) == nil)
        let second = wheel.insert(deadline: 100, payload: "second")
        #expect(second.index == first.index, "the slot is reused")
        #expect(wheel.remove(first) == nil, "a stale ID must not cancel the slot's new timer")
        var expired: [TimerWheel<String>.Expired] = []
        wheel.advance(to: 1_000, into: &expired)
        #expect(expired.map(\.id) == [second])
    }

    @Test
    func equalDeadlinesExpireInInsertionOrderEvenAfterCascading() {
        var wheel = TimerWheel<Int>(tickShift: 0)
        // The first timer is inserted far ahead (high level); the second, later and closer, lower.
        let early = wheel.insert(deadline: 70_000, payload: 0)
        var expired: [TimerWheel<Int>.Expired] = []
        wheel.advance(to: 69_000, into: &expired)
        let late = wheel.insert(deadline: 70_000, payload: 1)
        wheel.advance(to: 70_000, into: &expired)
        #expect(expired.map(\.id) == [early, late])
    }

    @Test
    func overdueTimersExpireAtTheNextAdvance() {
        var wheel = TimerWheel<Int>(tickShift: 10, start: 1 << 20)
        let id = wheel.insert(deadline: 5, payload: 0)
        #expect(wheel.nextDeadline() == 1 << 20)
        var expired: [TimerWheel<Int>.Expired] = []
        wheel.advance(to: 1 << 20, into: &expired)
        #expect(expired.map(\.id) == [id])
    }

    @Test
    func rescheduleKeepsTheIDAndMovesTheDeadline() {
        var wheel = TimerWheel<Int>(tickShift: 0)
        let id = wheel.insert(deadline: 10, payload: 0)
        wheel.reschedule(id, deadline: 500)
        var expired: [TimerWheel<Int>.Expired] = []
        wheel.advance(to: 499, into: &expired)
        #expect(expired.isEmpty)
        wheel.advance(to: 500, into: &expired)
        #expect(expired.map(\.id) == [id])
        wheel.reschedule(id, deadline: 600)
        #expect(wheel.isScheduled(id))
    }

    @Test(.enabled(if: !Sanitizers.threadSanitizerIsOn, "one thread, a value: nothing for ThreadSanitizer"))
    func bucketsDoNotHoardCapacityAsTimersKeepMovingThroughTheWheel() {
        // Given 2,000 timers re-armed every 2,000 ns for 500 rounds, like heartbeats, so that levels cascade
        // again and again.
        var wheel = TimerWheel<Int>(tickShift: 0)
        var random = SeededRandom(seed: 3)
        for id in 0..<2_000 { _ = wheel.insert(deadline: UInt64(id), payload: id) }
        var expired: [TimerWheel<Int>.Expired] = []
        var now: UInt64 = 0
        for _ in 0..<500 {
            now += 2_000
            wheel.advance(to: now, into: &expired)
            for item in expired {
                wheel.reschedule(item.id, deadline: item.deadline + 2_000 + UInt64.random(in: 0...50, using: &random))
            }
            expired.removeAll()
        }
        // Then the buckets hold about what the wheel holds, not the largest batch once per bucket.
        #expect(wheel.count == 2_000)
        let capacity = wheel.buckets.reduce(0) { $0 + $1.capacity }
        #expect(capacity < 8 * 2_000, "buckets keep \(capacity) slots of capacity for 2,000 timers")
    }
}

/// What a loop prefetches before a due timer fires.
@Suite(.hangLimit(minutes: 10))
struct TimerTablePrefetchTests {
    final class Handler: TimerHandler {
        func timerFired(_ timer: TimerHandle) {}
    }

    /// For a class handler the word is the object's address (what a loop should load ahead); for a timer that is
    /// gone, 0 (prefetching nothing).
    @Test
    func aDueTimersHandlerWordIsItsObjectsAddressAndZeroOnceTheTimerIsGone() {
        var table = TimerTable(queue: TimerWheel<TimerRecord>(tickShift: 10))
        let handler = Handler()
        let handle = table.arm(deadline: .zero.advanced(by: .milliseconds(1)), period: nil, handler: handler)
        var due: [TimerWheel<TimerRecord>.Expired] = []
        table.expire(at: 10_000_000, into: &due)
        #expect(due.count == 1)
        #expect(table.handlerWord(due[0].id) == UInt(bitPattern: Unmanaged.passUnretained(handler).toOpaque()))
        _ = table.beginFiring(due[0].id)
        _ = table.endFiring(due[0].id, now: 10_000_000)
        #expect(table.handlerWord(due[0].id) == 0)
        _ = handle
    }
}

/// The prefetch word of handlers that are values: Swift 6 opens an existential handed to a generic parameter, so a
/// word read from "the handler's bytes" would read the concrete value, which may be empty.
@Suite(.hangLimit(minutes: 10))
struct TimerTableValueHandlerPrefetchTests {
    struct Empty: TimerHandler {
        func timerFired(_ timer: TimerHandle) {}
    }
    struct OneByte: TimerHandler {
        var flag: UInt8 = 7
        func timerFired(_ timer: TimerHandle) {}
    }
    struct Reference: TimerHandler {
        let object: TimerTablePrefetchTests.Handler
        func timerFired(_ timer: TimerHandle) {}
    }
    struct Boxed: TimerHandler {
        var words: (UInt, UInt, UInt, UInt, UInt) = (1, 2, 3, 4, 5)
        func timerFired(_ timer: TimerHandle) {}
    }

    /// A table keeps every handler as an object: a value handler — empty, one byte, holding a reference, too big for
    /// an existential's buffer — in a box whose address is its prefetch word (reading "the handler's bytes" of an
    /// empty one trapped before); a class handler as itself.
    @Test
    func valueHandlersAreKeptBoxedAndTheirWordIsTheBox() {
        var table = TimerTable(queue: TimerWheel<TimerRecord>(tickShift: 10))
        let object = TimerTablePrefetchTests.Handler()
        #expect(TimerHandlers.object(object) === object, "a class handler is kept as itself")
        let objects: [TimerHandlerObject] = [
            TimerHandlers.object(Empty()), TimerHandlers.object(OneByte()),
            TimerHandlers.object(Reference(object: object)), TimerHandlers.object(Boxed()),
        ]
        for handler in objects {
            _ = table.arm(deadline: .zero.advanced(by: .milliseconds(1)), period: nil, handler: handler)
        }
        var due: [TimerWheel<TimerRecord>.Expired] = []
        table.expire(at: 10_000_000, into: &due)
        #expect(due.count == 4)
        let words = due.map { table.handlerWord($0.id) }
        #expect(words == objects.map { UInt(bitPattern: ObjectIdentifier($0)) })
        for expired in due {
            _ = table.beginFiring(expired.id)
            _ = table.endFiring(expired.id, now: 10_000_000)
        }
        #expect(table.count == 0)
    }

    /// A boxed value handler is told what its timer did: fired, or cancelled.
    @Test
    func aBoxedValueHandlerHearsItsTimersOutcome() {
        final class Log: @unchecked Sendable {
            // Safe: the test calls it from its own thread only.
            var lines: [String] = []
        }
        struct Recording: TimerHandler {
            let log: Log
            let name: String
            func timerFired(_ timer: TimerHandle) { log.lines.append("\(name) fired") }
            func timerCancelled(_ timer: TimerHandle) { log.lines.append("\(name) cancelled") }
        }
        let log = Log()
        var table = TimerTable(queue: TimerWheel<TimerRecord>(tickShift: 10))
        let fires = TimerHandlers.object(Recording(log: log, name: "a"))
        let cancels = TimerHandlers.object(Recording(log: log, name: "b"))
        _ = table.arm(deadline: .zero.advanced(by: .milliseconds(1)), period: nil, handler: fires)
        let cancelled = table.arm(deadline: .zero.advanced(by: .milliseconds(2)), period: nil, handler: cancels)
        let (outcome, told) = table.cancel(cancelled)
        #expect(outcome == .cancelled)
        told?.timerCancelled(cancelled)
        var due: [TimerWheel<TimerRecord>.Expired] = []
        table.expire(at: 10_000_000, into: &due)
        for expired in due {
            guard let (handler, handle) = table.beginFiring(expired.id) else { continue }
            handler.timerFired(handle)
            _ = table.endFiring(expired.id, now: 10_000_000)
        }
        #expect(log.lines == ["b cancelled", "a fired"])
    }
}
