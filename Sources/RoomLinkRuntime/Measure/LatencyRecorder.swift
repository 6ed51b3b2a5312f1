internal import Histogram

/// Records durations — how late timers fired, how long a callback took to arrive — into an HDR histogram (three
/// significant digits, up to a day), and summarises them as a ``LatencySummary``.
///
/// A value: one owner records; merge recorders of several threads with ``merge(_:)``.
public struct LatencyRecorder: Sendable {
    private var histogram = Histogram<UInt64>(
        highestTrackableValue: 86_400_000_000_000,
        numberOfSignificantValueDigits: .three
    )

    /// An empty recorder.
    public init() {}

    /// Records one duration of `nanoseconds` (negative values count as 0; values beyond a day as a day).
    public mutating func record(nanoseconds: Int64) {
        _ = histogram.record(UInt64(min(max(0, nanoseconds), 86_400_000_000_000)))
    }

    /// Adds every duration `other` recorded.
    ///
    /// Bucket by bucket through the histogram's (inlinable, so specialised) iterator, each at the value that stands
    /// for it in an encoded recorder — the largest keeping its own — rather than through `Histogram.add`, whose
    /// generic loop over every bucket, empty or not, cost a live view a millisecond a merge.
    public mutating func merge(_ other: LatencyRecorder) {
        let largest = other.histogram.maxRecorded
        for bucket in other.histogram.recordedValues() {
            _ = histogram.record(Swift.min(bucket.value, largest), count: bucket.count)
        }
    }

    /// What was recorded since `earlier`, a copy of this recorder taken before: the durations of the window from
    /// then to now (a run's steady state, apart from its warm-up).
    public func since(_ earlier: LatencyRecorder) -> LatencyRecorder {
        var later = LatencyRecorder()
        // The earlier counts, bucket by bucket (each bucket's highest equivalent value), read in one pass.
        var before: [UInt64: UInt64] = [:]
        for bucket in earlier.histogram.recordedValues() { before[bucket.value] = bucket.count }
        // Each bucket by the value that stands for it in an encoded recorder (the largest keeps its own value), so
        // that a window holding every duration is the recorder itself.
        let largest = histogram.maxRecorded
        for bucket in histogram.recordedValues() {
            let before = before[bucket.value] ?? 0
            guard bucket.count > before else { continue }
            let value = min(histogram.highestEquivalentForValue(bucket.value), largest)
            _ = later.histogram.record(value, count: bucket.count - before)
        }
        return later
    }

    /// Calls `body` with each non-empty bucket: a duration that stands for it (nanoseconds) and how many it holds,
    /// smallest first.
    public func forEachBucket(_ body: (_ nanoseconds: Int64, _ count: Int) -> Void) {
        for bucket in buckets { body(Int64(bucket[0]), Int(bucket[1])) }
    }

    /// How many durations lie at or under each of `bounds` (nanoseconds, ascending), as a Prometheus histogram's
    /// buckets count them, with the sum of all: one pass over the recorded buckets, each bucket at the value that stands
    /// for it (so a duration within 0.1 % of a bound may count in the bucket above it).
    public func cumulativeCounts(atNanoseconds bounds: [Int64]) -> (counts: [Int], total: Int, sumNanoseconds: Double) {
        var counts = [Int](repeating: 0, count: bounds.count)
        var total = 0
        var sum = 0.0
        var first = 0
        for (value, count) in buckets.map({ (Int64($0[0]), Int($0[1])) }) {
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
    public var count: Int { Int(histogram.totalCount) }

    /// The percentiles of what was recorded.
    public var summary: LatencySummary {
        guard histogram.totalCount > 0 else { return LatencySummary() }
        let values = values(atPercentiles: [50, 90, 99, 99.9]).map { Double($0) / 1e6 }
        return LatencySummary(
            count: count,
            p50Ms: values[0],
            p90Ms: values[1],
            p99Ms: values[2],
            p999Ms: values[3],
            maxMs: Double(histogram.max) / 1e6
        )
    }

    /// The values at `percentiles` (ascending, each in (0, 100)), as `Histogram.valueAtPercentile` gives them, in one
    /// pass over the recorded buckets through the histogram's inlinable iterator (its own method walks every bucket
    /// through generic code: a millisecond each, where a live view asks for a dozen a second).
    func values(atPercentiles percentiles: [Double]) -> [UInt64] {
        let total = histogram.totalCount
        let largest = histogram.maxRecorded
        let smallest = histogram.min
        // The count each percentile must reach, as HDR computes it (one ulp below, rounded up, at least 1).
        let targets = percentiles.map { percentile in
            let requested = Swift.min(Swift.max(percentile.nextDown, 0), 100)
            return Swift.max(1, UInt64(((requested * Double(total)) / 100).rounded(.up)))
        }
        var results = [UInt64](repeating: 0, count: targets.count)
        var next = 0
        var cumulative: UInt64 = 0
        for bucket in histogram.recordedValues() where next < targets.count {
            cumulative += bucket.count
            while next < targets.count, cumulative >= targets[next] {
                results[next] = Swift.max(Swift.min(bucket.value, largest), smallest)
                next += 1
            }
        }
        return results
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

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let buckets = try container.decode([[UInt64]].self)
        self.init()
        for bucket in buckets {
            guard bucket.count == 2, bucket[0] <= 86_400_000_000_000 else {
                throw DecodingError.dataCorruptedError(
                    in: container,
                    debugDescription: "a latency bucket is [nanoseconds, count] with at most a day's nanoseconds"
                )
            }
            _ = histogram.record(bucket[0], count: bucket[1])
        }
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.buckets == rhs.buckets }

    /// The non-empty buckets: each bucket's highest equivalent value (the largest recorded value, in the bucket that
    /// holds it, so that the maximum and the percentiles that reach it come back exactly) and its count.
    private var buckets: [[UInt64]] {
        let largest = histogram.maxRecorded
        return histogram.recordedValues().map {
            [min(histogram.highestEquivalentForValue($0.value), largest), UInt64($0.count)]
        }
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
