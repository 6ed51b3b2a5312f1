import RoomLink
import RoomLinkRuntime
import RoomLinkTestSupport
import Testing

/// A sink that keeps everything, for tests.
final class CollectingSink: EventSink {
    let recorded = LockedBox<[String]>([])
    func record(_ event: Stamped<String>, from client: String) {
        recorded.withLock { $0.append("\(client):\(event.sequence):\(event.event)") }
    }
}

// A limit to catch hangs, not to time anything: ThreadSanitizer on two shared cores runs these several times slower.
@Suite(.hangLimit(minutes: 10))
struct EventPublisherTests {
    static func at(_ ms: Int64) -> RuntimeInstant { .zero.advanced(by: .milliseconds(ms)) }

    @Test
    func eventsArriveInOrderStampedWithTheirTimeAndSequence() async {
        var publisher = EventPublisher<String>()
        let stream = publisher.events()
        publisher.publish("logining", from: "A", at: Self.at(0))
        publisher.publish("logined", from: "A", at: Self.at(120))
        publisher.publish("reconnecting", from: "A", at: Self.at(10_000))
        publisher.finish()
        var received: [Stamped<String>] = []
        for await event in stream { received.append(event) }
        #expect(
            received == [
                Stamped(time: Self.at(0), sequence: 0, event: "logining"),
                Stamped(time: Self.at(120), sequence: 1, event: "logined"),
                Stamped(time: Self.at(10_000), sequence: 2, event: "reconnecting"),
            ]
        )
        #expect(publisher.droppedCount == 0)
    }

    @Test
    func theStreamIsMadeOnceAndCarriesEventsFromItsCreationOn() async {
        var publisher = EventPublisher<String>()
        publisher.publish("before", from: "A", at: Self.at(0))  // nobody subscribed: not buffered anywhere
        let first = publisher.events()
        let second = publisher.events()
        publisher.publish("after", from: "A", at: Self.at(1))
        publisher.finish()
        var received: [Stamped<String>] = []
        for await event in first { received.append(event) }
        #expect(received.map(\.event) == ["after"])
        #expect(received.map(\.sequence) == [1], "the sequence shows the event the stream missed")
        var fromSecond = 0
        for await _ in second { fromSecond += 1 }
        #expect(fromSecond == 0, "the same unicast stream, already drained")
    }

    @Test
    func aBoundedBufferCountsWhatItDrops() async {
        var publisher = EventPublisher<String>(bufferingPolicy: .bufferingOldest(2))
        let stream = publisher.events()
        for i in 0..<5 { publisher.publish("e\(i)", from: "A", at: Self.at(Int64(i))) }
        publisher.finish()
        var received: [String] = []
        for await event in stream { received.append(event.event) }
        #expect(received == ["e0", "e1"])
        #expect(publisher.droppedCount == 3)
        #expect(publisher.publishedCount == 5)
    }

    @Test
    func finishingEndsTheStreamAndLaterEventsCountAsDropped() async {
        var publisher = EventPublisher<String>()
        publisher.finish()
        publisher.publish("late", from: "A", at: Self.at(0))
        #expect(publisher.droppedCount == 1)
        var count = 0
        for await _ in publisher.events() { count += 1 }
        #expect(count == 0, "a stream made after finish is already finished")
    }

    @Test
    func aSharedSinkRecordsEveryEventOfEveryClientWithoutAStream() {
        let sink = CollectingSink()
        var a = EventPublisher<String>(sink: sink)
        var b = EventPublisher<String>(sink: sink)
        a.publish("logining", from: "A", at: Self.at(0))
        b.publish("logining", from: "B", at: Self.at(0))
        a.publish("logined", from: "A", at: Self.at(120))
        #expect(sink.recorded.withLock { $0 } == ["A:0:logining", "B:0:logining", "A:1:logined"])
    }
}
