/// A hierarchical timing wheel (Varghese & Lauck, scheme 7) over 64-bit tick numbers.
///
/// Levels of 2^``bitsPerLevel`` slots cover every 64-bit tick. A timer lives at the level of the highest digit in
/// which its expiry tick differs from the wheel's current tick, in the slot named by that digit, so level 0 holds
/// the timers of the current window exactly, and a higher slot is *cascaded* (its timers re-placed lower) when the
/// current tick reaches its start. Insert and cancel are O(1); finding the next slot to process is a scan of
/// occupancy bitmaps, so an idle wheel jumps straight to its next expiry.
///
/// Each bucket is an array of 16-byte ``Slot``s (expiry tick, slab index, placement number), not a linked list
/// through the slab: a cascade reads its bucket sequentially and never touches the timers' entries, so moving
/// 50k timers takes a fraction of a millisecond instead of a cache miss each. (A linked-list wheel stalled a loop
/// for 1–3 ms at every level boundary with 100k timers.) Cancel is O(1) and lazy: it frees the timer's entry at
/// once and leaves a stale slot behind, which is dropped when its bucket is processed (at the latest at the
/// cancelled timer's own expiry). A stale slot costs 16 bytes until then.
///
/// The wheel knows nothing of clocks or threads: its owner feeds it times in nanoseconds. With a tick of one
/// nanosecond (`tickShift == 0`) it is exact and serves the simulation; with a tick of 2^19 ns (≈ 0.5 ms) it
/// batches the timers of a libevent loop so that one wake-up expires every timer of a tick.
///
/// Expired timers are handed out in `(deadline, insertion sequence)` order, which makes the order of timers with
/// equal deadlines deterministic.
///
/// Public behind an SPI rather than `package`, as the timer table, records and queue IDs are: the libevent loops
/// in another module run the wheel's generic code, and with these declarations `package` the release build no
/// longer specialised it there — the million-client real-clock heartbeat run (`roomlink load --clients 1000000
/// --rooms 10000 --clock real --duration 100s --timing heartbeatInterval=5s`) took 116.1 s of CPU against
/// 95.5 s with the SPI, same code otherwise (+22 %, measured side by side).
@_spi(RoomLinkInternals) public struct TimerWheel<Payload>: TimerQueue {
    @_spi(RoomLinkInternals) public typealias ID = TimerQueueID

    /// One timer handed out by ``advance(to:into:)``.
    @_spi(RoomLinkInternals) public struct Expired {
        @_spi(RoomLinkInternals) public var deadline: UInt64
        @_spi(RoomLinkInternals) public var sequence: UInt64
        @_spi(RoomLinkInternals) public var id: ID

        @inlinable
        @_spi(RoomLinkInternals) public init(deadline: UInt64, sequence: UInt64, id: ID) {
            self.deadline = deadline
            self.sequence = sequence
            self.id = id
        }
    }

    /// log2 of the slots per level: 8 levels of 256 slots, so a timer cascades at most 7 times (in practice once
    /// or twice for delays up to minutes at a 0.5 ms tick).
    @inlinable @_spi(RoomLinkInternals) public static var bitsPerLevel: Int { 8 }
    /// Enough levels to cover every 64-bit tick.
    @inlinable @_spi(RoomLinkInternals) public static var levels: Int { (64 + bitsPerLevel - 1) / bitsPerLevel }
    @inlinable @_spi(RoomLinkInternals) public static var slotsPerLevel: Int { 1 << bitsPerLevel }
    /// The bucket of timers whose expiry tick had already passed when they were inserted.
    @inlinable @_spi(RoomLinkInternals) public static var overdueBucket: Int32 { Int32(levels << bitsPerLevel) }

    /// One scheduled placement of a timer in a bucket.
    @_spi(RoomLinkInternals) public struct Slot {
        @usableFromInline var expiryTick: UInt64
        @usableFromInline var index: Int32
        /// The entry's placement number when this slot was made; a slot whose number no longer matches is stale.
        @usableFromInline var placement: UInt32

        @inlinable init(expiryTick: UInt64, index: Int32, placement: UInt32) {
            self.expiryTick = expiryTick
            self.index = index
            self.placement = placement
        }
    }

    @usableFromInline static var stateFree: UInt8 { 0 }
    @usableFromInline static var stateScheduled: UInt8 { 1 }
    @usableFromInline static var stateDetached: UInt8 { 2 }

    /// A timer's entry in the slab. The payload comes first and the one-byte state right after it: a timer table's
    /// payload (``TimerRecord``) ends in two flags, and the state fills the bytes they leave before the next word —
    /// 72 bytes an entry where the state before the payload took 80 (a million-client run keeps a million entries).
    @_spi(RoomLinkInternals) public struct Entry {
        @usableFromInline var payload: Payload?
        @usableFromInline var state: UInt8 = TimerWheel.stateFree
        /// Bumped at every placement and removal, so earlier slots of this entry go stale.
        @usableFromInline var placement: UInt32 = 0
        /// Part of the public ID; bumped when the entry is freed, so stale IDs never match a reused entry.
        @usableFromInline var generation: UInt32 = 1
        @usableFromInline var deadline: UInt64 = 0
        @usableFromInline var sequence: UInt64 = 0

        @inlinable init() {}
    }

    @usableFromInline var entries: [Entry] = []
    @usableFromInline var freeSlots: [Int32] = []
    @usableFromInline var buckets: [[Slot]]
    @usableFromInline var occupancy: [UInt64]
    @usableFromInline var nextSequence: UInt64 = 0

    /// log2 of the tick length in nanoseconds.
    @_spi(RoomLinkInternals) public let tickShift: UInt64
    /// Every timer whose expiry tick is at or before this tick has been handed out.
    @_spi(RoomLinkInternals) public var currentTick: UInt64
    /// Timers scheduled in the wheel (not counting detached ones).
    @_spi(RoomLinkInternals) public var count = 0

    /// Creates a wheel with ticks of `1 << tickShift` nanoseconds, starting at time `start` (nanoseconds).
    @inlinable
    @_spi(RoomLinkInternals) public init(tickShift: UInt64, start: UInt64 = 0) {
        precondition(tickShift < 40, "tick of 2^\(tickShift) ns is longer than a wheel needs")
        self.tickShift = tickShift
        self.currentTick = start >> tickShift
        buckets = Array(repeating: [], count: Self.levels * Self.slotsPerLevel + 1)
        occupancy = Array(repeating: 0, count: (Self.levels * Self.slotsPerLevel + 63) / 64)
    }

    /// The length of one tick in nanoseconds.
    @inlinable
    @_spi(RoomLinkInternals) public var tickNanoseconds: UInt64 { 1 << tickShift }

    // MARK: - Insert and remove

    /// Schedules `payload` at `deadline` (nanoseconds) and returns its ID.
    @inlinable
    @_spi(RoomLinkInternals) public mutating func insert(deadline: UInt64, payload: Payload) -> ID {
        let index: Int32
        if let reused = freeSlots.popLast() {
            index = reused
        } else {
            index = Int32(entries.count)
            entries.append(Entry())
        }
        entries[Int(index)].payload = payload
        place(index, deadline: deadline)
        return ID(index: index, generation: entries[Int(index)].generation)
    }

    /// Schedules `payload` at `deadline` with a sequence number taken earlier (``takeSequences(_:)``): among timers of
    /// one deadline it comes where a timer armed when the number was taken would have.
    @inlinable
    @_spi(RoomLinkInternals) public mutating func insert(deadline: UInt64, payload: Payload, sequence: UInt64) -> ID {
        let id = insert(deadline: deadline, payload: payload)
        // `place` just gave it the next number and moved the counter on; the counter stays moved on (numbers are
        // only compared, so a gap is harmless).
        entries[id.index].sequence = sequence
        return id
    }

    /// Re-schedules a timer that is scheduled or detached (handed out by `advance`) at a new deadline.
    ///
    /// A periodic timer uses this to keep its ID across periods.
    @inlinable
    @_spi(RoomLinkInternals) public mutating func reschedule(_ id: ID, deadline: UInt64) {
        guard let index = validIndex(id) else { preconditionFailure("reschedule of unknown timer \(id.rawValue)") }
        if entries[index].state == Self.stateScheduled { count -= 1 }  // its old slot goes stale in `place`
        place(Int32(index), deadline: deadline)
    }

    /// Removes a scheduled timer and returns its payload; `nil` if `id` is not scheduled (fired, detached,
    /// removed or unknown).
    @inlinable
    @_spi(RoomLinkInternals) public mutating func remove(_ id: ID) -> Payload? {
        guard let index = validIndex(id), entries[index].state == Self.stateScheduled else { return nil }
        count -= 1
        return release(index)
    }

    /// Frees a detached timer (one handed out by `advance`) and returns its payload.
    @inlinable @discardableResult
    @_spi(RoomLinkInternals) public mutating func free(_ id: ID) -> Payload? {
        guard let index = validIndex(id), entries[index].state == Self.stateDetached else { return nil }
        return release(index)
    }

    /// Whether `id` is scheduled (waiting in the wheel).
    @inlinable
    @_spi(RoomLinkInternals) public func isScheduled(_ id: ID) -> Bool {
        guard let index = validIndex(id) else { return false }
        return entries[index].state == Self.stateScheduled
    }

    /// Whether `id` was handed out by `advance` and neither freed nor rescheduled since.
    @inlinable
    @_spi(RoomLinkInternals) public func isDetached(_ id: ID) -> Bool {
        guard let index = validIndex(id) else { return false }
        return entries[index].state == Self.stateDetached
    }

    /// The payload of a scheduled or detached timer.
    @inlinable
    @_spi(RoomLinkInternals) public func payload(_ id: ID) -> Payload? {
        guard let index = validIndex(id) else { return nil }
        return entries[index].payload
    }

    /// Starts loading the entry of `id` (its payload and state), for an owner that will fire it a few timers on:
    /// the entries of millions of timers are in no cache. Nothing is read; an ID out of range does nothing.
    @inlinable
    @_spi(RoomLinkInternals) public func prefetchEntry(_ id: ID) {
        let index = id.index
        guard index >= 0, index < entries.count else { return }
        entries.withUnsafeBufferPointer { buffer in
            prefetchCacheLines(at: buffer.baseAddress! + index, bytes: MemoryLayout<Entry>.size)
        }
    }

    @inlinable
    @_spi(RoomLinkInternals) public mutating func withPayload<R>(_ id: ID, _ body: (inout Payload) -> R) -> R? {
        // A scheduled or detached entry always holds a payload (only `release` clears it, and frees the entry);
        // checking it here would copy it.
        guard let index = validIndex(id) else { return nil }
        return body(&entries[index].payload!)
    }

    /// Replaces the payload of a scheduled or detached timer.
    @inlinable
    @_spi(RoomLinkInternals) public mutating func setPayload(_ id: ID, _ payload: Payload) {
        guard let index = validIndex(id) else { return }
        entries[index].payload = payload
    }

    /// Removes every timer, scheduled or detached, and returns their IDs and payloads in deadline order.
    @inlinable @discardableResult
    @_spi(RoomLinkInternals) public mutating func removeAll() -> [(ID, Payload)] {
        // Sort indices by (deadline, sequence), then collect payloads: sorting the payloads themselves would copy
        // them through value witnesses at every comparison.
        var live: [Int] = []
        for index in entries.indices where entries[index].state != Self.stateFree && entries[index].payload != nil {
            live.append(index)
        }
        live.sort { (entries[$0].deadline, entries[$0].sequence) < (entries[$1].deadline, entries[$1].sequence) }
        let result = live.map { (ID(index: Int32($0), generation: entries[$0].generation), entries[$0].payload!) }
        entries.removeAll()
        freeSlots.removeAll()
        for i in buckets.indices { buckets[i].removeAll() }
        for i in occupancy.indices { occupancy[i] = 0 }
        count = 0
        return result
    }

    /// Takes the sequence number the next timer placed would have, for something ordered among the wheel's timers
    /// without being one (a simulation's lanes).
    @inlinable
    @_spi(RoomLinkInternals) public mutating func takeSequence() -> UInt64 {
        takeSequences(1)
    }

    /// Takes `count` sequence numbers at once and returns the first: what `count` timers placed one after another
    /// now would have, to be given later (``insert(deadline:payload:sequence:)``).
    @inlinable
    @_spi(RoomLinkInternals) public mutating func takeSequences(_ count: Int) -> UInt64 {
        defer { nextSequence &+= UInt64(count) }
        return nextSequence
    }

    // MARK: - Time

    /// The time (nanoseconds) at which the wheel next needs ``advance(to:into:)``: the next expiry at level 0,
    /// a cascade point at a higher level, or now (current tick) if an overdue timer waits; `nil` when empty.
    /// Whether timers armed for the current tick (or earlier) wait in the overdue bucket: O(1), no scan.
    @inlinable
    @_spi(RoomLinkInternals) public var hasOverdue: Bool { !buckets[Int(Self.overdueBucket)].isEmpty }

    @inlinable
    @_spi(RoomLinkInternals) public func nextDeadline() -> UInt64? {
        guard let tick = nextEvent()?.tick else { return nil }
        let (time, overflow) = tick.multipliedReportingOverflow(by: tickNanoseconds)
        return overflow ? .max : time
    }

    /// Moves the wheel to time `now` (nanoseconds) and appends every timer due by then to `expired`, detached and
    /// in `(deadline, sequence)` order. A detached timer must then be freed or rescheduled by the owner.
    @inlinable
    @_spi(RoomLinkInternals) public mutating func advance(to now: UInt64, into expired: inout [Expired]) {
        let target = now >> tickShift
        let firstNew = expired.count
        while let (tick, bucket) = nextEvent(), tick <= target {
            currentTick = max(currentTick, tick)
            let list = takeBucket(bucket)
            for slot in list {
                if slot.expiryTick <= currentTick {
                    let index = Int(slot.index)
                    // A slot left behind by a cancel or a reschedule is dropped here.
                    guard entries[index].state == Self.stateScheduled, entries[index].placement == slot.placement
                    else { continue }
                    entries[index].state = Self.stateDetached
                    count -= 1
                    expired.append(
                        Expired(
                            deadline: entries[index].deadline,
                            sequence: entries[index].sequence,
                            id: ID(index: slot.index, generation: entries[index].generation)
                        )
                    )
                } else {
                    // Cascading moves the slot alone (stale ones too): no entry is read.
                    append(slot, to: bucketIndex(for: slot.expiryTick))
                }
            }
        }
        if target > currentTick { currentTick = target }
        sortIfNeeded(&expired, from: firstNew)
    }

    // MARK: - Internals

    @inlinable
    func validIndex(_ id: ID) -> Int? {
        let index = id.index
        guard index >= 0, index < entries.count, entries[index].generation == id.generation,
            entries[index].state != Self.stateFree
        else { return nil }
        return index
    }

    @inlinable
    mutating func release(_ index: Int) -> Payload? {
        let payload = entries[index].payload
        entries[index].payload = nil
        entries[index].state = Self.stateFree
        entries[index].placement &+= 1
        entries[index].generation = TimerQueueID.nextGeneration(after: entries[index].generation)
        freeSlots.append(Int32(index))
        return payload
    }

    @inlinable
    mutating func place(_ index: Int32, deadline: UInt64) {
        let (rounded, overflow) = deadline.addingReportingOverflow(tickNanoseconds - 1)
        // Round up: a timer is handed out at the end of its deadline's tick, never before the deadline.
        let expiryTick = overflow ? (UInt64.max >> tickShift) : rounded >> tickShift
        entries[Int(index)].deadline = deadline
        entries[Int(index)].sequence = nextSequence
        entries[Int(index)].state = Self.stateScheduled
        entries[Int(index)].placement &+= 1
        nextSequence &+= 1
        count += 1
        let slot = Slot(expiryTick: expiryTick, index: index, placement: entries[Int(index)].placement)
        append(slot, to: expiryTick <= currentTick ? Self.overdueBucket : bucketIndex(for: expiryTick))
    }

    @inlinable
    func bucketIndex(for expiryTick: UInt64) -> Int32 {
        let differing = expiryTick ^ currentTick
        let level = (63 - differing.leadingZeroBitCount) / Self.bitsPerLevel
        let slot = Int((expiryTick >> UInt64(level * Self.bitsPerLevel)) & UInt64(Self.slotsPerLevel - 1))
        return Int32(level << Self.bitsPerLevel | slot)
    }

    /// Appends a slot to a bucket.
    @inlinable
    mutating func append(_ slot: Slot, to bucket: Int32) {
        let b = Int(bucket)
        if buckets[b].isEmpty, bucket != Self.overdueBucket { occupancy[b >> 6] |= 1 << UInt64(b & 63) }
        buckets[b].append(slot)
    }

    /// Empties a bucket and returns its slots. The bucket is left without capacity: handing buffers from bucket to
    /// bucket would let every one of them keep the largest batch's memory.
    @inlinable
    mutating func takeBucket(_ bucket: Int32) -> [Slot] {
        let b = Int(bucket)
        let list = buckets[b]
        buckets[b] = []
        if bucket != Self.overdueBucket { occupancy[b >> 6] &= ~(1 << UInt64(b & 63)) }
        return list
    }

    /// The next tick at which something happens and the bucket to process then.
    @inlinable
    func nextEvent() -> (tick: UInt64, bucket: Int32)? {
        if hasOverdue { return (currentTick, Self.overdueBucket) }
        for level in 0..<Self.levels {
            let shift = UInt64(level * Self.bitsPerLevel)
            let digit = Int((currentTick >> shift) & UInt64(Self.slotsPerLevel - 1))
            guard let slot = firstOccupiedSlot(level: level, after: digit) else { continue }
            let top = shift + UInt64(Self.bitsPerLevel)
            let lowMask: UInt64 = top >= 64 ? .max : (1 << top) - 1
            let start = (currentTick & ~lowMask) | (UInt64(slot) << shift)
            return (start, Int32(level << Self.bitsPerLevel | slot))
        }
        return nil
    }

    /// The first occupied slot of `level` after `digit`. The bitmap is indexed by bucket number, so a level's bits
    /// need not start on a word boundary.
    @inlinable
    func firstOccupiedSlot(level: Int, after digit: Int) -> Int? {
        let base = level << Self.bitsPerLevel
        let end = base + Self.slotsPerLevel
        var bit = base + digit + 1
        while bit < end {
            let word = bit >> 6
            var bits = occupancy[word] & (UInt64.max << UInt64(bit & 63))
            if (word + 1) << 6 > end { bits &= (1 << UInt64(end & 63)) &- 1 }
            if bits != 0 { return (word << 6 | bits.trailingZeroBitCount) - base }
            bit = (word + 1) << 6
        }
        return nil
    }

    @inlinable
    func sortIfNeeded(_ expired: inout [Expired], from start: Int) {
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
