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
/// Use it from its loop's thread only: ``add(_:)`` refuses (returns `false`) anywhere else.
public final class DelayLine<Item>: TimerHandler, @unchecked Sendable {
    // Safe: `items` and `isArmed` are touched, and `deliver` (not Sendable) is called, only on the loop's thread —
    // `add` checks `isInServiceThread` first, and `timerFired`/`timerCancelled` run there by the TimerService
    // contract; the `let`s are immutable.

    /// The loop the items come out on.
    public let loop: any RuntimeLoop
    /// How long each item waits.
    public let delay: Duration
    // Inlinable (with the methods that touch them) so that a client module specializes the line for its item type:
    // unspecialized, every item's trip through the deque looks up generic metadata at run time.
    @usableFromInline let deliver: (Item) -> Void
    @usableFromInline var items = Deque<(deadline: RuntimeInstant, item: Item)>()
    @usableFromInline var isArmed = false

    /// Creates a line on `loop` whose items come out through `deliver`, `delay` after each was added.
    ///
    /// - Precondition: `delay` is not negative.
    public init(loop: any RuntimeLoop, delay: Duration, deliver: @escaping (Item) -> Void) {
        precondition(delay >= .zero, "a DelayLine's delay cannot be negative, got \(delay)")
        self.loop = loop
        self.delay = delay
        self.deliver = deliver
    }

    /// Adds `item`, to come out `delay` from now. Returns `false` (and adds nothing) when called off the loop's
    /// thread or when the loop has shut down.
    @inlinable
    @discardableResult
    public func add(_ item: Item) -> Bool {
        guard loop.isInServiceThread else { return false }
        let deadline = loop.now.advanced(by: delay)
        if !isArmed {
            guard (try? loop.schedule(at: deadline, handler: self)) != nil else { return false }
            isArmed = true
        }
        items.append((deadline, item))
        return true
    }

    @inlinable
    public func timerFired(_ timer: TimerHandle) {
        // Still counts as armed while the items come out: one they add must not arm a second timer (this firing
        // arms the next one, for the oldest item, when it ends).
        defer { isArmed = !items.isEmpty && rearm() }
        let now = loop.now
        // Only the items here now: the ones their delivery adds wait for a later firing.
        var budget = items.count
        // Peek at the deadline alone and move the item out: copying it (`first`) would retain what it holds.
        while budget > 0, items[items.startIndex].deadline <= now {
            let (deadline, item) = items.removeFirst()
            budget -= 1
            loop.runAsFiring(deadline: deadline) { deliver(item) }
        }
    }

    /// Arms the timer for the oldest item; `false` when the loop has shut down (which drops the rest, as it drops
    /// every timer).
    @inlinable
    func rearm() -> Bool {
        guard let next = items.first else { return false }
        return (try? loop.schedule(at: next.deadline, handler: self)) != nil
    }

    public func timerCancelled(_ timer: TimerHandle) {
        // The loop shut down: nothing more comes out.
        isArmed = false
        items.removeAll()
    }
}
