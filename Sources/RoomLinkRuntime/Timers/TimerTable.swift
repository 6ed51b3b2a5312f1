/// The timers of one service thread: a ``TimerWheel`` plus what the wheel does not know (handlers, periods,
/// cancellation during a firing, handles given out off-thread, scaled time).
///
/// Shared by the libevent loops and the simulation so both keep the same guarantees: exactly one outcome per
/// timer, periodic timers on an absolute schedule, handles that are unique for the service's lifetime.
///
/// - Important: The table never calls a handler. Its methods return what to call, and the owner calls it after
///   the mutation has ended, because a handler may re-enter the service (arm or cancel a timer) and an
///   overlapping mutation of the table would be an exclusivity violation.
@_spi(RoomLinkInternals) public struct TimerTable<Queue: TimerQueue> where Queue.Payload == TimerRecord {
    /// Where the timers wait. The owner may reach in for what only it knows (a libevent timer that fired).
    @_spi(RoomLinkInternals) public var queue: Queue
    /// Handles given out off the service thread (top bit set) → the queue's IDs.
    @_spi(RoomLinkInternals) public var remoteIDs: [UInt64: TimerQueueID] = [:]
    /// Scenario time ↔ real time.
    @_spi(RoomLinkInternals) public let timeScale: TimeScale
    /// The timer whose handler is running (between `beginFiring` and `endFiring`).
    @_spi(RoomLinkInternals) public var firing: TimerQueueID?

    /// Creates a table over `queue`.
    @inlinable
    @_spi(RoomLinkInternals) public init(queue: Queue, timeScale: TimeScale = TimeScale(1)) {
        self.queue = queue
        self.timeScale = timeScale
    }

    /// Timers waiting.
    @inlinable
    @_spi(RoomLinkInternals) public var count: Int { queue.count }

    @inlinable
    @_spi(RoomLinkInternals) public func realNanoseconds(_ scenario: Int64) -> UInt64 { timeScale.real(scenario) }
    @inlinable
    @_spi(RoomLinkInternals) public func scenarioNanoseconds(_ real: UInt64) -> Int64 { timeScale.scenario(real) }

    // MARK: - Arm and cancel

    /// Arms a timer and returns its handle. `remoteID` is the handle already given out off-thread, if any.
    @inlinable
    @_spi(RoomLinkInternals) public mutating func arm(
        deadline: RuntimeInstant,
        period: Duration?,
        handler: TimerHandlerObject,
        remoteID: UInt64? = nil
    ) -> TimerHandle {
        let record = TimerRecord(
            handler: handler,
            deadline: deadline.nanoseconds,
            period: period?.nanosecondsClamped ?? 0,
            remoteID: remoteID ?? 0
        )
        let id = queue.insert(deadline: realNanoseconds(deadline.nanoseconds), payload: record)
        if let remoteID { remoteIDs[remoteID] = id }
        return handle(for: record, id)
    }

    /// The handle the user holds for a timer: the one given out off-thread, or else the queue ID.
    @inlinable
    @_spi(RoomLinkInternals) public func handle(for record: TimerRecord, _ id: TimerQueueID) -> TimerHandle {
        TimerHandle(rawValue: record.remoteID != 0 ? record.remoteID : id.rawValue)
    }

    /// Whether `handle` was given out off-thread and its arm message has not been processed yet.
    @inlinable
    @_spi(RoomLinkInternals) public func isUnknownRemote(_ handle: TimerHandle) -> Bool {
        RemoteTimerIDs.isRemote(handle.rawValue) && remoteIDs[handle.rawValue] == nil
    }

    /// Cancels a timer. Returns the outcome and, when it is `.cancelled` now, the handler to tell.
    @inlinable
    @_spi(RoomLinkInternals) public mutating func cancel(
        _ handle: TimerHandle
    ) -> (TimerCancellation, TimerHandlerObject?) {
        guard let id = wheelID(handle) else { return (.notPending, nil) }
        if let record = queue.remove(id) {
            forgetRemote(record.remoteID)
            return (.cancelled, record.handler)
        }
        // Detached: the timer is due in the batch being fired, or firing right now.
        guard queue.isDetached(id), var record = queue.payload(id), !record.isCancelled, !record.isCancelRequested
        else { return (.notPending, nil) }
        if id == firing {
            // Its own handler (or one it calls) cancels it: a one-shot timer has had its outcome; a periodic one
            // stops, and `endFiring` tells the handler once the current firing returns.
            guard record.period > 0 else { return (.notPending, nil) }
            record.isCancelRequested = true
            queue.setPayload(id, record)
            return (.cancelled, nil)
        }
        // Due but not fired yet (an earlier timer of the same batch cancels it): it will not fire.
        record.isCancelled = true
        queue.setPayload(id, record)
        return (.cancelled, record.handler)
    }

    // MARK: - Firing

    /// The handler and handle to call for a due (detached) timer; `nil` if it was cancelled while it waited in
    /// its batch (the timer is then freed). Pair every non-nil answer with ``endFiring(_:now:)``.
    @inlinable
    @_spi(RoomLinkInternals) public mutating func beginFiring(_ id: TimerQueueID) -> (TimerHandlerObject, TimerHandle)?
    {
        guard queue.isDetached(id) else { return nil }
        // Read the record in place: copying it would retain and release its handler once more per firing.
        guard let (cancelled, handler, remoteID) = queue.withPayload(id, { ($0.isCancelled, $0.handler, $0.remoteID) })
        else { return nil }
        if cancelled {
            queue.free(id)
            forgetRemote(remoteID)
            return nil
        }
        firing = id
        return (handler, TimerHandle(rawValue: remoteID != 0 ? remoteID : id.rawValue))
    }

    /// The first word of a due timer's handler existential: the address of its object (or of its box) when the
    /// handler is a class instance (or a value too big to store inline), for a loop to prefetch before the timer
    /// fires; 0 when the timer is gone. Not an address to dereference: for a small value-type handler it is the
    /// value's inline bits (for an empty one, whatever the container holds), which a prefetch may be given safely.
    @inlinable
    @_spi(RoomLinkInternals) public mutating func handlerWord(_ id: TimerQueueID) -> UInt {
        // Read the container through the record, a concrete struct. `withUnsafeBytes(of: &record.handler)` would
        // not do: Swift 6 opens an existential passed to a generic parameter, so the buffer is the *handler's own*
        // value — zero bytes for an empty struct such as a stall watch, and loading a word from it trapped
        // ("UnsafeRawBufferPointer.load out of bounds") whenever such a timer was due four places down a batch.
        queue.withPayload(id) { record in
            withUnsafeBytes(of: &record) { $0.load(fromByteOffset: TimerRecord.handlerOffset, as: UInt.self) }
        } ?? 0
    }

    /// Finishes a firing: re-arms a periodic timer on its absolute schedule (skipping periods that have wholly
    /// passed by `now`, real time), or frees the timer. Returns the handler to tell of a cancellation requested
    /// during the firing.
    @inlinable
    @_spi(RoomLinkInternals) public mutating func endFiring(
        _ id: TimerQueueID,
        now: UInt64
    ) -> (TimerHandlerObject, TimerHandle)? {
        firing = nil
        guard queue.isDetached(id) else { return nil }
        let nowScenario = scenarioNanoseconds(now)
        // In place: the next deadline of a periodic timer, or nil for one that ends (one-shot, or cancelled).
        guard
            let (next, cancelRequested, remoteID) = queue.withPayload(
                id,
                { record -> (Int64?, Bool, UInt64) in
                    guard record.period > 0, !record.isCancelRequested else {
                        return (nil, record.isCancelRequested, record.remoteID)
                    }
                    var next = record.deadline &+ record.period
                    if next <= nowScenario {
                        let missed = (nowScenario - next) / record.period + 1
                        next = next &+ missed &* record.period
                    }
                    record.deadline = next
                    return (next, false, record.remoteID)
                }
            )
        else { return nil }
        if let next {
            queue.reschedule(id, deadline: realNanoseconds(next))
            return nil
        }
        guard let record = queue.free(id) else { return nil }
        forgetRemote(remoteID)
        return cancelRequested ? (record.handler, handle(for: record, id)) : nil
    }

    /// Removes every timer and returns the handlers to tell of their cancellation, in deadline order.
    /// Returns a timer that was handed out as due but not fired (it lies past a simulation's horizon) to the queue,
    /// at its deadline; one cancelled meanwhile is freed instead.
    @inlinable
    @_spi(RoomLinkInternals) public mutating func putBack(_ id: TimerQueueID) {
        guard queue.isDetached(id), let record = queue.payload(id) else { return }
        if record.isCancelled {
            queue.free(id)
            forgetRemote(record.remoteID)
            return
        }
        queue.reschedule(id, deadline: realNanoseconds(record.deadline))
    }

    @inlinable
    @_spi(RoomLinkInternals) public mutating func removeAll() -> [(TimerHandlerObject, TimerHandle)] {
        remoteIDs.removeAll()
        return queue.removeAll().filter { !$0.1.isCancelled }.map { ($0.1.handler, handle(for: $0.1, $0.0)) }
    }

    /// Drops the mapping of a handle given out off-thread; local timers have none (and skip the hashing).
    @inlinable
    @_spi(RoomLinkInternals) public mutating func forgetRemote(_ remoteID: UInt64) {
        if remoteID != 0 { remoteIDs.removeValue(forKey: remoteID) }
    }

    @inlinable
    @_spi(RoomLinkInternals) public func wheelID(_ handle: TimerHandle) -> TimerQueueID? {
        if RemoteTimerIDs.isRemote(handle.rawValue) { return remoteIDs[handle.rawValue] }
        return TimerQueueID(rawValue: handle.rawValue)
    }
}

extension TimerTable where Queue == TimerWheel<TimerRecord> {
    /// Arms a one-shot timer with a sequence number taken earlier (``TimerWheel/takeSequences(_:)``), and returns its
    /// handle.
    @inlinable
    @_spi(RoomLinkInternals) public mutating func arm(
        deadline: RuntimeInstant,
        handler: TimerHandlerObject,
        sequence: UInt64
    ) -> TimerHandle {
        let record = TimerRecord(handler: handler, deadline: deadline.nanoseconds, period: 0, remoteID: 0)
        let id = queue.insert(deadline: realNanoseconds(deadline.nanoseconds), payload: record, sequence: sequence)
        return handle(for: record, id)
    }

    /// Real time (nanoseconds) of the next thing the owner must do (``expire(at:into:)``), or `nil` when idle.
    @inlinable
    @_spi(RoomLinkInternals) public var nextRealDeadline: UInt64? { queue.nextDeadline() }

    /// Whether timers armed for the current tick wait to be expired (no scan of the wheel).
    @inlinable
    @_spi(RoomLinkInternals) public var hasOverdue: Bool { queue.hasOverdue }

    /// Moves to real time `now` and appends every due timer to `due`, in deadline order.
    @inlinable
    @_spi(RoomLinkInternals) public mutating func expire(
        at now: UInt64,
        into due: inout [TimerWheel<TimerRecord>.Expired]
    ) {
        queue.advance(to: now, into: &due)
    }
}
