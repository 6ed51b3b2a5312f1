import DequeModule
import Synchronization

/// A deterministic virtual-time runtime: one serial executor and one virtual clock for a whole simulation.
///
/// Every actor of a simulation is pinned to it and every task prefers it, so everything runs on its one thread
/// in a fixed order: jobs first-in first-out, timers in `(deadline, scheduling order)`. Virtual time jumps to the
/// next timer's exact deadline only when no job is runnable, so a 30-minute timeline takes as long as its work, not
/// its minutes.
/// The same code and the same ``seed`` give the same order of everything, and so the same event log.
///
/// ```swift
/// try await SimulationRuntime.withSimulation(seed: 42) { sim in
///     try await sim.run {
///         try await sim.sleep(for: .seconds(90))   // returns at once in wall time
///         return sim.now                            // 90 s
///     }
/// }
/// ```
///
/// - Important: Determinism holds for work that stays on the simulation: actors whose `unownedExecutor` is the
///   simulation, tasks started inside ``run(limit:_:)`` (structured children inherit the executor preference;
///   start unstructured ones with `Task(executorPreference: sim)`), and timers of this service. A body that awaits
///   something outside (a real sleep, another executor) sees virtual time race ahead, and if the simulation runs
///   out of work while the body still waits, ``run(limit:_:)`` throws ``RuntimeError/Code/simulationStalled``.
public final class SimulationRuntime: RuntimeLoop, RuntimeLoopGroup, @unchecked Sendable {
    // Safe: `runQueue`, `timers`, `dueBuffer`, `runState` and `isStopped` are touched only on `thread` (the simulation's
    // thread), as every access below checks or is reached from `threadMain`; cross-thread state is in `shared`
    // (a pthread mutex box) and `clock` (an atomic).

    /// The seed this simulation was created with.
    public let seed: UInt64

    private struct ActiveRun {
        var id: UInt64
        var continuation: CheckedContinuation<Void, any Error>
        var limit: Duration?
    }

    private struct Shared {
        var inbox: [LoopMessage] = []
        var isShutdown = false
        var isThreadWaiting = false
        var wakeups: UInt64 = 0
        var run: ActiveRun?
        var nextRunID: UInt64 = 0
    }

    private enum RunState {
        case idle
        /// The body is running; virtual time may advance up to `horizon` (nanoseconds).
        case running(id: UInt64, horizon: UInt64)
    }

    private let shared = LockedBox(Shared())
    private let clock = Atomic<Int64>(0)
    /// Timers fired so far (written on the service thread only; atomic so that any thread may read it).
    private let fired = Atomic<Int>(0)
    /// Set when `shared.inbox` may hold messages, so the thread skips the lock on every virtual instant when
    /// nothing arrived from outside (the common case: everything runs on the simulation).
    private let hasMail = Atomic<Bool>(false)
    private let remoteIDs = RemoteTimerIDs()
    private var thread: ServiceThread!
    // The state below is the simulation thread's alone, and `@exclusivity(unchecked)`: the runtime's check of each
    // access (a `swift_beginAccess` and its end) came to a dozen a message. The static checks still hold, and no
    // method here calls out — to a timer's handler, a lane, a job — while it holds an access to one of them (the
    // handler and the job run after `beginFiring`, `collect` and `popFirst` have returned).
    @exclusivity(unchecked) private var runQueue = Deque<UnownedJob>()
    @exclusivity(unchecked) private var timers = TimerTable(
        queue: TimerWheel<TimerRecord>(tickShift: SimulationRuntime.tickShift)
    )

    /// log2 of the wheel's tick in nanoseconds: ≈ 1 ms. The wheel only buckets timers by tick; inside a tick the
    /// simulation fires them one by one in `(deadline, scheduling order)` with the clock set to each exact
    /// deadline, and merges in the timers armed meanwhile for the same tick. So virtual time keeps nanosecond
    /// precision, while a heartbeat 30 s ahead is placed two wheel levels up instead of five (with 1 ns ticks) and
    /// a 50 ms message at level 0 — the cascades that dominated large simulations mostly disappear.
    static let tickShift: UInt64 = 20
    @exclusivity(unchecked) private var dueBuffer: [TimerWheel<TimerRecord>.Expired] = []
    /// The lanes items were added to (``SimulationLane``), by number: a lane's due items stand in the batch as
    /// expired timers whose ID is the lane's number with generation 0, which no wheel timer has.
    @exclusivity(unchecked) private var lanes: [LaneHooks] = []
    /// ``lanes``, unretained (`lanes` holds them): what the simulation calls a lane through. An element of an array of
    /// references is retained to be called, and so is the array's buffer to be read in place (`withUnsafeBufferPointer`)
    /// — six times a message; a trivial element is neither.
    @exclusivity(unchecked) private var laneRefs: [UnretainedReference<LaneHooks>] = []
    @exclusivity(unchecked) private var mergeBuffer: [TimerWheel<TimerRecord>.Expired] = []
    /// The lanes everyone who asks for one of an item type and a delay shares (``SimulationLane/shared(on:delay:make:)``):
    /// the simulation holds them, so they live as long as it does, and nothing holds the simulation weakly to find
    /// them — a weak reference gives an object a side table, and every retain and release of it then takes the
    /// runtime's slow path (a third of a million-client run's CPU went to the simulation's reference count).
    @exclusivity(unchecked) private var sharedLanes: [SharedLaneKey: AnyObject] = [:]
    /// Set when a tick's batch reached the running body's horizon: the timers past it were put back, and the run
    /// ends with its time limit.
    @exclusivity(unchecked) private var reachedHorizon = false
    /// Set on the simulation thread when it stops; read only there, so arming on the thread takes no lock.
    @exclusivity(unchecked) private var isStopped = false
    @exclusivity(unchecked) private var runState = RunState.idle
    /// A run whose body returned, resumed once the instant it ended at has been played out.
    @exclusivity(unchecked) private var finishedRun: ActiveRun?

    /// Creates a simulation whose random streams derive from `seed`, and starts its thread.
    ///
    /// Call ``shutdown()`` when done, or use ``withSimulation(seed:_:)``.
    public init(seed: UInt64 = 0) {
        self.seed = seed
        // One thread per simulation: failing to start it means the process is out of threads, which no caller
        // can recover from here.
        do {
            thread = try ServiceThread.start(name: "roomlink-sim") { [self] in threadMain() }
        } catch {
            fatalError("\(error)")
        }
    }

    /// Runs `body` with a new simulation and shuts it down afterwards.
    public static func withSimulation<T: Sendable>(
        seed: UInt64 = 0,
        _ body: (SimulationRuntime) async throws -> T
    ) async rethrows -> T {
        let simulation = SimulationRuntime(seed: seed)
        defer { simulation.shutdown() }
        return try await body(simulation)
    }

    /// A random generator for `stream`, derived from the simulation's seed.
    public func makeRandom(stream: UInt64 = 0) -> SeededRandom {
        SeededRandom(seed: seed, stream: stream)
    }

    // MARK: - RuntimeLoopGroup

    public var loops: [any RuntimeLoop] { [self] }

    // MARK: - Running

    /// Runs `body` on the simulation, letting virtual time advance while it runs, and returns its result.
    ///
    /// Time stands still between runs: timers due later wait for the next run, while jobs sent to the simulation
    /// (a call into one of its actors) still execute. State persists across runs, so a test can run a scenario in
    /// steps.
    ///
    /// - Parameters:
    ///   - limit: The most virtual time the body may take; `nil` for no limit.
    ///   - body: The work; it runs as a task that prefers the simulation's executor.
    /// - Throws: What `body` throws; ``RuntimeError/Code/simulationTimeLimit`` when `limit` passes first;
    ///   ``RuntimeError/Code/simulationStalled`` when the body waits on nothing the simulation can deliver.
    public func run<T: Sendable>(
        limit: Duration? = nil,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let result = LockedBox<Result<T, any Error>?>(nil)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let id = shared.withLock { shared -> UInt64? in
                guard shared.run == nil, !shared.isShutdown else { return nil }
                shared.nextRunID += 1
                shared.run = ActiveRun(id: shared.nextRunID, continuation: continuation, limit: limit)
                return shared.nextRunID
            }
            guard let id else {
                continuation.resume(
                    throwing: isShutdown ? RuntimeError.loopShutDown("the simulation") : .simulationBusy()
                )
                return
            }
            Task(executorPreference: self) {
                // The first job of the body runs on the simulation thread; only now may time advance, so the
                // moment a run starts is as deterministic as everything after it.
                self.beginRun(id)
                let outcome: Result<T, any Error>
                do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
                result.withLock { $0 = outcome }
                self.endRun(id)
            }
        }
        guard let outcome = result.withLock({ $0 }) else {
            preconditionFailure("simulation run ended without a result")
        }
        return try outcome.get()
    }

    /// Advances virtual time by `duration`, firing every timer due meanwhile.
    public func advance(by duration: Duration) async throws {
        guard duration >= .zero else { throw RuntimeError.invalidDelay(duration) }
        let deadline = now.advanced(by: duration)
        try await run { try await self.sleep(until: deadline) }
    }

    /// Stops the simulation thread. Pending timers are cancelled (their handlers are told); jobs already sent run
    /// first. Later timers throw ``RuntimeError/Code/loopShutDown``.
    public func shutdown() {
        shared.withLock {
            $0.isShutdown = true
            $0.wakeups &+= 1
        }
        shared.broadcast()
        thread.join()
    }

    private var isShutdown: Bool { shared.withLock { $0.isShutdown } }

    // MARK: - TimerService

    public var now: RuntimeInstant { RuntimeInstant(nanoseconds: clock.load(ordering: .acquiring)) }

    /// How many timers the simulation has fired: heartbeats, retries, deadlines and every message in flight (a
    /// simulated network delivers each message as a timer) — a count of the work a run did.
    public var firedTimerCount: Int { fired.load(ordering: .relaxed) }

    public var isInServiceThread: Bool { thread.isCurrent }

    // MARK: - Lanes

    /// What the simulation calls of a ``SimulationLane``: closures the lane compiles for its items.
    ///
    /// A class, so that the simulation can call its closures through a reference it does not retain (a closure read
    /// from an array of values is retained and released around every call: twice a message).
    @_spi(RoomLinkInternals) public final class LaneHooks {
        /// The deadline of the lane's first item, if it has one.
        let front: () -> UInt64?
        /// Appends every item due by the time given (nanoseconds) as an expired timer with the ID given.
        let collect: (UInt64, TimerQueueID, inout [TimerWheel<TimerRecord>.Expired]) -> Void
        /// Takes the first item out and hands it over.
        let fireFront: () -> Void
        /// Drops every item (the simulation shuts down).
        let dropAll: () -> Void

        @_spi(RoomLinkInternals) public init(
            front: @escaping () -> UInt64?,
            collect: @escaping (UInt64, TimerQueueID, inout [TimerWheel<TimerRecord>.Expired]) -> Void,
            fireFront: @escaping () -> Void,
            dropAll: @escaping () -> Void
        ) {
            self.front = front
            self.collect = collect
            self.fireFront = fireFront
            self.dropAll = dropAll
        }
    }

    /// The shortest delay of a lane, in nanoseconds: two ticks (see ``SimulationLane/minimumDelay``).
    static let laneMinimumDelay: UInt64 = 2 * tickNanoseconds

    /// Starts firing a lane's items. Call on the simulation's thread.
    @_spi(RoomLinkInternals) public func register(_ lane: LaneHooks) {
        precondition(isInServiceThread, "a lane registered off the simulation's thread")
        lanes.append(lane)
        laneRefs.append(UnretainedReference(lane))
    }

    /// What names a shared lane: its items' type and its delay.
    @_spi(RoomLinkInternals) public struct SharedLaneKey: Hashable {
        let item: ObjectIdentifier
        let delay: Duration

        @_spi(RoomLinkInternals) public init(item: ObjectIdentifier, delay: Duration) {
            self.item = item
            self.delay = delay
        }
    }

    /// The lane kept under `key`, made by `make` on first use (a `nil` from it is not kept). Call on the simulation's
    /// thread.
    @_spi(RoomLinkInternals) public func sharedLane(_ key: SharedLaneKey, make: () -> AnyObject?) -> AnyObject? {
        precondition(isInServiceThread, "a shared lane asked for off the simulation's thread")
        if let lane = sharedLanes[key] { return lane }
        guard let lane = make() else { return nil }
        sharedLanes[key] = lane
        return lane
    }

    /// The sequence number a timer armed now would take: a lane's item takes it instead, and so comes out where
    /// that timer would have fired. Call on the simulation's thread.
    @_spi(RoomLinkInternals) public func takeSequence() -> UInt64 {
        timers.queue.takeSequence()
    }

    /// Takes `count` sequence numbers at once, and returns the first: the places `count` timers armed one after
    /// another now would take among timers of one deadline. Arm them later with ``schedule(at:sequence:handler:)``
    /// — one at a time, as each is due to be known — and they fire exactly where they would have. Call on the
    /// simulation's thread.
    @_spi(RoomLinkInternals) public func reserveSequences(_ count: Int) -> UInt64 {
        precondition(isInServiceThread, "sequence numbers reserved off the simulation's thread")
        return timers.queue.takeSequences(count)
    }

    /// Arms a one-shot timer at `deadline` in a place reserved earlier (``reserveSequences(_:)``). Call on the
    /// simulation's thread, before the deadline's tick has fired.
    @_spi(RoomLinkInternals) public func schedule(
        at deadline: RuntimeInstant,
        sequence: UInt64,
        handler: some TimerHandler
    ) throws(RuntimeError) -> TimerHandle {
        precondition(isInServiceThread, "a timer armed in a reserved place off the simulation's thread")
        if isStopped { throw .loopShutDown("the simulation") }
        return timers.arm(deadline: deadline, handler: TimerHandlers.object(handler), sequence: sequence)
    }

    /// The real time (nanoseconds) of the next tick with something due: a wheel timer's, or a lane item's (rounded
    /// up to its tick's end, as the wheel hands out a timer).
    private var nextDeadline: UInt64? {
        var next = timers.nextRealDeadline
        for index in laneRefs.indices {
            guard let front = laneRefs[index].withObject({ $0.front() }) else { continue }
            let (rounded, overflow) = front.addingReportingOverflow(Self.tickNanoseconds - 1)
            let end = overflow ? .max : (rounded >> Self.tickShift) << Self.tickShift
            next = min(next ?? end, end)
        }
        return next
    }

    public func scheduleTimer(
        at deadline: RuntimeInstant,
        period: Duration?,
        handler: some TimerHandler
    )
        throws(RuntimeError) -> TimerHandle
    {
        if let period, period <= .zero { throw .invalidPeriod(period) }
        if isInServiceThread {
            if isStopped { throw .loopShutDown("the simulation") }
            return timers.arm(deadline: deadline, period: period, handler: TimerHandlers.object(handler))
        }
        let remoteID = remoteIDs.next()
        guard send(.arm(remoteID: remoteID, deadline: deadline, period: period, handler: TimerHandlers.object(handler)))
        else {
            throw .loopShutDown("the simulation")
        }
        return TimerHandle(rawValue: remoteID)
    }

    @discardableResult
    public func cancel(_ timer: TimerHandle) -> TimerCancellation {
        guard isInServiceThread else {
            return send(.cancel(timer)) ? .requested : .notPending
        }
        if timers.isUnknownRemote(timer) { takeInbox() }
        let (outcome, handler) = timers.cancel(timer)
        handler?.timerCancelled(timer)
        return outcome
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

    public func checkIsolated() {
        precondition(isInServiceThread, "expected to run on the simulation's thread")
    }

    // MARK: - The simulation thread

    /// Sends a message to the simulation thread; false after shutdown.
    private func send(_ message: LoopMessage) -> Bool {
        let wake = shared.withLock { shared -> Bool? in
            guard !shared.isShutdown else { return nil }
            shared.inbox.append(message)
            hasMail.store(true, ordering: .releasing)
            shared.wakeups &+= 1
            return shared.isThreadWaiting
        }
        guard let wake else { return false }
        if wake { shared.broadcast() }
        return true
    }

    private func takeInbox() {
        guard hasMail.load(ordering: .acquiring) else { return }
        let messages = shared.withLock { shared -> [LoopMessage] in
            hasMail.store(false, ordering: .relaxed)
            defer { shared.inbox.removeAll(keepingCapacity: true) }
            return shared.inbox
        }
        for message in messages {
            switch message {
            case .job(let job):
                runQueue.append(job)
            case .arm(let remoteID, let deadline, let period, let handler):
                _ = timers.arm(deadline: deadline, period: period, handler: handler, remoteID: remoteID)
            case .cancel(let handle):
                let (_, handler) = timers.cancel(handle)
                handler?.timerCancelled(handle)
            }
        }
    }

    private enum Step {
        case work
        case advance(UInt64)
        case wait(UInt64)
        case stalled(ActiveRun)
        case timeLimit(ActiveRun, UInt64)
        case exit
    }

    private func threadMain() {
        while true {
            takeInbox()
            if !runQueue.isEmpty {
                while let job = runQueue.popFirst() {
                    runSynchronously(job)
                }
                continue
            }
            if let run = finishedRun {
                // The body's value or error travels in `run`'s result box.
                finishedRun = nil
                run.continuation.resume()
                continue
            }
            switch nextStep() {
            case .work:
                continue
            case .advance(let time):
                fireTimers(at: time)
            case .wait(let seen):
                shared.wait(until: { $0.wakeups != seen }, then: { $0.isThreadWaiting = false })
            case .stalled(let run):
                runState = .idle
                run.continuation.resume(throwing: RuntimeError.simulationStalled(at: now))
            case .timeLimit(let run, let horizon):
                runState = .idle
                // Virtual time did reach the limit, even though no timer was due there.
                clock.store(Int64(clamping: horizon), ordering: .releasing)
                let limit = RuntimeInstant(nanoseconds: Int64(clamping: horizon))
                run.continuation.resume(throwing: RuntimeError.simulationTimeLimit(limit))
            case .exit:
                shutDownOnThread()
                return
            }
        }
    }

    private func nextStep() -> Step {
        // The wheel names the end of the next tick that holds timers; the earliest of them may be due as early as
        // just after the previous tick's end.
        let next = nextDeadline
        let earliest = next.map { $0 >= Self.tickNanoseconds ? $0 - Self.tickNanoseconds + 1 : 0 }
        // Fast path, no lock: a run is going, its next timer may be within the horizon, and no mail is waiting.
        if case .running(_, let horizon) = runState, !reachedHorizon, let next, let earliest, earliest <= horizon,
            !hasMail.load(ordering: .acquiring)
        {
            return .advance(next)
        }
        return shared.withLock { shared -> Step in
            if !shared.inbox.isEmpty { return .work }
            if shared.isShutdown { return .exit }
            if case .running(let id, let horizon) = runState, let run = shared.run, run.id == id {
                if !reachedHorizon, let next, let earliest, earliest <= horizon { return .advance(next) }
                reachedHorizon = false
                shared.run = nil
                return next == nil ? .stalled(run) : .timeLimit(run, horizon)
            }
            shared.isThreadWaiting = true
            return .wait(shared.wakeups)
        }
    }

    private static let tickNanoseconds: UInt64 = 1 << tickShift

    /// Fires the timers of the tick ending at `time`, one by one in `(deadline, scheduling order)`, each at its own
    /// deadline; timers armed meanwhile for the same tick join the batch in order. Timers due after the running
    /// body's horizon are put back, and the run is marked as having reached it.
    private func fireTimers(at time: UInt64) {
        let horizon: UInt64 = if case .running(_, let horizon) = runState { horizon } else { .max }
        dueBuffer.removeAll(keepingCapacity: true)
        timers.expire(at: time, into: &dueBuffer)
        if !lanes.isEmpty {
            let fromWheel = dueBuffer.count
            for number in laneRefs.indices {
                laneRefs[number].withObject {
                    $0.collect(time, TimerQueueID(rawValue: UInt64(number)), &dueBuffer)
                }
            }
            if dueBuffer.count > fromWheel, fromWheel > 0 || lanes.count > 1 {
                dueBuffer.sort { ($0.deadline, $0.sequence) < ($1.deadline, $1.sequence) }
            }
        }
        var index = 0
        while index < dueBuffer.count {
            prefetchAhead(of: index)
            let due = dueBuffer[index]
            if due.deadline > horizon {
                for rest in dueBuffer[index...] { timers.putBack(rest.id) }
                reachedHorizon = true
                return
            }
            index += 1
            let now = max(UInt64(clamping: clock.load(ordering: .relaxed)), due.deadline)
            clock.store(Int64(clamping: now), ordering: .releasing)
            if due.id.generation == 0 {
                // A lane's first item (the lane's items come in its order).
                fired.wrappingAdd(1, ordering: .relaxed)
                laneRefs[Int(due.id.rawValue)].withObject { $0.fireFront() }
            } else {
                guard let (handler, handle) = timers.beginFiring(due.id) else { continue }
                fired.wrappingAdd(1, ordering: .relaxed)
                handler.timerFired(handle)
                if let (handler, handle) = timers.endFiring(due.id, now: now) { handler.timerCancelled(handle) }
            }
            // Run what this firing made runnable before the next timer, as a real loop would.
            while !runQueue.isEmpty, let job = runQueue.popFirst() {
                runSynchronously(job)
            }
            // The run ended (its body returned at this instant): the instant's other timers still fire, then time
            // stands still until the next run — the batch's later timers wait for it, and the caller resumes only
            // after this (see `endRun`), so it never reads results while timers of the run still fire.
            if case .idle = runState, index < dueBuffer.count, dueBuffer[index].deadline > now {
                for rest in dueBuffer[index...] { timers.putBack(rest.id) }
                return
            }
            // Timers armed meanwhile for this tick wait in the wheel's overdue bucket: merge them into the batch.
            if timers.hasOverdue {
                mergeBuffer.removeAll(keepingCapacity: true)
                timers.expire(at: time, into: &mergeBuffer)
                dueBuffer.append(contentsOf: mergeBuffer)
                dueBuffer[index...].sort { ($0.deadline, $0.sequence) < ($1.deadline, $1.sequence) }
            }
        }
    }

    /// How many timers ahead of the one firing the simulation starts loading a wheel timer's entry, and how many
    /// ahead it starts loading its handler (read from the entry, whose lines have had that many firings' time to
    /// arrive). A lane's items load their own receivers (``SimulationLane``).
    private static let entryPrefetchDistance = 8
    private static let handlerPrefetchDistance = 4
    /// How many cache lines of a handler: what a client's timer reads of it (its state, as a lane's delivery does).
    private static let handlerPrefetchLines = 8

    /// Starts loading what the wheel timers a few places down the batch will touch when they fire: the storm's
    /// retries of millions of clients, each a timer whose entry and client are in no cache.
    @inline(__always)
    private func prefetchAhead(of index: Int) {
        let entry = index + Self.entryPrefetchDistance
        if entry < dueBuffer.count, dueBuffer[entry].id.generation != 0 {
            timers.queue.prefetchEntry(dueBuffer[entry].id)
        }
        let handler = index + Self.handlerPrefetchDistance
        if handler < dueBuffer.count, dueBuffer[handler].id.generation != 0,
            let address = UnsafeRawPointer(bitPattern: timers.handlerWord(dueBuffer[handler].id))
        {
            prefetchCacheLines(at: address, lines: Self.handlerPrefetchLines)
        }
    }

    private func beginRun(_ id: UInt64) {
        let limit = shared.withLock { $0.run?.id == id ? $0.run?.limit : nil }
        let horizon: UInt64
        if let limit {
            horizon = UInt64(clamping: now.advanced(by: limit).nanoseconds)
        } else {
            horizon = .max
        }
        runState = .running(id: id, horizon: horizon)
    }

    private func endRun(_ id: UInt64) {
        guard case .running(let current, _) = runState, current == id else { return }
        runState = .idle
        let run = shared.withLock { shared -> ActiveRun? in
            guard shared.run?.id == id else { return nil }
            defer { shared.run = nil }
            return shared.run
        }
        finishedRun = run  // resumed by the thread's loop once this instant's timers have fired
    }

    private func shutDownOnThread() {
        isStopped = true
        // The lanes' items are dropped, as every timer is — out of the lanes themselves, not only out of this list:
        // an item holds its receiver, which may hold the lane (a server room holds its network, which holds its
        // lane), and a message still in flight would keep that whole world alive.
        let stopped = lanes
        laneRefs.removeAll()
        lanes.removeAll()
        sharedLanes.removeAll()
        for lane in stopped { lane.dropAll() }
        for (handler, handle) in timers.removeAll() { handler.timerCancelled(handle) }
        // Jobs that arrived before shutdown still run, so no task awaiting the simulation hangs.
        repeat {
            takeInbox()
            while let job = runQueue.popFirst() {
                runSynchronously(job)
            }
        } while shared.withLock({ !$0.inbox.isEmpty })
        let run = shared.withLock { shared -> ActiveRun? in
            defer { shared.run = nil }
            return shared.run
        }
        run?.continuation.resume(throwing: RuntimeError.loopShutDown("the simulation"))
    }
}
