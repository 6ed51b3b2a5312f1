import Foundation
import Histogram
import RoomLinkRuntime
import Testing

/// `LatencyRecorder`'s one-pass percentiles, merge and window give what hdrhistogram-swift's own methods give —
/// the referee — on random samples of every shape, in its whole and its compact form, and its encoding round-trips.
struct LatencyRecorderTests {
    /// The same durations in a `LatencyRecorder` and in a histogram of the same settings, `Histogram.add` and
    /// `valueAtPercentile` being the reference.
    static func samples(seed: UInt64, count: Int) -> [Int64] {
        var generator = SplitMix(seed)
        let scale = [1_000, 1_000_000, 50_000_000, 5_000_000_000][Int(seed % 4)]
        return (0..<count).map { _ in
            // Log-uniform with spikes: values from nanoseconds to seconds, some repeated exactly.
            let draw = Double(generator.next() % 10_000) / 10_000
            return generator.next() % 10 == 0 ? Int64(scale) : Int64(Double(scale) * pow(10, 3 * draw - 2))
        }
    }

    static func reference(_ values: [Int64]) -> Histogram<UInt64> {
        var histogram = Histogram<UInt64>(
            highestTrackableValue: 86_400_000_000_000,
            numberOfSignificantValueDigits: .three
        )
        for value in values { _ = histogram.record(UInt64(max(0, value))) }
        return histogram
    }

    @Test(arguments: 0..<24)
    func percentilesAreHDRsOwn(seed: UInt64) {
        let values = Self.samples(seed: seed, count: 1 + Int(seed * 37 % 500))
        var recorder = LatencyRecorder()
        for value in values { recorder.record(nanoseconds: value) }
        let reference = Self.reference(values)
        let summary = recorder.summary
        #expect(summary.count == values.count)
        #expect(summary.p50Ms == Double(reference.valueAtPercentile(50)) / 1e6)
        #expect(summary.p90Ms == Double(reference.valueAtPercentile(90)) / 1e6)
        #expect(summary.p99Ms == Double(reference.valueAtPercentile(99)) / 1e6)
        #expect(summary.p999Ms == Double(reference.valueAtPercentile(99.9)) / 1e6)
        #expect(summary.maxMs == Double(reference.max) / 1e6)
    }

    @Test(arguments: 0..<12)
    func mergeIsHDRsAddAndSinceUndoesIt(seed: UInt64) throws {
        let first = Self.samples(seed: seed, count: 300)
        let second = Self.samples(seed: seed + 100, count: 200)
        var merged = LatencyRecorder()
        for value in first { merged.record(nanoseconds: value) }
        var other = LatencyRecorder()
        for value in second { other.record(nanoseconds: value) }
        let before = merged
        merged.merge(other)
        var reference = Self.reference(first)
        reference.add(Self.reference(second))
        let summary = merged.summary
        #expect(summary.count == first.count + second.count)
        for (mine, percentile) in [(summary.p50Ms, 50.0), (summary.p90Ms, 90), (summary.p99Ms, 99)] {
            #expect(mine == Double(reference.valueAtPercentile(percentile)) / 1e6, "p\(percentile)")
        }
        #expect(summary.maxMs == Double(reference.max) / 1e6)
        // What came after `before` is `other`, bucket for bucket (each window's largest value is the one it can
        // know: the whole recorder's).
        func counts(_ recorder: LatencyRecorder) -> [Int] {
            var counts: [Int] = []
            recorder.forEachBucket { _, count in counts.append(count) }
            return counts
        }
        #expect(counts(merged.since(before)) == counts(other))
        #expect(merged.since(before).count == other.count)
        #expect(merged.since(LatencyRecorder()) == merged)
        // Encoded and decoded, the same recorder.
        let decoded = try JSONDecoder().decode(LatencyRecorder.self, from: JSONEncoder().encode(merged))
        #expect(decoded == merged && decoded.summary == summary)
    }
}

extension LatencyRecorderTests {
    @Test(arguments: 0..<12)
    func prometheusBucketsCountWhatLiesUnderEachBound(seed: UInt64) {
        let values = Self.samples(seed: seed, count: 400)
        var recorder = LatencyRecorder()
        for value in values { recorder.record(nanoseconds: value) }
        let bounds: [Int64] = [1_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000, 10_000_000_000]
        let (counts, total, sum) = recorder.cumulativeCounts(atNanoseconds: bounds)
        #expect(total == values.count)
        #expect(counts == counts.sorted(), "cumulative")
        for (bound, count) in zip(bounds, counts) {
            // Exact but for the durations within HDR's resolution (0.1 %) of the bound, which may count above it.
            let under = values.filter { $0 <= bound }.count
            let near = values.filter { abs(Double($0 - bound)) <= Double(bound) * 0.001 }.count
            #expect(count <= under && count >= under - near, "≤ \(bound) ns: \(count), exactly \(under)")
        }
        let exactSum = values.reduce(0.0) { $0 + Double(max(0, $1)) }
        #expect(abs(sum - exactSum) <= exactSum * 0.001 + 1, "the sum to HDR's resolution")
    }
}

extension LatencyRecorderTests {
    /// A compact recorder — what a live view reads, and what decoding gives — answers every question as the whole
    /// histogram it came from does, merges as it does (with whole and compact recorders alike), and recording into it
    /// gives what recording into the whole one gives: the same buckets, percentiles, largest and smallest duration.
    @Test(arguments: 0..<16)
    func aCompactRecorderAnswersAsTheWholeOne(seed: UInt64) throws {
        let values = Self.samples(seed: seed, count: 1 + Int(seed * 53 % 400))
        let more = Self.samples(seed: seed + 200, count: 1 + Int(seed * 29 % 300))
        var whole = LatencyRecorder()
        for value in values { whole.record(nanoseconds: value) }
        var other = LatencyRecorder()
        for value in more { other.record(nanoseconds: value) }
        let compact = whole.compacted()
        let decoded = try JSONDecoder().decode(LatencyRecorder.self, from: JSONEncoder().encode(whole))
        let bounds: [Int64] = [1_000, 1_000_000, 100_000_000, 10_000_000_000]
        for (name, reader) in [("compacted", compact), ("decoded", decoded)] {
            #expect(reader == whole, "\(name)")
            #expect(reader.summary == whole.summary, "\(name)")
            #expect(reader.count == values.count, "\(name)")
            #expect(
                reader.cumulativeCounts(atNanoseconds: bounds) == whole.cumulativeCounts(atNanoseconds: bounds),
                "\(name)"
            )
            #expect(try JSONEncoder().encode(reader) == JSONEncoder().encode(whole), "\(name)")
        }

        // Merged, whole into compact, compact into compact, compact into whole and into nothing: HDR's `add`.
        var reference = Self.reference(values)
        reference.add(Self.reference(more))
        var wholeMerged = whole
        wholeMerged.merge(other)
        var compactMerged = compact
        compactMerged.merge(other.compacted())
        var mixed = compact
        mixed.merge(other)
        var intoWhole = whole
        intoWhole.merge(other.compacted())
        var intoNothing = LatencyRecorder()
        intoNothing.merge(compact)
        #expect(intoNothing == whole && intoNothing.summary == whole.summary)
        for merged in [compactMerged, mixed, intoWhole] {
            #expect(merged == wholeMerged)
            #expect(merged.summary == wholeMerged.summary)
            #expect(merged.summary.p99Ms == Double(reference.valueAtPercentile(99)) / 1e6)
            #expect(merged.summary.maxMs == Double(reference.max) / 1e6)
        }

        // Recorded into, a compact recorder takes the whole form with the same durations; a window over it is the
        // whole recorder's window.
        var grown = compact
        var grownWhole = whole
        for value in more {
            grown.record(nanoseconds: value)
            grownWhole.record(nanoseconds: value)
        }
        #expect(grown == grownWhole && grown.summary == grownWhole.summary)
        #expect(grownWhole.compacted().since(compact) == grownWhole.since(whole))
        // The smallest duration comes back too: below every other, it is the 0th percentile's floor.
        var smallestFirst = LatencyRecorder()
        smallestFirst.record(nanoseconds: 7)
        smallestFirst.record(nanoseconds: 7_000_000)
        var expanded = smallestFirst.compacted()
        expanded.record(nanoseconds: 7_000_000)
        smallestFirst.record(nanoseconds: 7_000_000)
        #expect(expanded == smallestFirst && expanded.summary == smallestFirst.summary)
        // The source, recorded into after the copy, leaves the copy as it was.
        whole.record(nanoseconds: 1)
        #expect(compact.count == values.count && whole.count == values.count + 1)
    }

    /// A recorder read again and again through `snapshot()` — which then keeps what it records until the next read —
    /// gives each time what a walk over its whole histogram gives: with nothing, a few, many and more than a
    /// journal's worth of durations between two reads, and merges among them.
    @Test(arguments: 0..<6)
    func snapshotsTakenAgainAndAgainAreTheWholeRecorder(seed: UInt64) {
        var generator = SplitMix(seed)
        var recorder = LatencyRecorder()
        for round in 0..<10 {
            let count = [0, 1, 5, 300, LatencyRecorder.journalLimit + 1][Int(generator.next() % 5)]
            for value in Self.samples(seed: seed &* 100 &+ UInt64(round), count: count) {
                recorder.record(nanoseconds: value)
            }
            if generator.next() % 4 == 0 {
                var other = LatencyRecorder()
                for value in Self.samples(seed: seed &+ 500, count: 20) { other.record(nanoseconds: value) }
                recorder.merge(generator.next() % 2 == 0 ? other : other.compacted())
            }
            let snapshot = recorder.snapshot()
            #expect(snapshot == recorder && snapshot == recorder.compacted(), "round \(round)")
            #expect(snapshot.summary == recorder.summary, "round \(round)")
            #expect(snapshot.count == recorder.count, "round \(round)")
        }
    }

    /// Decoding takes the buckets as given, in any order and with repeats, and refuses what no recorder could hold.
    @Test func decodingAddsRepeatedBucketsAndRefusesCountsBeyondUInt64() throws {
        let decoded = try JSONDecoder().decode(
            LatencyRecorder.self,
            from: Data("[[5000,2],[10,1],[5000,3],[20,0]]".utf8)
        )
        var recorded = LatencyRecorder()
        recorded.record(nanoseconds: 10)
        for _ in 0..<5 { recorded.record(nanoseconds: 5000) }
        #expect(decoded == recorded && decoded.summary == recorded.summary)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(LatencyRecorder.self, from: Data("[[1,18446744073709551615],[2,1]]".utf8))
        }
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(LatencyRecorder.self, from: Data("[[86400000000001,1]]".utf8))
        }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(LatencyRecorder.self, from: Data("[[1]]".utf8)) }
    }
}

/// SplitMix64: a seeded generator for the samples.
private struct SplitMix {
    var state: UInt64
    init(_ seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
