import RoomLink
import RoomLinkRuntime
import RoomLinkTestSupport
import Testing

// A limit to catch hangs, not to time anything: ThreadSanitizer on two shared cores runs these several times slower.
@Suite(.hangLimit(minutes: 10))
struct EventQueueTests {
    @Test
    func theQueueGetsWhatTheStreamGetsInOrderAndEndsWithThePublisher() async {
        var publisher = EventPublisher<String>()
        let stream = publisher.events()
        let queue = publisher.queue()
        #expect(publisher.queue() === queue, "made once")
        for index in 0..<1_000 { publisher.publish("e\(index)", from: "A", at: .zero) }
        publisher.finish()
        var fromQueue: [Stamped<String>] = []
        for await event in queue { fromQueue.append(event) }
        var fromStream: [Stamped<String>] = []
        for await event in stream { fromStream.append(event) }
        #expect(fromQueue == fromStream)
        #expect(fromQueue.map(\.sequence) == Array(0..<1_000))
    }

    @Test
    func aWaitingConsumerIsResumedByTheNextEventAndByTheEnd() async {
        var publisher = EventPublisher<Int>()
        let queue = publisher.queue()
        let consumer = Task {
            var seen: [Int] = []
            for await event in queue { seen.append(event.event) }
            return seen
        }
        // Let the consumer park, then feed it one event at a time.
        while !queue.hasWaitingConsumer { await Task.yield() }
        for value in 1...50 {
            publisher.publish(value, from: "A", at: .zero)
            await Task.yield()
        }
        publisher.finish()
        #expect(await consumer.value == Array(1...50))
    }

    /// A consumer parked in `next()` whose task is cancelled returns `nil` at once — no event has to arrive to wake
    /// it — and what is sent afterwards waits, buffered, for the next consumer.
    @Test
    func aCancelledWaitingConsumerEndsAtOnceAndNothingIsLost() async {
        var publisher = EventPublisher<Int>()
        let queue = publisher.queue()
        publisher.publish(1, from: "A", at: .zero)
        let consumer = Task { () -> [Int] in
            var seen: [Int] = []
            for await event in queue { seen.append(event.event) }
            return seen
        }
        while !queue.hasWaitingConsumer { await Task.yield() }
        consumer.cancel()
        #expect(await consumer.value == [1], "the loop ended on cancellation, with no further event")
        #expect(!queue.hasWaitingConsumer)
        publisher.publish(2, from: "A", at: .zero)
        publisher.publish(3, from: "A", at: .zero)
        publisher.finish()
        var rest: [Int] = []
        for await event in queue { rest.append(event.event) }
        #expect(rest == [2, 3])
    }

    /// A consumer cancelled before it calls `next()` takes what is buffered, then ends instead of parking.
    @Test
    func aConsumerCancelledBeforeWaitingTakesTheBufferThenEnds() async {
        var publisher = EventPublisher<Int>()
        let queue = publisher.queue()
        publisher.publish(1, from: "A", at: .zero)
        let gate = LockedBox(false)
        let consumer = Task { () -> [Int] in
            while !gate.withLock({ $0 }) { await Task.yield() }
            var seen: [Int] = []
            for await event in queue { seen.append(event.event) }
            return seen
        }
        consumer.cancel()
        gate.withLock { $0 = true }
        #expect(await consumer.value == [1])
        #expect(!queue.hasWaitingConsumer)
    }

    @Test
    func aSecondConcurrentConsumerEndsAtOnceInsteadOfStealing() async {
        var publisher = EventPublisher<Int>()
        let queue = publisher.queue()
        let first = Task { () -> [Int] in
            var seen: [Int] = []
            for await event in queue { seen.append(event.event) }
            return seen
        }
        while !queue.hasWaitingConsumer { await Task.yield() }
        var second = queue.makeAsyncIterator()
        #expect(await second.next() == nil, "the misuse ends the second loop, it does not hang")
        publisher.publish(7, from: "A", at: .zero)
        publisher.finish()
        #expect(await first.value == [7])
    }

    @Test
    func aQueueMadeAfterTheEndIsAlreadyOver() async {
        var publisher = EventPublisher<Int>()
        publisher.finish()
        let queue = publisher.queue()
        var iterator = queue.makeAsyncIterator()
        #expect(await iterator.next() == nil)
    }

    @Test
    func aQueueSinkFunnelsEveryClientIntoOneConsumerInOrder() async {
        let sink = EventQueueSink<Int>()
        var a = EventPublisher<Int>(sink: sink)
        var b = EventPublisher<Int>(sink: sink)
        a.publish(1, from: "A", at: .zero)
        b.publish(2, from: "B", at: .zero)
        a.publish(3, from: "A", at: .zero)
        sink.finish()
        var seen: [String] = []
        for await record in sink.records {
            seen.append("\(record.client):\(record.event.sequence):\(record.event.event)")
        }
        #expect(seen == ["A:0:1", "B:0:2", "A:1:3"])
    }

    @Test
    func aClientsEventQueueCarriesWhatItsStreamCarries() async throws {
        try await SimulationRuntime.withSimulation(seed: 1) { simulation in
            try await simulation.run {
                let network = SimulatedNetwork()
                _ = RoomServer(group: simulation, transport: network)
                let client = ZegoClient(id: "A", loop: simulation, environment: .init(transport: network))
                let stream = await client.events()
                let queue = await client.eventQueue()
                await client.loginRoom("r1")
                try await simulation.sleep(for: .seconds(1))
                await client.shutdown()
                var fromStream: [Stamped<ZegoEvent>] = []
                for await event in stream { fromStream.append(event) }
                var fromQueue: [Stamped<ZegoEvent>] = []
                for await event in queue { fromQueue.append(event) }
                #expect(fromQueue.count == 2)
                #expect(fromQueue == fromStream)
            }
        }
    }
}
