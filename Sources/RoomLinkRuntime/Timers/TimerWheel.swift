/// A hierarchical timing wheel (Varghese & Lauck, scheme 7) over 64-bit tick numbers.
///
/// Eight levels of 256 slots cover every 64-bit tick. A timer lives at the level of the highest byte in which its
/// expiry tick differs from the wheel's current tick, in the slot named by that byte, so level 0 holds the timers
/// of the current 256-tick window exactly, and a higher slot is *cascaded* (its timers re-placed lower) when the
/// current tick reaches its start. Each timer cascades at most seven times; insert and cancel are O(1) (doubly
/// linked lists threaded through one slab), and finding the next slot to process is a scan of per-level 256-bit
/// occupancy bitmaps, so an idle wheel jumps straight to its next expiry.
///
/// The wheel knows nothing of clocks or threads: its owner feeds it times in nanoseconds. With a tick of one
/// nanosecond (`tickShift == 0`) it is exact and serves the simulation; with a tick of 2^19 ns (≈ 0.5 ms) it
/// batches the timers of a libevent loop so that one wake-up expires every timer of a tick.
///
/// Expired timers are handed out in `(deadline, insertion sequence)` order, which makes the order of timers with
/// equal deadlines deterministic.
package struct TimerWheel<Payload>: TimerQueue {
    package typealias ID = TimerQueueID

    /// One timer handed out by ``advance(to:into:)``.
    package struct Expired {
        @usableFromInline
        package var deadline: UInt64
        @usableFromInline
        package var sequence: UInt64
        @usableFromInline
        package var id: ID
    }

    @inlinable
    package static var levels: Int { 8 }
    @inlinable
    package static var slotsPerLevel: Int { 256 }
    /// The bucket of timers whose expiry tick had already passed when they were inserted.
    @inlinable
    package static var overdueBucket: Int32 { 2048 }
    @inlinable
    package static var detached: Int32 { -1 }
    @inlinable
    package static var free: Int32 { -2 }

    @usableFromInline
    package struct Entry {
        var deadline: UInt64 = 0
        var expiryTick: UInt64 = 0
        var sequence: UInt64 = 0
        var next: Int32 = -1
        var previous: Int32 = -1
        /// Bucket index (`level << 8 | slot`, or `overdueBucket`), `detached` or `free`.
        var bucket: Int32 = TimerWheel.free
        var generation: UInt32 = 1
        var payload: Payload?
    }

    @usableFromInline
    package var entries: [Entry] = []
    @usableFromInline
    package var freeHead: Int32 = -1
    @usableFromInline
    package var heads: [Int32]
    @usableFromInline
    package var tails: [Int32]
    @usableFromInline
    package var occupancy: [UInt64]
    @usableFromInline
    package var nextSequence: UInt64 = 0

    /// log2 of the tick length in nanoseconds.
    package let tickShift: UInt64
    /// Every timer whose expiry tick is at or before this tick has been handed out.
    package private(set) var currentTick: UInt64
    /// Timers scheduled in the wheel (not counting detached ones).
    package private(set) var count = 0

    /// Creates a wheel with ticks of `1 << tickShift` nanoseconds, starting at time `start` (nanoseconds).
    @inlinable
    package init(tickShift: UInt64, start: UInt64 = 0) {
        precondition(tickShift < 40, "tick of 2^\(tickShift) ns is longer than a wheel needs")
        self.tickShift = tickShift
        self.currentTick = start >> tickShift
        heads = Array(repeating: -1, count: Self.levels * Self.slotsPerLevel + 1)
        tails = heads
        occupancy = Array(repeating: 0, count: Self.levels * 4)
    }

    /// The length of one tick in nanoseconds.
    @inlinable
    package var tickNanoseconds: UInt64 { 1 << tickShift }

    // MARK: - Insert and remove

    /// Schedules `payload` at `deadline` (nanoseconds) and returns its ID.
    @inlinable
    package mutating func insert(deadline: UInt64, payload: Payload) -> ID {
        let index: Int32
        if freeHead >= 0 {
            index = freeHead
            freeHead = entries[Int(index)].next
        } else {
            index = Int32(entries.count)
            entries.append(Entry())
        }
        entries[Int(index)].payload = payload
        place(index, deadline: deadline)
        return ID(index: index, generation: entries[Int(index)].generation)
    }

    /// Re-schedules a timer that is scheduled or detached (handed out by `advance`) at a new deadline.
    ///
    /// A periodic timer uses this to keep its ID across periods.
    @inlinable
    package mutating func reschedule(_ id: ID, deadline: UInt64) {
        guard let index = validIndex(id) else { preconditionFailure("reschedule of unknown timer \(id.rawValue)") }
        if entries[index].bucket >= 0 { unlink(Int32(index)) }
        place(Int32(index), deadline: deadline)
    }

    /// Removes a scheduled timer and returns its payload; `nil` if `id` is not scheduled (fired, detached,
    /// removed or unknown).
    @inlinable
    package mutating func remove(_ id: ID) -> Payload? {
        guard let index = validIndex(id), entries[index].bucket >= 0 else { return nil }
        unlink(Int32(index))
        return release(index)
    }

    /// Frees a detached timer (one handed out by `advance`) and returns its payload.
    @discardableResult
    @inlinable
    package mutating func free(_ id: ID) -> Payload? {
        guard let index = validIndex(id), entries[index].bucket == Self.detached else { return nil }
        return release(index)
    }

    /// Whether `id` is scheduled (waiting in the wheel).
    @inlinable
    package func isScheduled(_ id: ID) -> Bool {
        guard let index = validIndex(id) else { return false }
        return entries[index].bucket >= 0
    }

    /// Whether `id` was handed out by `advance` and neither freed nor rescheduled since.
    @inlinable
    package func isDetached(_ id: ID) -> Bool {
        guard let index = validIndex(id) else { return false }
        return entries[index].bucket == Self.detached
    }

    /// The payload of a scheduled or detached timer.
    @inlinable
    package func payload(_ id: ID) -> Payload? {
        guard let index = validIndex(id) else { return nil }
        return entries[index].payload
    }

    /// Replaces the payload of a scheduled or detached timer.
    @inlinable
    package mutating func setPayload(_ id: ID, _ payload: Payload) {
        guard let index = validIndex(id) else { return }
        entries[index].payload = payload
    }

    /// Removes every timer, scheduled or detached, and returns their IDs and payloads in deadline order.
    @discardableResult
    @inlinable
    package mutating func removeAll() -> [(ID, Payload)] {
        var result: [(UInt64, UInt64, ID, Payload)] = []
        for index in entries.indices where entries[index].bucket != Self.free {
            let entry = entries[index]
            if let payload = entry.payload {
                result.append((entry.deadline, entry.sequence, ID(index: Int32(index), generation: entry.generation), payload))
            }
        }
        entries.removeAll()
        freeHead = -1
        for i in heads.indices { heads[i] = -1; tails[i] = -1 }
        for i in occupancy.indices { occupancy[i] = 0 }
        count = 0
        result.sort { ($0.0, $0.1) < ($1.0, $1.1) }
        return result.map { ($0.2, $0.3) }
    }

    // MARK: - Time

    /// The time (nanoseconds) at which the wheel next needs ``advance(to:into:)``: the next expiry at level 0,
    /// a cascade point at a higher level, or now (current tick) if an overdue timer waits; `nil` when empty.
    @inlinable
    package func nextDeadline() -> UInt64? {
        guard let tick = nextEvent()?.tick else { return nil }
        let (time, overflow) = tick.multipliedReportingOverflow(by: tickNanoseconds)
        return overflow ? .max : time
    }

    /// Moves the wheel to time `now` (nanoseconds) and appends every timer due by then to `expired`, detached and
    /// in `(deadline, sequence)` order. A detached timer must then be freed or rescheduled by the owner.
    @inlinable
    package mutating func advance(to now: UInt64, into expired: inout [Expired]) {
        let target = now >> tickShift
        let firstNew = expired.count
        while let (tick, bucket) = nextEvent(), tick <= target {
            currentTick = max(currentTick, tick)
            var index = takeBucket(bucket)
            while index >= 0 {
                let next = entries[Int(index)].next
                if entries[Int(index)].expiryTick <= currentTick {
                    entries[Int(index)].bucket = Self.detached
                    count -= 1
                    let entry = entries[Int(index)]
                    expired.append(
                        Expired(
                            deadline: entry.deadline, sequence: entry.sequence,
                            id: ID(index: index, generation: entry.generation)))
                } else {
                    count -= 1  // `append` counts it again
                    append(index, to: bucketIndex(for: entries[Int(index)].expiryTick))
                }
                index = next
            }
        }
        if target > currentTick { currentTick = target }
        sortIfNeeded(&expired, from: firstNew)
    }

    // MARK: - Internals

    @inlinable
    package func validIndex(_ id: ID) -> Int? {
        let index = id.index
        guard index >= 0, index < entries.count, entries[index].generation == id.generation,
            entries[index].bucket != Self.free
        else { return nil }
        return index
    }

    @inlinable
    package mutating func release(_ index: Int) -> Payload? {
        let payload = entries[index].payload
        entries[index].payload = nil
        entries[index].bucket = Self.free
        entries[index].generation = TimerQueueID.nextGeneration(after: entries[index].generation)
        entries[index].next = freeHead
        freeHead = Int32(index)
        return payload
    }

    @inlinable
    package mutating func place(_ index: Int32, deadline: UInt64) {
        let (rounded, overflow) = deadline.addingReportingOverflow(tickNanoseconds - 1)
        // Round up: a timer is handed out at the end of its deadline's tick, never before the deadline.
        let expiryTick = overflow ? (UInt64.max >> tickShift) : rounded >> tickShift
        entries[Int(index)].deadline = deadline
        entries[Int(index)].expiryTick = expiryTick
        entries[Int(index)].sequence = nextSequence
        nextSequence &+= 1
        append(index, to: expiryTick <= currentTick ? Self.overdueBucket : bucketIndex(for: expiryTick))
    }

    @inline(__always)
    @inlinable
    package func bucketIndex(for expiryTick: UInt64) -> Int32 {
        let differing = expiryTick ^ currentTick
        let level = (63 - differing.leadingZeroBitCount) >> 3
        let slot = Int((expiryTick >> UInt64(level << 3)) & 0xFF)
        return Int32(level << 8 | slot)
    }

    @inlinable
    package mutating func append(_ index: Int32, to bucket: Int32) {
        let b = Int(bucket)
        entries[Int(index)].bucket = bucket
        entries[Int(index)].next = -1
        entries[Int(index)].previous = tails[b]
        if tails[b] >= 0 {
            entries[Int(tails[b])].next = index
        } else {
            heads[b] = index
            if bucket != Self.overdueBucket { occupancy[b >> 6] |= 1 << UInt64(b & 63) }
        }
        tails[b] = index
        count += 1
    }

    @inlinable
    package mutating func unlink(_ index: Int32) {
        let entry = entries[Int(index)]
        let b = Int(entry.bucket)
        if entry.previous >= 0 { entries[Int(entry.previous)].next = entry.next } else { heads[b] = entry.next }
        if entry.next >= 0 { entries[Int(entry.next)].previous = entry.previous } else { tails[b] = entry.previous }
        if heads[b] < 0, entry.bucket != Self.overdueBucket { occupancy[b >> 6] &= ~(1 << UInt64(b & 63)) }
        entries[Int(index)].bucket = Self.detached
        count -= 1
    }

    /// Empties a bucket and returns the head of its list.
    @inlinable
    package mutating func takeBucket(_ bucket: Int32) -> Int32 {
        let b = Int(bucket)
        let head = heads[b]
        heads[b] = -1
        tails[b] = -1
        if bucket != Self.overdueBucket { occupancy[b >> 6] &= ~(1 << UInt64(b & 63)) }
        return head
    }

    /// The next tick at which something happens and the bucket to process then.
    @inlinable
    package func nextEvent() -> (tick: UInt64, bucket: Int32)? {
        if heads[Int(Self.overdueBucket)] >= 0 { return (currentTick, Self.overdueBucket) }
        for level in 0..<Self.levels {
            let shift = UInt64(level << 3)
            let digit = Int((currentTick >> shift) & 0xFF)
            guard let slot = firstOccupiedSlot(level: level, after: digit) else { continue }
            let lowMask: UInt64 = level == Self.levels - 1 ? .max : (1 << (shift + 8)) - 1
            let start = (currentTick & ~lowMask) | (UInt64(slot) << shift)
            return (start, Int32(level << 8 | slot))
        }
        return nil
    }

    @inlinable
    package func firstOccupiedSlot(level: Int, after digit: Int) -> Int? {
        var position = digit + 1
        while position < Self.slotsPerLevel {
            let word = position >> 6
            let bits = occupancy[level << 2 | word] & (UInt64.max << UInt64(position & 63))
            if bits != 0 { return word << 6 | bits.trailingZeroBitCount }
            position = (word + 1) << 6
        }
        return nil
    }

    @inlinable
    package func sortIfNeeded(_ expired: inout [Expired], from start: Int) {
        guard expired.count - start > 1 else { return }
        var sorted = true
        for i in (start + 1)..<expired.count
        where (expired[i - 1].deadline, expired[i - 1].sequence) > (expired[i].deadline, expired[i].sequence) {
            sorted = false
            break
        }
        if !sorted {
            expired[start...].sort { ($0.deadline, $0.sequence) < ($1.deadline, $1.sequence) }
        }
    }
}
