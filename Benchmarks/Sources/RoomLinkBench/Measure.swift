import Glibc
import Histogram
import Synchronization

/// The monotonic clock every case measures lateness against (CLOCK_MONOTONIC, as libevent, NIO and RoomLink use).
enum Monotonic {
    static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}

/// Process CPU time (user + system), in nanoseconds.
enum ProcessCPU {
    static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}

/// What every fired timer of a case writes: its lateness, by timer index, and a count that ends the case.
///
/// Lateness slots are written once each, by whichever thread fires that timer; the counter is atomic, and the
/// waiter is resumed by the last fire, which orders every write before the reader.
final class FireStats: @unchecked Sendable {
    // Safe: each `lateness[i]` and `deadlines[i]` is written by one thread (the arming thread for the deadline,
    // then the firing thread for the lateness, ordered by the timer system's own hand-off), and read only after
    // `waitForAll()` returns, which the last fire's resume orders after every write.
    let count: Int
    let deadlines: UnsafeMutableBufferPointer<Int64>
    let lateness: UnsafeMutableBufferPointer<Int64>
    private let fired = Atomic<Int>(0)
    private let waiter = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let done = Atomic<Bool>(false)

    init(count: Int) {
        self.count = count
        deadlines = .allocate(capacity: count)
        deadlines.initialize(repeating: 0)
        lateness = .allocate(capacity: count)
        lateness.initialize(repeating: 0)
    }

    deinit {
        deadlines.deallocate()
        lateness.deallocate()
    }

    @inline(__always)
    func fire(_ index: Int) {
        lateness[index] = Monotonic.now() - deadlines[index]
        let (_, total) = fired.add(1, ordering: .acquiringAndReleasing)
        if total == count {
            done.store(true, ordering: .releasing)
            waiter.withLock { $0 }?.resume()
        }
    }

    func waitForAll() async {
        await withCheckedContinuation { continuation in
            let ready = waiter.withLock { waiter -> Bool in
                if done.load(ordering: .acquiring) { return true }
                waiter = continuation
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Lateness percentiles in microseconds.
    func latenessMicroseconds() -> (p50: Double, p99: Double, max: Double) {
        var histogram = Histogram<UInt64>(
            highestTrackableValue: 600_000_000_000,
            numberOfSignificantValueDigits: .three
        )
        for value in lateness { _ = histogram.record(UInt64(max(0, value))) }
        return (
            Double(histogram.valueAtPercentile(50)) / 1e3, Double(histogram.valueAtPercentile(99)) / 1e3,
            Double(histogram.max) / 1e3
        )
    }
}

/// The workload every timer case runs: `n` timers whose delays take 256 distinct values a millisecond apart
/// (so libevent's common-timeout queues can hold them too), after a base delay long enough to arm them all.
struct TimerWorkload: Sendable {
    let n: Int
    let baseDelayNanoseconds: Int64
    let cancelSample: Int
    /// The RoomLink wheel's tick (log2 of nanoseconds).
    let wheelTickShift: UInt64

    init(n: Int, cancelSample: Int, wheelTickShift: UInt64) {
        self.n = n
        self.wheelTickShift = wheelTickShift
        // Arming must finish before the first deadline: 1 s, plus 3 µs per timer for the slowest arming path.
        self.baseDelayNanoseconds = 1_000_000_000 + Int64(n) * 3_000
        self.cancelSample = min(cancelSample, n)
    }

    @inline(__always)
    func delayNanoseconds(_ index: Int) -> Int64 {
        baseDelayNanoseconds + Int64((index &* 7919) % 256) * 1_000_000
    }

    /// Far-future delay for the cancel phase (an hour, with the same 256 spreads).
    @inline(__always)
    func farDelayNanoseconds(_ index: Int) -> Int64 {
        3_600_000_000_000 + Int64((index &* 7919) % 256) * 1_000_000
    }

    /// Indices of the cancel sample, spread over all timers.
    var cancelIndices: StrideTo<Int> { stride(from: 0, to: n, by: max(1, n / cancelSample)) }
}

/// Cancels timers by index until the sample is done or `budget` passes (a linear-time cancel at 1M pending would
/// take minutes); returns nanoseconds per cancel.
func timeCancels(_ indices: StrideTo<Int>, budget: Duration = .seconds(3), _ cancel: (Int) -> Void) -> Double {
    let start = Monotonic.now()
    let limit = start + budget.components.seconds * 1_000_000_000
    var done = 0
    for index in indices {
        cancel(index)
        done += 1
        if done & 63 == 0, Monotonic.now() > limit { break }
    }
    return Double(Monotonic.now() - start) / Double(max(done, 1))
}
