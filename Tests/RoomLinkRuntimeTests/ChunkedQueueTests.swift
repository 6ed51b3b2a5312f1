import Testing

@_spi(RoomLinkInternals) @testable import RoomLinkRuntime

/// The lanes' FIFO: first in, first out across its chunks, read in place, and every item released exactly once.
@Suite
struct ChunkedQueueTests {
    /// Counts the instances alive, to see that the queue neither leaks an item nor releases one twice.
    final class Tracked {
        final class Counter {
            var alive = 0
        }
        let value: Int
        let counter: Counter
        init(_ value: Int, _ counter: Counter) {
            self.value = value
            self.counter = counter
            counter.alive += 1
        }
        deinit { counter.alive -= 1 }
    }

    @Test
    func itemsComeOutInTheOrderTheyWentInAcrossChunks() {
        var queue = ChunkedQueue<Int>()
        let perChunk = ChunkedQueue<Int>.chunkCapacity
        let startsEmpty = queue.isEmpty
        #expect(startsEmpty)
        // Fill and drain unevenly, so that the front and the back cross chunk boundaries at different times.
        var next = 0
        var expected = 0
        for round in 0..<6 {
            for _ in 0..<(perChunk * 2 + 7 * round) {
                queue.append(next)
                next += 1
            }
            for _ in 0..<(perChunk + 3 * round) {
                #expect(queue.removeFirst() == expected)
                expected += 1
            }
            let count = queue.count
            #expect(count == next - expected)
        }
        while !queue.isEmpty {
            #expect(queue.removeFirst() == expected)
            expected += 1
        }
        #expect(expected == next)
        #expect(queue.peek { $0.pointee } == nil)
        // Usable again once empty.
        queue.append(-1)
        #expect(queue.peek { $0.pointee } == -1)
        #expect(queue.removeFirst() == -1)
    }

    @Test
    func peekReadsAnyPlaceBehindTheFrontAcrossChunks() {
        var queue = ChunkedQueue<Int>()
        let perChunk = ChunkedQueue<Int>.chunkCapacity
        for value in 0..<(perChunk * 3) { queue.append(value) }
        for _ in 0..<(perChunk - 2) { _ = queue.removeFirst() }
        // The front is two places before the end of the first chunk.
        #expect(queue.peek { $0.pointee } == perChunk - 2)
        for offset in [1, 2, 3, 4, perChunk, perChunk * 2 + 1] {
            #expect(queue.peek(at: offset) { $0.pointee } == perChunk - 2 + offset)
        }
        #expect(queue.peek(at: queue.count) { $0.pointee } == nil)
        #expect(queue.peek(at: -1) { $0.pointee } == nil)
    }

    @Test
    func aScanStopsAtTheFirstItemItRefuses() {
        var queue = ChunkedQueue<Int>()
        let perChunk = ChunkedQueue<Int>.chunkCapacity
        for value in 0..<(perChunk * 2 + 5) { queue.append(value) }
        var seen: [Int] = []
        queue.scan { value in
            guard value.pointee < perChunk + 3 else { return false }
            seen.append(value.pointee)
            return true
        }
        #expect(seen == Array(0..<(perChunk + 3)))
        var all = 0
        queue.scan { _ in
            all += 1
            return true
        }
        let count = queue.count
        #expect(all == count)
    }

    @Test
    func everyItemIsReleasedOnceWhenItLeavesOrTheQueueGoes() {
        let counter = Tracked.Counter()
        let perChunk = ChunkedQueue<Tracked>.chunkCapacity
        do {
            var queue = ChunkedQueue<Tracked>()
            for value in 0..<(perChunk * 3 + 1) { queue.append(Tracked(value, counter)) }
            #expect(counter.alive == perChunk * 3 + 1)
            for value in 0..<(perChunk + 1) {
                let item = queue.removeFirst()
                #expect(item.value == value)
            }
            // What left is released at once, not when its chunk goes.
            #expect(counter.alive == perChunk * 2)
            #expect(queue.peek(at: 3) { $0.pointee.value } == perChunk + 4)
            #expect(counter.alive == perChunk * 2)
        }
        // Dropping the queue releases what it still held.
        #expect(counter.alive == 0)
    }
}
