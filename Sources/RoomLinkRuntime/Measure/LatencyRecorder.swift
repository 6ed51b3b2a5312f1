internal import Histogram

/// Records durations — how late timers fired, how long a callback took to arrive — into an HDR histogram (three
/// significant digits, up to a day), and summarises them as a ``LatencySummary``.
///
/// A value: one owner records; merge recorders of several threads with ``merge(_:)``.
///
/// A recorder has two forms that answer every question alike. A recorder that records holds the whole histogram
/// (about 300 KB of counts). A ``compacted()`` copy — what a live view reads off a running load once a second — and
/// a decoded one hold only their non-empty buckets: reading them is a walk over a few hundred buckets rather than the
/// histogram's tens of thousands, copying them shares nothing with the recorder they came from (whose next record
/// then does not copy its histogram), and they take the whole form again the first time something records into them.
///
/// A reader that takes a copy again and again — once a second, for as long as the run goes — takes it with
/// ``snapshot()``: the recorder then keeps what it records until the next one (up to ``journalLimit`` durations),
/// so that the next copy costs what was recorded since, not a walk over the histogram.
public struct LatencyRecorder: Sendable {
    /// The whole histogram; while ``compact`` holds the durations, the shared empty one.
    private var histogram = Self.empty
    /// The non-empty buckets, for a compact recorder.
    private var compact: Buckets?
    /// Since the last ``snapshot()``: what it held, and the durations recorded after it. `nil` when no reader takes
    /// snapshots, after a merge, and once more than ``journalLimit`` durations came between two snapshots.
    private var journal: Journal?

    /// The most durations a recorder keeps between two snapshots (128 KiB); beyond it, the next snapshot walks the
    /// histogram instead.
    public static let journalLimit = 16_384

    /// The histogram every recorder starts from: a new recorder allocates its counts when it first records.
    private static let empty = Histogram<UInt64>(
        highestTrackableValue: maximum,
        numberOfSignificantValueDigits: .three
    )
    private static let maximum: UInt64 = 86_400_000_000_000

    /// An empty recorder.
    public init() {}

    /// Records one duration of `nanoseconds` (negative values count as 0; values beyond a day as a day).
    public mutating func record(nanoseconds: Int64) {
        if compact != nil { expand() }
        let value = UInt64(min(max(0, nanoseconds), Int64(Self.maximum)))
        _ = histogram.record(value)
        if journal != nil { keep(value) }
    }

    /// Keeps `value` for the next snapshot, or gives the journal up past its limit.
    private mutating func keep(_ value: UInt64) {
        journal?.since.append(value)
        if let count = journal?.since.count, count > Self.journalLimit { journal = nil }
    }

    /// Adds every duration `other` recorded.
    ///
    /// Bucket by bucket, each at the value that stands for it in an encoded recorder — the largest keeping its own —
    /// rather than through `Histogram.add`, whose generic loop over every bucket, empty or not, cost a live view a
    /// millisecond a merge. Two compact recorders merge into a compact one; into an empty recorder, `other` is copied.
    public mutating func merge(_ other: LatencyRecorder) {
        guard other.totalCount > 0 else { return }
        journal = nil
        guard totalCount > 0 else {
            self = other
            journal = nil
            return
        }
        if let mine = compact, let theirs = other.compact {
            compact = mine.adding(theirs)
            return
        }
        expand()
        let largest = other.largest
        other.forEachRecordedBucket { value, count in
            _ = histogram.record(Swift.min(value, largest), count: count)
        }
    }

    /// A copy holding only the non-empty buckets: it answers as this recorder does, and shares no storage with it, so
    /// that this recorder's next record does not copy its histogram. One walk over the histogram (tens of microseconds):
    /// take it under the lock that guards the recorder, once, and read the copy as often as needed.
    public func compacted() -> LatencyRecorder {
        guard compact == nil else { return self }
        return LatencyRecorder(compact: scanned)
    }

    /// ``compacted()``, for a reader that comes back: from now on this recorder keeps what it records until the next
    /// snapshot, which then costs what was recorded since (sorted into the last one's buckets) rather than a walk
    /// over the histogram. Take it under the lock that guards the recorder.
    public mutating func snapshot() -> LatencyRecorder {
        guard compact == nil else { return self }
        // Taken out, so that the journal's storage is unshared and its capacity kept.
        let kept = journal
        journal = nil
        var next = kept ?? Journal(copied: Buckets(total: 0, smallest: 0, largest: 0))
        next.copied = kept.map { $0.copied.adding(Buckets(values: $0.since)) } ?? scanned
        next.since.removeAll(keepingCapacity: true)
        journal = next
        return LatencyRecorder(compact: next.copied)
    }

    /// A compact recorder of `buckets` (an empty recorder for no buckets).
    private init(compact buckets: Buckets) {
        if buckets.total > 0 { compact = buckets }
    }

    /// The whole histogram's non-empty buckets, in one walk.
    private var scanned: Buckets {
        guard histogram.totalCount > 0 else { return Buckets(total: 0, smallest: 0, largest: 0) }
        var buckets = Buckets(total: histogram.totalCount, smallest: histogram.min, largest: histogram.maxRecorded)
        for bucket in histogram.recordedValues() {
            buckets.list.append(Bucket(value: bucket.value, count: bucket.count))
        }
        return buckets
    }

    /// What was recorded since `earlier`, a copy of this recorder taken before: the durations of the window from
    /// then to now (a run's steady state, apart from its warm-up).
    public func since(_ earlier: LatencyRecorder) -> LatencyRecorder {
        var later = LatencyRecorder()
        // The earlier counts, bucket by bucket (each bucket's highest equivalent value), read in one pass.
        var before: [UInt64: UInt64] = [:]
        earlier.forEachRecordedBucket { value, count in before[value] = count }
        // Each bucket by the value that stands for it in an encoded recorder (the largest keeps its own value), so
        // that a window holding every duration is the recorder itself.
        let largest = self.largest
        forEachRecordedBucket { value, count in
            let before = before[value] ?? 0
            guard count > before else { return }
            _ = later.histogram.record(Swift.min(value, largest), count: count - before)
        }
        return later
    }

    /// Calls `body` with each non-empty bucket: a duration that stands for it (nanoseconds) and how many it holds,
    /// smallest first.
    public func forEachBucket(_ body: (_ nanoseconds: Int64, _ count: Int) -> Void) {
        let largest = self.largest
        forEachRecordedBucket { value, count in body(Int64(Swift.min(value, largest)), Int(count)) }
    }

    /// How many durations lie at or under each of `bounds` (nanoseconds, ascending), as a Prometheus histogram's
    /// buckets count them, with the sum of all: one pass over the recorded buckets, each bucket at the value that stands
    /// for it (so a duration within 0.1 % of a bound may count in the bucket above it).
    public func cumulativeCounts(atNanoseconds bounds: [Int64]) -> (counts: [Int], total: Int, sumNanoseconds: Double) {
        var counts = [Int](repeating: 0, count: bounds.count)
        var total = 0
        var sum = 0.0
        var first = 0
        forEachBucket { value, count in
            total += count
            sum += Double(value) * Double(count)
            while first < bounds.count, value > bounds[first] {
                counts[first] = total - count
                first += 1
            }
        }
        for index in first..<bounds.count { counts[index] = total }
        return (counts, total, sum)
    }

    /// How many durations were recorded.
    public var count: Int { Int(totalCount) }

    /// The percentiles of what was recorded.
    public var summary: LatencySummary {
        guard totalCount > 0 else { return LatencySummary() }
        let values = values(atPercentiles: [50, 90, 99, 99.9]).map { Double($0) / 1e6 }
        let largest = self.largest
        return LatencySummary(
            count: count,
            p50Ms: values[0],
            p90Ms: values[1],
            p99Ms: values[2],
            p999Ms: values[3],
            maxMs: Double(largest == 0 ? 0 : Self.empty.highestEquivalentForValue(largest)) / 1e6
        )
    }

    /// The values at `percentiles` (ascending, each in (0, 100)), as `Histogram.valueAtPercentile` gives them, in one
    /// pass over the recorded buckets (the histogram's own method walks every bucket through generic code: a
    /// millisecond each, where a live view asks for a dozen a second).
    func values(atPercentiles percentiles: [Double]) -> [UInt64] {
        let total = totalCount
        let largest = self.largest
        let smallest = self.smallest
        // The count each percentile must reach, as HDR computes it (one ulp below, rounded up, at least 1).
        let targets = percentiles.map { percentile in
            let requested = Swift.min(Swift.max(percentile.nextDown, 0), 100)
            return Swift.max(1, UInt64(((requested * Double(total)) / 100).rounded(.up)))
        }
        var results = [UInt64](repeating: 0, count: targets.count)
        var next = 0
        var cumulative: UInt64 = 0
        forEachRecordedBucket { value, count in
            cumulative += count
            while next < targets.count, cumulative >= targets[next] {
                results[next] = Swift.max(Swift.min(value, largest), smallest)
                next += 1
            }
        }
        return results
    }

    // MARK: The two forms

    /// How many durations were recorded, in either form.
    private var totalCount: UInt64 { compact?.total ?? histogram.totalCount }
    /// The largest duration recorded (HDR's `maxRecorded`).
    private var largest: UInt64 { compact?.largest ?? histogram.maxRecorded }
    /// The smallest duration recorded (HDR's `min`).
    private var smallest: UInt64 { compact?.smallest ?? histogram.min }

    /// Calls `body` with each non-empty bucket, smallest first: its highest equivalent value (not bounded by the
    /// largest recorded) and its count.
    private func forEachRecordedBucket(_ body: (_ value: UInt64, _ count: UInt64) -> Void) {
        if let compact {
            for bucket in compact.list { body(bucket.value, bucket.count) }
        } else {
            for bucket in histogram.recordedValues() { body(bucket.value, bucket.count) }
        }
    }

    /// Takes the whole form again, with the same buckets, smallest and largest duration.
    private mutating func expand() {
        guard let buckets = compact else { return }
        compact = nil
        histogram = Self.empty
        for (index, bucket) in buckets.list.enumerated() {
            var count = bucket.count
            if index == 0 {
                // The smallest duration lies in the first bucket; recorded as itself, HDR's `min` comes back.
                _ = histogram.record(buckets.smallest)
                count -= 1
            }
            if count > 0 { _ = histogram.record(Swift.min(bucket.value, buckets.largest), count: count) }
        }
    }

    /// A compact recorder's durations.
    private struct Buckets: Sendable {
        var list: [Bucket] = []
        var total: UInt64 = 0
        var smallest: UInt64 = 0
        var largest: UInt64 = 0

        init(total: UInt64, smallest: UInt64, largest: UInt64) {
            self.total = total
            self.smallest = smallest
            self.largest = largest
        }

        /// The buckets of `values`, durations as recorded (at most a day).
        init(values: [UInt64]) {
            guard let first = values.first else {
                self.init(total: 0, smallest: 0, largest: 0)
                return
            }
            self.init(total: UInt64(values.count), smallest: first, largest: first)
            for value in values.map({ LatencyRecorder.empty.highestEquivalentForValue($0) }).sorted() {
                if let last = list.last, last.value == value {
                    list[list.count - 1].count += 1
                } else {
                    list.append(Bucket(value: value, count: 1))
                }
            }
            for value in values {
                smallest = Swift.min(smallest, value)
                largest = Swift.max(largest, value)
            }
        }

        /// Both recorders' durations: the buckets merged in order, counts of one bucket added.
        func adding(_ other: Buckets) -> Buckets {
            if other.total == 0 { return self }
            if total == 0 { return other }
            var sum = Buckets(
                total: total + other.total,
                smallest: Swift.min(smallest, other.smallest),
                largest: Swift.max(largest, other.largest)
            )
            sum.list.reserveCapacity(list.count + other.list.count)
            var (mine, theirs) = (0, 0)
            while mine < list.count || theirs < other.list.count {
                if theirs == other.list.count || (mine < list.count && list[mine].value < other.list[theirs].value) {
                    sum.list.append(list[mine])
                    mine += 1
                } else if mine == list.count || other.list[theirs].value < list[mine].value {
                    sum.list.append(other.list[theirs])
                    theirs += 1
                } else {
                    sum.list.append(Bucket(value: list[mine].value, count: list[mine].count + other.list[theirs].count))
                    mine += 1
                    theirs += 1
                }
            }
            return sum
        }
    }

    /// What a recorder keeps between two snapshots.
    private struct Journal: Sendable {
        /// What the last snapshot held.
        var copied: Buckets
        /// The durations recorded since, as recorded.
        var since: [UInt64] = []
    }

    /// One non-empty bucket: its highest equivalent value and how many durations it holds.
    private struct Bucket: Sendable {
        var value: UInt64
        var count: UInt64
    }
}

extension LatencyRecorder: Codable, Equatable {
    /// Encoded as its non-empty buckets, `[[nanoseconds, count], …]` (a value within each bucket, so decoding
    /// records every duration back into the bucket it came from): a recorder decoded from another
    /// process's report merges exactly, and its percentiles are the original's.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(buckets)
    }

    /// Decodes the buckets into a compact recorder (a report's dozens of recorders cost no histogram each until one is
    /// recorded into).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let encoded = try container.decode([[UInt64]].self)
        self.init()
        var counts: [UInt64: UInt64] = [:]
        var buckets = Buckets(total: 0, smallest: .max, largest: 0)
        for bucket in encoded {
            guard bucket.count == 2, bucket[0] <= Self.maximum else {
                throw DecodingError.dataCorruptedError(
                    in: container,
                    debugDescription: "a latency bucket is [nanoseconds, count] with at most a day's nanoseconds"
                )
            }
            guard bucket[1] > 0 else { continue }
            let (total, overflow) = buckets.total.addingReportingOverflow(bucket[1])
            guard !overflow else {
                throw DecodingError.dataCorruptedError(
                    in: container,
                    debugDescription: "latency buckets whose counts add up beyond \(UInt64.max)"
                )
            }
            buckets.total = total
            counts[Self.empty.highestEquivalentForValue(bucket[0]), default: 0] += bucket[1]
            buckets.smallest = Swift.min(buckets.smallest, bucket[0])
            buckets.largest = Swift.max(buckets.largest, bucket[0])
        }
        guard buckets.total > 0 else { return }
        buckets.list = counts.sorted { $0.key < $1.key }.map { Bucket(value: $0.key, count: $0.value) }
        compact = buckets
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.buckets == rhs.buckets }

    /// The non-empty buckets: each bucket's highest equivalent value (the largest recorded value, in the bucket that
    /// holds it, so that the maximum and the percentiles that reach it come back exactly) and its count.
    private var buckets: [[UInt64]] {
        var buckets: [[UInt64]] = []
        let largest = self.largest
        forEachRecordedBucket { value, count in buckets.append([Swift.min(value, largest), count]) }
        return buckets
    }
}

/// Percentiles of a sample of durations, in milliseconds (all 0 for an empty sample).
public struct LatencySummary: Sendable, Codable, Equatable {
    public var count = 0
    public var p50Ms = 0.0
    public var p90Ms = 0.0
    public var p99Ms = 0.0
    public var p999Ms = 0.0
    public var maxMs = 0.0

    /// Creates a summary; every field defaults to 0.
    public init(
        count: Int = 0,
        p50Ms: Double = 0,
        p90Ms: Double = 0,
        p99Ms: Double = 0,
        p999Ms: Double = 0,
        maxMs: Double = 0
    ) {
        self.count = count
        self.p50Ms = p50Ms
        self.p90Ms = p90Ms
        self.p99Ms = p99Ms
        self.p999Ms = p999Ms
        self.maxMs = maxMs
    }

    /// `p50 / p99 / max` as one short text, e.g. `0.31 / 2.10 / 7.94 ms`.
    public var text: String {
        func format(_ value: Double) -> String {
            let hundredths = Int((value * 100).rounded())
            let fraction = hundredths % 100
            return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
        }
        return "\(format(p50Ms)) / \(format(p99Ms)) / \(format(maxMs)) ms"
    }
}
