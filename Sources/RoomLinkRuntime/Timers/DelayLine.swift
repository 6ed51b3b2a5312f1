public import DequeModule

/// Items that each come out a fixed delay after they went in, in the order they went in, all on one loop.
///
/// A timer per item costs an allocation, a queue entry and a firing each. When every item waits the same time and
/// all are added on the loop that handles them, their deadlines only grow, so one FIFO and one timer (armed for
/// the oldest item) carry them all: RoomLink's simulated network uses one per loop on the real clock for messages
/// between a client and a room that share the loop.
///
/// Items come out on the loop's thread through `deliver`, each at (never before) its deadline; while one is handed
/// over, ``RuntimeLoop/firingLateness`` measures from its own deadline. Items added while others come out wait
/// their full delay, even a zero one (they come out on the loop's next pass), so two parties answering each other
/// at once cannot keep one firing going for ever.
///
/// Use it from its loop's thread only: ``add(_:prefetching:)`` refuses (returns `false`) anywhere else.
public final class DelayLine<Item>: @unchecked Sendable {
    // Safe: `deadlines`, `items`, `hints` and `isArmed` are touched, and `deliver` and `prefetch` (not Sendable)
    // are called, only on the loop's thread — `add` checks `isInServiceThread` first, and the timer's closures run
    // there by the TimerService contract; the `let`s are immutable.

    /// The loop the items come out on.
    public let loop: any RuntimeLoop
    /// How long each item waits.
    public let delay: Duration
    // Inlinable (with the methods that touch them) so that a client module specializes the line for its item type:
    // unspecialized, every item's trip through the deque looks up generic metadata at run time.
    @usableFromInline let deliver: (Item) -> Void
    // Deadlines apart from the items, so that peeking at the next one reads an integer instead of copying (and
    // retaining) whatever the item holds.
    //
    // Unchecked exclusivity: the runtime's check (an access set kept per thread) was 3 % of a million-client run,
    // and no access here can overlap another — each is one deque call that returns before any `deliver`, `prefetch`
    // or loop call, and all run on the loop's thread (see the Sendable proof above).
    @exclusivity(unchecked) @usableFromInline var deadlines = Deque<RuntimeInstant>()
    @exclusivity(unchecked) @usableFromInline var items = Deque<Item>()
    /// With `prefetch`: each item's hint (an address its delivery will touch first), else empty.
    @exclusivity(unchecked) @usableFromInline var hints = Deque<UInt>()
    @usableFromInline let prefetch: ((UnsafeRawPointer) -> Void)?
    @exclusivity(unchecked) @usableFromInline var isArmed = false

    /// How many items ahead of the one coming out `prefetch` is given the hint of.
    @usableFromInline static var prefetchDistance: Int { 4 }

    /// Creates a line on `loop` whose items come out through `deliver`, `delay` after each was added.
    ///
    /// With `prefetch`, while an item comes out the line passes `prefetch` the hint of the one four places behind it
    /// (see ``add(_:prefetching:)``), so that a loop can start loading what that delivery will touch.
    ///
    /// - Precondition: `delay` is not negative.
    public init(
        loop: any RuntimeLoop,
        delay: Duration,
        prefetch: ((UnsafeRawPointer) -> Void)? = nil,
        deliver: @escaping (Item) -> Void
    ) {
        precondition(delay >= .zero, "a DelayLine's delay cannot be negative, got \(delay)")
        self.loop = loop
        self.delay = delay
        self.prefetch = prefetch
        self.deliver = deliver
    }

    /// Adds `item`, to come out `delay` from now. Returns `false` (and adds nothing) when called off the loop's
    /// thread or when the loop has shut down.
    ///
    /// `hint` is an address the item's delivery will touch first (its receiver object), for a line made with a
    /// `prefetch`; it is never read through.
    @inlinable
    @discardableResult
    public func add(_ item: Item, prefetching hint: UnsafeRawPointer? = nil) -> Bool {
        guard loop.isInServiceThread else { return false }
        let deadline = loop.now.advanced(by: delay)
        if !isArmed {
            guard arm(at: deadline) else { return false }
            isArmed = true
        }
        deadlines.append(deadline)
        items.append(item)
        if prefetch != nil { hints.append(UInt(bitPattern: hint)) }
        return true
    }

    /// Arms the line's timer; `false` when the loop has shut down (which drops the items, as it drops every timer).
    @inlinable
    func arm(at deadline: RuntimeInstant) -> Bool {
        // The handler is made of closures written here, in inlinable code, so that the module adding the items
        // compiles the firing for its own `Item`. (A generic class's own `TimerHandler` witness would run
        // unspecialized: a metadata lookup and a value-witness copy per item — a quarter of a million-client run.)
        let handler = ClosureTimerHandler(onFire: { [self] in fire() }, onCancel: { [self] in shutDown() })
        return (try? loop.schedule(at: deadline, handler: handler)) != nil
    }

    /// The timer fired: hands over every item due, then re-arms for the oldest one left.
    @inlinable
    func fire() {
        // Still counts as armed while the items come out: one they add must not arm a second timer (this firing
        // arms the next one, for the oldest item, when it ends).
        defer { isArmed = !deadlines.isEmpty && arm(at: deadlines[deadlines.startIndex]) }
        let now = loop.now
        // Only the items here now: the ones their delivery adds wait for a later firing.
        var budget = items.count
        while budget > 0, deadlines[deadlines.startIndex] <= now {
            if let prefetch {
                if hints.count > Self.prefetchDistance,
                    let hint = UnsafeRawPointer(bitPattern: hints[hints.startIndex + Self.prefetchDistance])
                {
                    prefetch(hint)
                }
                hints.removeFirst()
            }
            let deadline = deadlines.removeFirst()
            let item = items.removeFirst()
            budget -= 1
            loop.runAsFiring(deadline: deadline) { deliver(item) }
        }
    }

    /// The loop shut down: nothing more comes out.
    @usableFromInline
    func shutDown() {
        isArmed = false
        deadlines.removeAll()
        items.removeAll()
        hints.removeAll()
    }
}
