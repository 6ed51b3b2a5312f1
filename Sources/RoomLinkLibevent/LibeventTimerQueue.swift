internal import CLibevent
@_spi(RoomLinkInternals) import RoomLinkRuntime

/// A ``TimerQueue`` in which every timer is a libevent timer event: the ``TimerBackend/libeventHeap`` and
/// ``TimerBackend/libeventCommonTimeout`` backends.
///
/// Events are created once per slot and reused. Each event's `fd` argument carries its slot index (a pure timer
/// event has no fd interest, so libevent never uses the value), which lets one capture-free C callback find the
/// slot without a per-timer allocation for context.
struct LibeventTimerQueue: TimerQueue {
    typealias Payload = TimerRecord

    private enum State: UInt8 { case free, scheduled, detached }

    private struct Slot {
        var event: OpaquePointer?
        var payload: TimerRecord?
        var deadline: UInt64 = 0
        var generation: UInt32 = 1
        var state = State.free
        var nextFree: Int32 = -1
    }

    private let base: OpaquePointer
    private let callback: CLibevent_callback
    private let callbackArgument: UnsafeMutableRawPointer
    private let epoch: UInt64
    private let usesCommonTimeouts: Bool
    private var slots: [Slot] = []
    private var freeHead: Int32 = -1
    /// Common-timeout `timeval`s by delay in milliseconds; libevent allows 256 per base.
    private var commonTimeouts: [UInt64: timeval] = [:]
    private(set) var count = 0
    /// The real time (from `epoch`) at which the loop's current callback began; every timer armed during the
    /// callback measures its delay from it. See ``beginPass(now:)``.
    private var passStart: UInt64

    init(
        base: OpaquePointer,
        epoch: UInt64,
        usesCommonTimeouts: Bool,
        callback: CLibevent_callback,
        callbackArgument: UnsafeMutableRawPointer
    ) {
        self.base = base
        self.epoch = epoch
        self.usesCommonTimeouts = usesCommonTimeouts
        self.callback = callback
        self.callbackArgument = callbackArgument
        // Before the loop runs libevent has no cached time and reads the clock at each add, which is later than
        // this: delays measured from here are never short.
        self.passStart = Libevent.monotonicNanoseconds() &- epoch
    }

    /// Starts a loop callback at real time `now` (from `epoch`): call it first in every callback that may arm timers.
    ///
    /// libevent adds a relative timeout to the time it cached for the callback, not to the clock. Measuring every
    /// delay from one time per callback — and making libevent's cache that time or later — keeps two things true
    /// however long the callback runs or is preempted: no timer fires before its deadline, and timers armed in one
    /// callback fire in deadline order (each is `cache + (deadline − passStart)`). Measured from the clock at each
    /// add instead, a thread preempted between two adds would put the later-armed timer ahead of an earlier
    /// deadline, as the wheel's tick never does.
    mutating func beginPass(now: UInt64) {
        passStart = now
        // Read the clock first, then refresh the cache: libevent's time is then no earlier than `passStart`.
        event_base_update_cache_time(base)
    }

    mutating func insert(deadline: UInt64, payload: TimerRecord) -> TimerQueueID {
        let index: Int32
        if freeHead >= 0 {
            index = freeHead
            freeHead = slots[Int(index)].nextFree
        } else {
            index = Int32(slots.count)
            slots.append(Slot())
        }
        if slots[Int(index)].event == nil {
            // A failed allocation here means the process is out of memory; there is no meaningful recovery.
            guard let event = event_new(base, index, 0, callback, callbackArgument) else {
                fatalError("event_new failed: out of memory")
            }
            slots[Int(index)].event = event
        }
        slots[Int(index)].payload = payload
        add(Int(index), deadline: deadline)
        count += 1
        return TimerQueueID(index: index, generation: slots[Int(index)].generation)
    }

    mutating func reschedule(_ id: TimerQueueID, deadline: UInt64) {
        guard let index = valid(id) else { preconditionFailure("reschedule of unknown timer \(id.rawValue)") }
        if slots[index].state == .scheduled {
            event_del(slots[index].event)
        } else {
            count += 1
        }
        add(index, deadline: deadline)
    }

    mutating func remove(_ id: TimerQueueID) -> TimerRecord? {
        guard let index = valid(id), slots[index].state == .scheduled else { return nil }
        event_del(slots[index].event)
        count -= 1
        return release(index)
    }

    @discardableResult
    mutating func free(_ id: TimerQueueID) -> TimerRecord? {
        guard let index = valid(id), slots[index].state == .detached else { return nil }
        return release(index)
    }

    func isDetached(_ id: TimerQueueID) -> Bool {
        valid(id).map { slots[$0].state == .detached } ?? false
    }

    func payload(_ id: TimerQueueID) -> TimerRecord? {
        valid(id).flatMap { slots[$0].payload }
    }

    mutating func withPayload<R>(_ id: TimerQueueID, _ body: (inout TimerRecord) -> R) -> R? {
        // A slot that is not free always holds a payload (`release` clears it and frees the slot).
        guard let index = valid(id) else { return nil }
        return body(&slots[index].payload!)
    }

    mutating func setPayload(_ id: TimerQueueID, _ payload: TimerRecord) {
        if let index = valid(id) { slots[index].payload = payload }
    }

    mutating func removeAll() -> [(TimerQueueID, TimerRecord)] {
        var result: [(UInt64, TimerQueueID, TimerRecord)] = []
        for index in slots.indices where slots[index].state != .free {
            if slots[index].state == .scheduled { event_del(slots[index].event) }
            if let payload = slots[index].payload {
                let id = TimerQueueID(index: Int32(index), generation: slots[index].generation)
                result.append((slots[index].deadline, id, payload))
            }
            _ = release(index)
        }
        count = 0
        return result.sorted { $0.0 < $1.0 }.map { ($0.1, $0.2) }
    }

    /// Called from the event callback: the slot's event fired at real time `now`. Returns the ID to fire, or
    /// `nil` if libevent fired early (it measures from a time cached at the start of its loop pass), in which
    /// case the event is added again for the rest.
    mutating func eventFired(slot index: Int, now: UInt64) -> TimerQueueID? {
        guard index < slots.count, slots[index].state == .scheduled else { return nil }
        if now < slots[index].deadline {
            add(index, deadline: slots[index].deadline)
            return nil
        }
        slots[index].state = .detached
        count -= 1
        return TimerQueueID(index: Int32(index), generation: slots[index].generation)
    }

    /// The real-time deadline of a timer handed out by ``eventFired(slot:now:)``.
    func deadline(of id: TimerQueueID) -> UInt64? {
        valid(id).map { slots[$0].deadline }
    }

    /// Frees every libevent event. Call on the loop thread before the base is freed.
    mutating func freeEvents() {
        for index in slots.indices {
            if let event = slots[index].event { event_free(event) }
            slots[index].event = nil
        }
    }

    private func valid(_ id: TimerQueueID) -> Int? {
        let index = id.index
        guard index >= 0, index < slots.count, slots[index].generation == id.generation, slots[index].state != .free
        else { return nil }
        return index
    }

    private mutating func release(_ index: Int) -> TimerRecord? {
        let payload = slots[index].payload
        slots[index].payload = nil
        slots[index].state = .free
        slots[index].generation = TimerQueueID.nextGeneration(after: slots[index].generation)
        slots[index].nextFree = freeHead
        freeHead = Int32(index)
        return payload
    }

    private mutating func add(_ index: Int, deadline: UInt64) {
        slots[index].deadline = deadline
        slots[index].state = .scheduled
        let delay = deadline > passStart ? deadline - passStart : 0
        var timeout: timeval
        if usesCommonTimeouts, let common = commonTimeout(forDelay: delay) {
            timeout = common
        } else {
            timeout = Libevent.timeval(nanoseconds: delay)
        }
        event_add(slots[index].event, &timeout)
    }

    private mutating func commonTimeout(forDelay delay: UInt64) -> timeval? {
        let milliseconds = (delay + 999_999) / 1_000_000
        if let known = commonTimeouts[milliseconds] { return known }
        guard commonTimeouts.count < 256 else { return nil }
        var duration = Libevent.timeval(nanoseconds: milliseconds * 1_000_000)
        guard let common = event_base_init_common_timeout(base, &duration) else { return nil }
        commonTimeouts[milliseconds] = common.pointee
        return common.pointee
    }
}
