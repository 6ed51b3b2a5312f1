/// Timers that all wait the same time — a network's latency, a heartbeat's period — kept in one FIFO beside a
/// simulation's wheel, in the simulation's own order.
///
/// In virtual time the order of timers due at one instant is the order they were armed in (their sequence
/// number), and an event log depends on it. When every item of a lane waits the same delay, and all are added on
/// the simulation's thread, their deadlines only grow: a FIFO holds them in deadline order. Each item takes the
/// sequence number the wheel would have given a timer armed at that moment, and the simulation fires a lane's
/// items among the wheel's timers in `(deadline, sequence)` order — exactly where those timers would have fired —
/// without a wheel entry, a slot and a handler object each. A million clients' heartbeats and messages in flight are
/// most of a large simulation's timers.
///
/// An item comes out through `deliver`, with the simulation's clock at its deadline; `deliver` answers whether the
/// item goes round again (a periodic timer: it comes out once more a delay after this deadline, with the sequence
/// number a rescheduled timer takes after its handler returns). Use it on the simulation's thread only.
@_spi(RoomLinkInternals) public final class SimulationLane<Item>: @unchecked Sendable {
    // Safe: the queue and `isRegistered` are touched, and `deliver` (not Sendable) is called, only on the
    // simulation's thread — `add` checks it, and the simulation calls the hooks from its thread; the `let`s are
    // immutable.

    /// The simulation the items come out on.
    @usableFromInline let simulation: SimulationRuntime
    /// How long each item waits, in nanoseconds.
    @usableFromInline let delay: UInt64
    // Inlinable, with the methods that touch them, so that the module adding items specializes the lane for its
    // item type (unspecialized, each item's trip through the queue looks up generic metadata at run time).
    @usableFromInline let deliver: (Item) -> Bool
    /// The items waiting, in their order, in chunks (a `Deque` each for deadlines, sequence numbers, items and hints
    /// grew by half again while copying, and kept its largest size resident: 130 MB at the peak of a million-client
    /// storm).
    @exclusivity(unchecked) @usableFromInline var queue = ChunkedQueue<Entry>()

    /// An item waiting, with its deadline, its sequence number, its hints (0 without one) and the word its adder gave
    /// for ``prefetchAhead`` (0: none).
    @usableFromInline struct Entry {
        @usableFromInline let deadline: UInt64
        @usableFromInline let sequence: UInt64
        @usableFromInline let hint: UInt
        @usableFromInline let secondHint: UInt
        @usableFromInline let ahead: UInt
        @usableFromInline let item: Item

        @inlinable init(deadline: UInt64, sequence: UInt64, hint: UInt, secondHint: UInt, ahead: UInt, item: Item) {
            self.deadline = deadline
            self.sequence = sequence
            self.hint = hint
            self.secondHint = secondHint
            self.ahead = ahead
            self.item = item
        }
    }
    @usableFromInline let prefetches: Bool
    /// What the lane does for the item ``prefetchAheadDistance`` places behind the one coming out, whose first hint's
    /// lines it started loading two items before: given that hint's address and the word the item was added with
    /// (when not 0), it starts loading what the delivery reaches through the hinted object (a server room's member
    /// record, whose address the room holds). From the entry's words, not the item: reading an item in place still
    /// copied it, retaining what it holds.
    @usableFromInline let prefetchAhead: ((UnsafeRawPointer, UInt) -> Void)?
    @exclusivity(unchecked) @usableFromInline var isRegistered = false

    /// The loop the items come out on.
    public var loop: any RuntimeLoop { simulation }
    /// How long each item waits.
    public var itemDelay: Duration { .nanoseconds(Int64(clamping: delay)) }

    /// The shortest delay a lane takes: two of the simulation's wheel ticks, so that an item added while a tick's
    /// timers fire is never due within that tick (the simulation takes a lane's due items when the tick starts).
    public static var minimumDelay: Duration { .nanoseconds(Int64(SimulationRuntime.laneMinimumDelay)) }

    /// A lane on `simulation` whose items wait `delay` and come out through `deliver`; `nil` when `delay` is
    /// shorter than ``minimumDelay`` (use the simulation's timers then).
    ///
    /// With `prefetches`, each item is added with a hint — an address its delivery touches first, its receiver
    /// object — and while an item comes out, the lane starts loading the hint of the one four places behind it: a
    /// million clients' objects are in no cache, and their memory then arrives while the items before them run. A
    /// second hint names the other object the delivery touches (the sender a reply goes back to, the room a
    /// heartbeat goes to), whose first lines the lane loads too — given how many bytes of it the delivery reads, the
    /// lines those bytes span and no more. Then, two places behind, `prefetchAhead` (if any) is given the first hint
    /// and the word the item was added with (``add(_:prefetching:and:secondBytes:ahead:)``), to start loading what
    /// the delivery reaches through the hinted object, whose lines have arrived by then.
    @inlinable
    public init?(
        on simulation: SimulationRuntime,
        delay: Duration,
        prefetches: Bool = false,
        prefetchAhead: ((UnsafeRawPointer, UInt) -> Void)? = nil,
        deliver: @escaping (Item) -> Bool
    ) {
        guard delay >= Self.minimumDelay else { return nil }
        self.simulation = simulation
        self.delay = UInt64(delay.nanosecondsClamped)
        self.prefetches = prefetches
        self.prefetchAhead = prefetches ? prefetchAhead : nil
        self.deliver = deliver
    }

    /// The lane of this item type and `delay` on `simulation` that everyone asking for one shares, made by `make` on
    /// the first call; `nil` when `make` gives none. Call on the simulation's thread.
    ///
    /// The simulation keeps the lane for its life: an owner that held lanes by simulation would have to hold the
    /// simulation weakly (or keep it alive), and a weak reference sends every retain and release of the simulation
    /// down the runtime's slow path. So what a shared lane's items do when they come out must depend on their type
    /// alone, not on who asked first.
    @inlinable
    public static func shared(
        on simulation: SimulationRuntime,
        delay: Duration,
        make: () -> SimulationLane?
    ) -> SimulationLane? {
        let key = SimulationRuntime.SharedLaneKey(item: ObjectIdentifier(Item.self), delay: delay)
        // The key names the item type, so what is kept under it is a lane of this type.
        return simulation.sharedLane(key, make: make).map { unsafeDowncast($0, to: SimulationLane.self) }
    }

    /// How many items ahead of the one coming out a lane loads the hint of.
    @usableFromInline static var prefetchDistance: Int { 4 }

    /// How many items ahead of the one coming out a lane hands to `prefetchAhead`: half the hint's distance, so that
    /// the hinted lines have had two deliveries' time to arrive, and what it starts loading has two more.
    @usableFromInline static var prefetchAheadDistance: Int { 2 }

    /// How many cache lines of the hint a lane loads: what a delivery touches runs past the fourth. A server room's
    /// capacity node sits at byte 288 and a client's state runs to about byte 470 (`perf annotate` put most of a
    /// room's receive on that first load). Eight lines measured best at a million clients: 0.85× the CPU of four,
    /// where five gave 0.91× and twelve 1.04× of eight (BENCHMARKS.md, issue 31's twelfth part).
    @usableFromInline static var prefetchLines: Int { 8 }

    /// How many cache lines of a second hint a lane loads when not told how many bytes: an actor's header and the
    /// fields after it — what a delivery reads of the other end (its reference count, its name, its loop).
    @usableFromInline static var secondHintLines: Int { 3 }

    /// `address` with the number of cache lines to load in its top byte (user-space addresses stay below 2^56): the
    /// lines `bytes` bytes from `address` span, or `defaultLines` when `bytes` is 0. Where the memory bus is the
    /// limit — ten million clients, whose prefetches wait for a free miss buffer — a line loaded past the end of what
    /// a delivery reads costs as much as one it needs.
    @inlinable
    static func packedHint(_ address: UnsafeRawPointer?, bytes: Int, defaultLines: Int) -> UInt {
        guard let address else { return 0 }
        let raw = UInt(bitPattern: address)
        let lines = bytes > 0 ? ((raw & 63) &+ UInt(bytes) &+ 63) >> 6 : UInt(defaultLines)
        return raw & Self.hintAddressMask | min(lines, 255) << 56
    }

    @usableFromInline static var hintAddressMask: UInt { (1 << 56) - 1 }

    /// Starts loading the lines a packed hint names.
    @inlinable
    static func prefetch(packed hint: UInt) {
        guard let address = UnsafeRawPointer(bitPattern: hint & hintAddressMask) else { return }
        prefetchCacheLines(at: address, lines: Int(truncatingIfNeeded: hint >> 56))
    }

    /// Adds `item`, to come out `delay` from now. Returns `false` (and adds nothing) off the simulation's thread.
    ///
    /// - Parameters:
    ///   - item: What `deliver` is given.
    ///   - hint: What the delivery touches first (its receiver), for a lane made with `prefetches`.
    ///   - secondHint: The other object the delivery touches, if any.
    ///   - secondBytes: How many bytes from `secondHint` it reads; 0 for three lines.
    ///   - ahead: For the lane's `prefetchAhead`, with `hint`: what it needs to find what the delivery reaches through
    ///     the hinted object; 0 for nothing.
    @inlinable
    @discardableResult
    public func add(
        _ item: consuming Item,
        prefetching hint: UnsafeRawPointer? = nil,
        and secondHint: UnsafeRawPointer? = nil,
        secondBytes: Int = 0,
        ahead: UInt = 0
    ) -> Bool {
        guard simulation.isInServiceThread else { return false }
        if !isRegistered {
            register()
            isRegistered = true
        }
        let now = UInt64(clamping: simulation.now.nanoseconds)
        append(
            item,
            deadline: now &+ delay,
            hint: Self.packedHint(hint, bytes: 0, defaultLines: Self.prefetchLines),
            secondHint: Self.packedHint(secondHint, bytes: secondBytes, defaultLines: Self.secondHintLines),
            ahead: ahead
        )
        return true
    }

    @inlinable
    func append(_ item: consuming Item, deadline: UInt64, hint: UInt, secondHint: UInt, ahead: UInt) {
        queue.append(
            Entry(
                deadline: deadline,
                sequence: simulation.takeSequence(),
                hint: hint,
                secondHint: secondHint,
                ahead: ahead,
                item: item
            )
        )
    }

    /// Hands the simulation what it needs of the lane, as closures written here in inlinable code, so that they are
    /// compiled for `Item` where the items are added.
    @inlinable
    func register() {
        simulation.register(
            SimulationRuntime.LaneHooks(
                front: { [self] in queue.peek { $0.pointee.deadline } },
                collect: { [self] time, lane, due in
                    queue.scan { entry in
                        guard entry.pointee.deadline <= time else { return false }
                        due.append(.init(deadline: entry.pointee.deadline, sequence: entry.pointee.sequence, id: lane))
                        return true
                    }
                },
                fireFront: { [self] in
                    if prefetches,
                        let (hint, secondHint) = queue.peek(
                            at: Self.prefetchDistance,
                            { ($0.pointee.hint, $0.pointee.secondHint) }
                        )
                    {
                        Self.prefetch(packed: hint)
                        Self.prefetch(packed: secondHint)
                    }
                    if let prefetchAhead,
                        let (hint, ahead) = queue.peek(
                            at: Self.prefetchAheadDistance,
                            { ($0.pointee.hint, $0.pointee.ahead) }
                        ),
                        ahead != 0, let address = UnsafeRawPointer(bitPattern: hint & Self.hintAddressMask)
                    {
                        prefetchAhead(address, ahead)
                    }
                    let entry = queue.removeFirst()
                    if deliver(entry.item) {
                        append(
                            entry.item,
                            deadline: entry.deadline &+ delay,
                            hint: entry.hint,
                            secondHint: entry.secondHint,
                            ahead: entry.ahead
                        )
                    }
                },
                dropAll: { [self] in queue = ChunkedQueue() }
            )
        )
    }
}
