/// How a ``LibeventLoop`` keeps its timers.
///
/// The benchmark (`roomlink-bench timers`) compares them on the same work; ``wheel`` is the default because it is
/// the fastest there for RoomLink's load (many timers, batched expiry, O(1) cancel).
public enum TimerBackend: String, Sendable, CaseIterable, CustomStringConvertible {
    /// A hierarchical timing wheel driven by one libevent timer armed for its next expiry: O(1) arm and cancel,
    /// every timer of a tick expired in one wake-up, deadlines rounded up to the tick (default ≈ 0.5 ms).
    case wheel
    /// One libevent timer per RoomLink timer, on libevent's min-heap: O(log n) arm and cancel, exact deadlines.
    case libeventHeap
    /// One libevent timer per RoomLink timer, on libevent's common-timeout queues (O(1) for equal delays):
    /// delays are rounded up to whole milliseconds so that timers share queues; past 256 distinct delays a
    /// timer falls back to the min-heap.
    case libeventCommonTimeout

    public var description: String { rawValue }
}
