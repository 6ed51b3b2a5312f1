internal import CLibevent
import DequeModule
@_spi(RoomLinkInternals) public import RoomLinkRuntime

/// One libevent `event_base` on its own thread: a serial executor for actors and a timer service whose timers
/// fire on that same thread.
///
/// Jobs enqueued from the loop's own thread go to a local queue with no lock; jobs and timers from other threads
/// go through a locked inbox and one "doorbell" event. Timers live in a ``TimerBackend`` (by default a timing
/// wheel driven by one libevent timer), and every callback ends by running the jobs it made runnable, so an actor
/// pinned here that arms a timer is called back on this thread with no hop.
///
/// Create loops through ``LibeventLoopGroup``.
public final class LibeventLoop: RuntimeLoop, @unchecked Sendable {
    // Safe: the `var`s below are touched only on the loop thread (every path to them is a libevent callback on
    // that thread, or a method that checks `isInServiceThread` first), except `shared` (a pthread mutex box)
    // and the immutable `let`s; `base` is freed on the loop thread only after `shared.isShutdown` is set under
    // the lock, after which no other thread touches libevent.

    /// The backend this loop's timers use.
    public let timerBackend: TimerBackend
    /// `timerBackend == .wheel`, checked first on every arm and cancel.
    private let usesWheel: Bool
    /// This loop's position in its group.
    public let index: Int

    private let base: OpaquePointer
    private let epoch: UInt64
    private let timeScale: TimeScale
    private let remoteIDs = RemoteTimerIDs()
    private let shared = LockedBox(Inbox())
    private var doorbell: OpaquePointer?
    private var driver: OpaquePointer?
    private var resume: OpaquePointer?
    private var thread: ServiceThread!

    private var runQueue = Deque<UnownedJob>()
    private var wheelTimers: TimerTable<TimerWheel<TimerRecord>>
    private var eventTimers: TimerTable<LibeventTimerQueue>?
    // The next three are touched once or twice per timer fired and unchecked for exclusivity (the runtime's check
    // cost 1 % of a million-client run): each access is a single read, write or append on the loop's thread that
    // returns before any handler runs, so none can overlap another.
    @exclusivity(unchecked) private var dueBuffer: [TimerWheel<TimerRecord>.Expired] = []
    /// How late each timer of the batch being fired ran (real nanoseconds), handed to ``lateness`` once per batch.
    @exclusivity(unchecked) private var latenessBuffer: [Int64] = []
    /// How late this loop's timers ran, from their deadline to their handler's call, in real time; and the most
    /// any ran late since ``takeLatenessPeak()`` last asked (real nanoseconds).
    private let lateness = LockedBox((recorder: LatencyRecorder(), peak: Int64(0)))
    /// The real-time deadline of the timer whose handler is running, if one is.
    @exclusivity(unchecked) private var firingDeadline: UInt64?
    private var armedDriverDeadline: UInt64?
    private var isStopped = false
    private var inSocketCallback = false
    /// What asked to run once the current callback's jobs have (``atCallbackEnd(_:)``), in the order asked.
    private var callbackEndWork: [any CallbackEndWork] = []
    private var callbackEndSpare: [any CallbackEndWork] = []

    /// How many jobs one callback runs before it yields to libevent (timers and the inbox) and resumes.
    private static var jobBudget: Int { 4096 }

    private struct Inbox {
        var messages: [LoopMessage] = []
        var isRung = false
        var isShutdown = false
    }

    init(index: Int, epoch: UInt64, configuration: LibeventLoopGroup.Configuration) throws(RuntimeError) {
        try Libevent.prepare()
        self.index = index
        self.epoch = epoch
        self.timerBackend = configuration.timerBackend
        self.usesWheel = configuration.timerBackend == .wheel
        self.timeScale = TimeScale(configuration.timeScale)
        let config = try Libevent.unwrap("event_config_new", event_config_new())
        defer { event_config_free(config) }
        if configuration.usesPreciseTimer {
            try Libevent.check(
                "event_config_set_flag(PRECISE_TIMER)",
                event_config_set_flag(config, Int32(EVENT_BASE_FLAG_PRECISE_TIMER.rawValue))
            )
        }
        base = try Libevent.unwrap("event_base_new_with_config", event_base_new_with_config(config))
        let now = Libevent.monotonicNanoseconds() &- epoch
        wheelTimers = TimerTable(
            queue: TimerWheel(tickShift: configuration.wheelTickShift, start: now),
            timeScale: timeScale
        )

        // The events carry this loop unretained: they are freed on the loop thread before the loop can go away
        // (the thread's closure holds the loop until then).
        let context = Unmanaged.passUnretained(self).toOpaque()
        do {
            doorbell = try Libevent.unwrap("event_new(doorbell)", event_new(base, -1, 0, loopDoorbellCallback, context))
            driver = try Libevent.unwrap("event_new(driver)", event_new(base, -1, 0, loopDriverCallback, context))
            resume = try Libevent.unwrap("event_new(resume)", event_new(base, -1, 0, loopResumeCallback, context))
        } catch {
            freeLibevent()
            throw error
        }
        if !usesWheel {
            eventTimers = TimerTable(
                queue: LibeventTimerQueue(
                    base: base,
                    epoch: epoch,
                    usesCommonTimeouts: timerBackend == .libeventCommonTimeout,
                    callback: loopEventTimerCallback,
                    callbackArgument: context
                ),
                timeScale: timeScale
            )
        }
        do {
            thread = try ServiceThread.start(name: "roomlink-loop-\(index)") { [self] in threadMain() }
        } catch {
            freeLibevent()
            throw error
        }
    }

    // MARK: - TimerService

    public var now: RuntimeInstant {
        RuntimeInstant(nanoseconds: timeScale.scenario(realNow()))
    }

    public var isInServiceThread: Bool { thread.isCurrent }

    public func scheduleTimer(
        at deadline: RuntimeInstant,
        period: Duration?,
        handler: some TimerHandler
    )
        throws(RuntimeError) -> TimerHandle
    {
        if let period, period <= .zero { throw .invalidPeriod(period) }
        if isInServiceThread {
            if isStopped { throw .loopShutDown("loop \(index)") }
            return armHere(deadline: deadline, period: period, handler: TimerHandlers.object(handler), remoteID: nil)
        }
        let remoteID = remoteIDs.next()
        guard send(.arm(remoteID: remoteID, deadline: deadline, period: period, handler: TimerHandlers.object(handler)))
        else {
            throw .loopShutDown("loop \(index)")
        }
        return TimerHandle(rawValue: remoteID)
    }

    @discardableResult
    public func cancel(_ timer: TimerHandle) -> TimerCancellation {
        guard isInServiceThread else {
            return send(.cancel(timer)) ? .requested : .notPending
        }
        // A handle given out off-thread whose arm message is still in the inbox: take the inbox first, so the
        // cancel finds the timer instead of answering `.notPending` and letting it fire later.
        if usesWheel ? wheelTimers.isUnknownRemote(timer) : eventTimers!.isUnknownRemote(timer) { takeInbox() }
        return cancelHere(timer)
    }

    /// Timers waiting on this loop. Call on the loop thread.
    public var pendingTimerCount: Int {
        precondition(isInServiceThread, "pendingTimerCount is read on the loop's thread")
        return eventTimers?.count ?? wheelTimers.count
    }

    // MARK: - Executor

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if isInServiceThread {
            runQueue.append(job)
        } else if !send(.job(job)) {
            RetiredExecutor.shared.run(job, on: self)
        }
    }

    /// Runs `body` on the loop thread: at once (synchronously) when called there, otherwise as soon as the loop
    /// takes its inbox.
    public func execute(_ body: @escaping @Sendable () -> Void) {
        if isInServiceThread {
            body()
        } else {
            Task(executorPreference: self) { body() }
        }
    }

    public func checkIsolated() {
        precondition(isInServiceThread, "expected to run on libevent loop \(index)'s thread")
    }

    // MARK: - Shutdown

    /// Stops the loop: pending timers are cancelled (their handlers told), jobs already sent run, the thread
    /// ends. Waits for the thread unless called on it. Later timers throw ``RuntimeError/Code/loopShutDown``.
    func shutdown() {
        shared.withLock { inbox in
            guard !inbox.isShutdown else { return }
            inbox.isShutdown = true
            ringIfNeeded(&inbox)
        }
        if isInServiceThread {
            stopOnThread()
        }
        thread.join()
    }

    // MARK: - Loop thread

    /// Arms a timer in this backend's table. Call on the loop thread.
    private func armHere(
        deadline: RuntimeInstant,
        period: Duration?,
        handler: TimerHandlerObject,
        remoteID: UInt64?
    ) -> TimerHandle {
        if usesWheel {
            return wheelTimers.arm(deadline: deadline, period: period, handler: handler, remoteID: remoteID)
        }
        return eventTimers!.arm(deadline: deadline, period: period, handler: handler, remoteID: remoteID)
    }

    /// Cancels a timer in this backend's table and tells its handler. Call on the loop thread; it never takes the
    /// inbox, so `takeInbox` can use it without reordering messages.
    private func cancelHere(_ timer: TimerHandle) -> TimerCancellation {
        let (outcome, handler) = usesWheel ? wheelTimers.cancel(timer) : eventTimers!.cancel(timer)
        handler?.timerCancelled(timer)
        return outcome
    }

    private func realNow() -> UInt64 {
        Libevent.monotonicNanoseconds() &- epoch
    }

    private func send(_ message: LoopMessage) -> Bool {
        shared.withLock { inbox in
            guard !inbox.isShutdown else { return false }
            inbox.messages.append(message)
            ringIfNeeded(&inbox)
            return true
        }
    }

    /// Rings the doorbell once per batch. Called with the inbox locked, so that the loop cannot free its base
    /// between a producer's check of `isShutdown` and its `event_active`.
    private func ringIfNeeded(_ inbox: inout Inbox) {
        guard !inbox.isRung else { return }
        inbox.isRung = true
        event_active(doorbell, 0, 0)
    }

    private func threadMain() {
        event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY)
        freeLibevent()
    }

    private func takeInbox() {
        let messages = shared.withLock { inbox -> [LoopMessage] in
            inbox.isRung = false
            defer { inbox.messages.removeAll(keepingCapacity: true) }
            return inbox.messages
        }
        for message in messages {
            switch message {
            case .job(let job):
                runQueue.append(job)
            case .arm(let remoteID, let deadline, let period, let handler):
                if isStopped {
                    handler.timerCancelled(TimerHandle(rawValue: remoteID))
                } else {
                    _ = armHere(deadline: deadline, period: period, handler: handler, remoteID: remoteID)
                }
            case .cancel(let handle):
                _ = cancelHere(handle)
            }
        }
    }

    /// Every libevent callback of this loop begins here (see ``LibeventTimerQueue/beginPass(now:)``). The wheel needs
    /// nothing: its deadlines are absolute and its clock moves only when it expires timers.
    @inline(__always)
    private func beginCallback() {
        if eventTimers != nil { eventTimers!.queue.beginPass(now: realNow()) }
    }

    fileprivate func doorbellRang() {
        beginCallback()
        takeInbox()
        if shared.withLock({ $0.isShutdown }) {
            stopOnThread()
            return
        }
        finishCallback()
    }

    /// How many timers ahead of the one firing `driverFired` prefetches the handler of, and how many cache lines of
    /// it (an actor's hot fields span a few).
    private static let prefetchDistance = 4
    private static let prefetchLines = 4

    fileprivate func driverFired() {
        armedDriverDeadline = nil
        let now = realNow()
        dueBuffer.removeAll(keepingCapacity: true)
        wheelTimers.expire(at: now, into: &dueBuffer)
        for index in dueBuffer.indices {
            // A million clients' objects do not fit in any cache: start loading the handler a few timers ahead, so
            // that its lines arrive while the ones before it run instead of when it fires.
            if index + Self.prefetchDistance < dueBuffer.count {
                let word = wheelTimers.handlerWord(dueBuffer[index + Self.prefetchDistance].id)
                if let address = UnsafeRawPointer(bitPattern: word) {
                    prefetchCacheLines(at: address, lines: Self.prefetchLines)
                }
            }
            let due = dueBuffer[index]
            guard let (handler, handle) = wheelTimers.beginFiring(due.id) else { continue }
            // Read the clock per timer: a timer late because the ones before it in the batch ran long is late.
            latenessBuffer.append(Int64(bitPattern: realNow() &- due.deadline))
            firingDeadline = due.deadline
            handler.timerFired(handle)
            firingDeadline = nil
            if let (handler, handle) = wheelTimers.endFiring(due.id, now: now) { handler.timerCancelled(handle) }
        }
        recordLateness()
        finishCallback()
    }

    fileprivate func eventTimerFired(slot: Int) {
        beginCallback()
        let now = realNow()
        guard let id = eventTimers?.queue.eventFired(slot: slot, now: now),
            let deadline = eventTimers?.queue.deadline(of: id),
            let (handler, handle) = eventTimers?.beginFiring(id)
        else { return }
        latenessBuffer.append(Int64(bitPattern: now &- deadline))
        recordLateness()
        firingDeadline = deadline
        handler.timerFired(handle)
        firingDeadline = nil
        if let (handler, handle) = eventTimers!.endFiring(id, now: now) { handler.timerCancelled(handle) }
        finishCallback()
    }

    // MARK: - For libevent's other users in RoomLink (sockets, HTTP)

    /// The loop's `event_base`, for sockets, listeners and HTTP served on this loop: create and free what uses it
    /// on the loop's thread only, and before the group shuts down.
    @_spi(RoomLinkInternals) public var eventBase: OpaquePointer { base }

    /// Runs `body` as a callback of this loop: every libevent callback RoomLink registers on ``eventBase`` calls it,
    /// so that the jobs its body makes runnable (an actor pinned here, a timer armed) run before libevent waits
    /// again. Called on the loop's thread.
    @_spi(RoomLinkInternals) public func runCallback(_ body: () -> Void) {
        // A callback inside a callback (libevent calling back synchronously) runs its body only: jobs run once, by
        // the outermost, never while an actor's job is still on the stack.
        guard !inSocketCallback else { return body() }
        inSocketCallback = true
        beginCallback()
        body()
        inSocketCallback = false
        finishCallback()
    }

    public var firingLateness: Duration? {
        firingDeadline.map { .nanoseconds(Int64(bitPattern: realNow() &- $0)) }
    }

    public func runAsFiring(deadline: RuntimeInstant, _ body: () -> Void) {
        let outer = firingDeadline
        firingDeadline = wheelTimers.realNanoseconds(deadline.nanoseconds)
        defer { firingDeadline = outer }
        body()
    }

    /// Moves the batch's lateness into the shared recorder: one lock per batch, not per timer.
    private func recordLateness() {
        guard !latenessBuffer.isEmpty else { return }
        lateness.withLock { lateness in
            for value in latenessBuffer {
                lateness.recorder.record(nanoseconds: value)
                lateness.peak = max(lateness.peak, value)
            }
        }
        latenessBuffer.removeAll(keepingCapacity: true)
    }

    /// How late this loop's timers have run (real time from each deadline to its handler's call) since it started
    /// or since ``resetTimerLateness()``. Safe from any thread.
    public var timerLateness: LatencyRecorder { lateness.withLock { $0.recorder.snapshot() } }

    /// Forgets the lateness recorded so far (to measure a steady state after a warm-up).
    public func resetTimerLateness() {
        lateness.withLock { $0.recorder = LatencyRecorder() }
    }

    /// The most a timer of this loop ran late (real time) since the previous call, and starts over: a progress
    /// display's "how far behind is it now". Safe from any thread.
    public func takeLatenessPeak() -> Duration {
        .nanoseconds(
            lateness.withLock { lateness in
                defer { lateness.peak = 0 }
                return lateness.peak
            }
        )
    }

    /// The jobs left over by a callback that ran out of budget carry on here.
    fileprivate func resumed() {
        beginCallback()
        finishCallback()
    }

    fileprivate func finishCallback() {
        runJobs()
        // What the callback and its jobs left to do at their end (a connection's frames, written together); it may
        // make jobs runnable, and those may leave more.
        while !callbackEndWork.isEmpty {
            swap(&callbackEndWork, &callbackEndSpare)
            for work in callbackEndSpare { work.callbackEnded() }
            callbackEndSpare.removeAll(keepingCapacity: true)
            runJobs()
        }
        armDriver()
    }

    /// Runs `work` once the current callback of this loop — a socket's, a timer batch's, the inbox's — and the jobs
    /// it made runnable have run, before libevent waits again: where a connection writes together the frames that
    /// one turn of the loop produced for it. Call on the loop's thread, from within a callback (every callback
    /// RoomLink registers on ``eventBase`` runs in ``runCallback(_:)``, whose end runs it).
    @_spi(RoomLinkInternals) public func atCallbackEnd(_ work: any CallbackEndWork) {
        callbackEndWork.append(work)
    }

    private func runJobs() {
        guard !runQueue.isEmpty else { return }
        var budget = Self.jobBudget
        while let job = runQueue.popFirst() {
            runSynchronously(job)
            budget -= 1
            if budget == 0, !runQueue.isEmpty {
                // Let timers and the inbox in, then carry on from the resume event.
                event_active(resume, 0, 0)
                return
            }
        }
    }

    /// Arms the wheel's one libevent timer for the wheel's next expiry, if that changed.
    private func armDriver() {
        guard usesWheel, !isStopped else { return }
        let next = wheelTimers.nextRealDeadline
        guard next != armedDriverDeadline else { return }
        armedDriverDeadline = next
        guard let next else {
            event_del(driver)
            return
        }
        let now = realNow()
        var timeout = Libevent.timeval(nanoseconds: next > now ? next - now : 0)
        // libevent adds the delay to the time it cached at the start of this loop pass; refresh it so a timer
        // armed late in a long callback does not fire early.
        event_base_update_cache_time(base)
        event_add(driver, &timeout)
    }

    private func stopOnThread() {
        guard !isStopped else { return }
        isStopped = true
        event_del(driver)
        let cancelled = usesWheel ? wheelTimers.removeAll() : eventTimers!.removeAll()
        for (handler, handle) in cancelled { handler.timerCancelled(handle) }
        // Run what was already sent, so no task awaiting an actor here hangs; later jobs go to the retired
        // executor because `send` now refuses them.
        repeat {
            takeInbox()
            while let job = runQueue.popFirst() {
                runSynchronously(job)
            }
        } while shared.withLock({ !$0.messages.isEmpty })
        event_base_loopbreak(base)
    }

    private func freeLibevent() {
        eventTimers?.queue.freeEvents()
        for event in [doorbell, driver, resume] where event != nil { event_free(event) }
        doorbell = nil
        driver = nil
        resume = nil
        event_base_free(base)
    }
}

// Capture-free C callbacks; the argument is the loop, unretained (see `init`).

private func loopDoorbellCallback(_ fd: Int32, _ what: Int16, _ argument: UnsafeMutableRawPointer?) {
    Unmanaged<LibeventLoop>.fromOpaque(argument!).takeUnretainedValue().doorbellRang()
}

private func loopDriverCallback(_ fd: Int32, _ what: Int16, _ argument: UnsafeMutableRawPointer?) {
    Unmanaged<LibeventLoop>.fromOpaque(argument!).takeUnretainedValue().driverFired()
}

private func loopResumeCallback(_ fd: Int32, _ what: Int16, _ argument: UnsafeMutableRawPointer?) {
    Unmanaged<LibeventLoop>.fromOpaque(argument!).takeUnretainedValue().resumed()
}

private func loopEventTimerCallback(_ fd: Int32, _ what: Int16, _ argument: UnsafeMutableRawPointer?) {
    // `fd` is the timer's slot index (see LibeventTimerQueue).
    Unmanaged<LibeventLoop>.fromOpaque(argument!).takeUnretainedValue().eventTimerFired(slot: Int(fd))
}

/// Work a loop runs at the end of a callback (``LibeventLoop/atCallbackEnd(_:)``).
@_spi(RoomLinkInternals) public protocol CallbackEndWork: AnyObject {
    /// The callback that asked, and the jobs it made runnable, have run. Called on the loop's thread.
    func callbackEnded()
}
