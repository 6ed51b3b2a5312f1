import AsyncAlgorithms
import Foundation
import Histogram
import RoomLink
import Synchronization

/// How a client's events reach their consumer.
enum DeliveryMechanism: String, CaseIterable, Sendable {
    /// RoomLink's `EventPublisher`: an unbounded `AsyncStream`, what `ZegoClient.events()` returns.
    case asyncStream = "AsyncStream (EventPublisher)"
    /// swift-async-algorithms' `AsyncChannel`: the producer awaits each hand-over (back-pressure).
    case asyncChannel = "AsyncChannel (async-algorithms)"
    /// RoomLink's `EventQueue` through `EventPublisher.queue()` (`ZegoClient.eventQueue()`): a lock and one
    /// continuation.
    case eventQueue = "EventQueue (EventPublisher)"
    /// Every client's publisher records into one `EventQueueSink`: one consumer for all clients.
    case fanIn = "EventQueueSink (one consumer)"
}

/// Where the consumers run.
enum ConsumerPlacement: String, CaseIterable, Sendable {
    /// On the producer's loop, as a task preferring it: RoomLink's design (no thread crossing).
    case loop
    /// On the global concurrent executor, as an app's own code would be.
    case global
}

/// One delivery case's result.
struct DeliveryResult: Codable, Sendable {
    var kind = "delivery"
    var mechanism: String
    var consumers: String
    var clients: Int
    /// Producer loops (threads); clients are spread over them.
    var loops: Int
    /// `rate` when paced (events per second asked for, in total), `flood` when producers publish flat out.
    var mode: String
    var events: Int
    /// Events delivered per wall second, in total.
    var eventsPerSecond: Double
    /// From `publish` (the engine's decision, stamped with the loop's clock) to the consumer's loop body.
    var latencyP50Us: Double
    var latencyP99Us: Double
    var latencyP999Us: Double
    var latencyMaxUs: Double
    /// Process CPU per delivered event (producer, consumer and everything else; a paced producer spins between
    /// events, so compare this in flood runs).
    var cpuPerEventNs: Double
}

/// Delivery: a state change from the moment the engine publishes it to the consumer's `for await` body.
///
/// The producer is a task on a libevent loop (where client actors publish); consumers are one task per client on
/// the global executor, as an app's code would be. Paced runs publish each event at its due time (evenly spaced at
/// the rate, round-robin over the clients); flood runs publish as fast as the mechanism takes events.
enum DeliveryCases {
    static func run(
        mechanism: DeliveryMechanism,
        placement: ConsumerPlacement,
        clients: Int,
        rate: Int?,
        seconds: Double,
        floodEvents: Int,
        loops loopCount: Int
    ) async throws -> DeliveryResult {
        try await LibeventLoopGroup.withLoopGroup(configuration: .init(loopCount: loopCount)) { group in
            let loops = group.eventLoops
            let recorder = LatencyRecorder(group: group)
            let total = rate.map { Int(Double($0) * seconds) } ?? floodEvents
            let fanIn = EventQueueSink<ZegoEvent>()
            let channels = (0..<clients).map { Channels(mechanism: mechanism, client: "c\($0)", fanIn: fanIn) }

            // Consumers first, each waiting in its `for await`. (Unstructured tasks: a task group of 100k children
            // completes in quadratic time on this toolchain.)
            // Client `i` publishes from loop `i mod loops`; its consumer runs there too when placed on the loop.
            let consumers = (mechanism == .fanIn ? [channels[0]] : channels).enumerated().map { index, channel in
                switch placement {
                case .loop: Task(executorPreference: loops[index % loops.count]) { await channel.consume(recorder) }
                case .global: Task { await channel.consume(recorder) }
                }
            }
            try await Task.sleep(for: .milliseconds(200 + clients / 500))  // let 100k consumers reach `for await`

            let cpuStart = ProcessCPU.now()
            let wallStart = ContinuousClock.now
            // With fewer clients than loops, only the loops that have a client produce.
            let active = min(loops.count, channels.count)
            let producers = loops.prefix(active).enumerated().map { index, loop in
                let mine = Array(channels[index...].enumerated().filter { $0.offset % loops.count == 0 }.map(\.element))
                let share = total / active + (index < total % active ? 1 : 0)
                let pace = rate.map { $0 / active }
                return Task(executorPreference: loop) {
                    try await produce(on: loop, channels: mine, total: share, rate: pace, yieldEach: placement == .loop)
                }
            }
            for producer in producers { try await producer.value }
            await recorder.waitFor(total)
            let wall = ContinuousClock.now - wallStart
            let cpu = ProcessCPU.now() - cpuStart
            for (index, channel) in channels.enumerated() { await channel.finish(on: loops[index % loops.count]) }
            fanIn.finish()
            for consumer in consumers { await consumer.value }
            let latency = recorder.percentilesMicroseconds()
            return DeliveryResult(
                mechanism: mechanism.rawValue,
                consumers: placement.rawValue,
                clients: clients,
                loops: loopCount,
                mode: rate.map { "\($0)/s" } ?? "flood",
                events: total,
                eventsPerSecond: Double(total) / wall.seconds,
                latencyP50Us: latency.p50,
                latencyP99Us: latency.p99,
                latencyP999Us: latency.p999,
                latencyMaxUs: latency.max,
                cpuPerEventNs: Double(cpu) / Double(total)
            )
        }
    }

    /// Publishes `total` events round-robin over `channels`: paced evenly at `rate` per second (each event when its
    /// due time comes; the producer spins between events, so it occupies its loop), or flat out in batches of 1,000
    /// (yielding between batches) when `rate` is nil. With consumers on the loop, a paced producer yields after each
    /// event, so the consumer runs as soon as its event is out (as it would after an actor's timer handler returns).
    private static func produce(
        on loop: any RuntimeLoop,
        channels: [Channels],
        total: Int,
        rate: Int?,
        yieldEach: Bool
    ) async throws {
        var sent = 0
        var next = 0
        let start = loop.now.nanoseconds
        while sent < total {
            let batch: Int
            if let rate {
                let elapsed = Double(loop.now.nanoseconds - start) / 1e9
                batch = min(total, Int(elapsed * Double(rate)) + 1) - sent
            } else {
                batch = min(1_000, total - sent)
            }
            for _ in 0..<max(0, batch) {
                await channels[next].publish(sequence: sent, on: loop)
                sent += 1
                next = next + 1 == channels.count ? 0 : next + 1
                if yieldEach, rate != nil { await Task.yield() }
            }
            if rate == nil || sent % 4_096 == 0 || (yieldEach && batch <= 0) { await Task.yield() }
        }
    }
}

/// One client's channel in each mechanism; the producer side is used on the loop only.
final class Channels: @unchecked Sendable {
    // Safe: `publisher` is mutated only by the producer task, which runs on the one loop (and by `finish`, which
    // runs there too); `stream` and `queue` were made in `init`, before any task started, and are Sendable.
    let mechanism: DeliveryMechanism
    private var publisher: EventPublisher<ZegoEvent>
    private let client: String
    private let stream: AsyncStream<Stamped<ZegoEvent>>?
    private let queue: EventQueue<Stamped<ZegoEvent>>?
    private let fanIn: EventQueueSink<ZegoEvent>
    private let asyncChannel = AsyncChannel<Stamped<ZegoEvent>>()
    private let event: ZegoEvent

    init(mechanism: DeliveryMechanism, client: String, fanIn: EventQueueSink<ZegoEvent>) {
        self.mechanism = mechanism
        self.fanIn = fanIn
        self.client = client
        publisher = EventPublisher(sink: mechanism == .fanIn ? fanIn : nil)
        // Only the mechanism measured is made, so publishing pays for nothing else.
        stream = mechanism == .asyncStream ? publisher.events() : nil
        queue = mechanism == .eventQueue ? publisher.queue() : nil
        event = .roomStateChanged(
            roomID: "r1",
            reason: .reconnecting,
            errorCode: .connectionInterrupted,
            extendedData: [:]
        )
    }

    func publish(sequence: Int, on loop: any RuntimeLoop) async {
        switch mechanism {
        case .asyncStream, .eventQueue, .fanIn:
            publisher.publish(event, from: client, at: loop.now)
        case .asyncChannel:
            await asyncChannel.send(Stamped(time: loop.now, sequence: UInt64(sequence), event: event))
        }
    }

    func consume(_ recorder: LatencyRecorder) async {
        switch mechanism {
        case .asyncStream: for await event in stream! { recorder.record(event.time) }
        case .eventQueue: for await event in queue! { recorder.record(event.time) }
        case .fanIn: for await record in fanIn.records { recorder.record(record.event.time) }
        case .asyncChannel: for await event in asyncChannel { recorder.record(event.time) }
        }
    }

    func finish(on loop: any RuntimeLoop) async {
        switch mechanism {
        case .asyncStream, .eventQueue, .fanIn:
            await withCheckedContinuation { done in
                _ = try? loop.schedule(after: .zero) {
                    self.publisher.finish()
                    done.resume()
                }
            }
        case .asyncChannel: asyncChannel.finish()
        }
    }
}

/// Latencies of delivered events (clock of the loop group, which stamped them) and a count that ends the case.
final class LatencyRecorder: Sendable {
    private let group: LibeventLoopGroup
    private let histogram = Mutex(
        Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
    )
    private let delivered = Atomic<Int>(0)

    init(group: LibeventLoopGroup) {
        self.group = group
    }

    func record(_ stamped: RuntimeInstant) {
        let latency = max(0, group.now.nanoseconds - stamped.nanoseconds)
        histogram.withLock { _ = $0.record(UInt64(latency)) }
        delivered.add(1, ordering: .releasing)
    }

    func waitFor(_ count: Int) async {
        while delivered.load(ordering: .acquiring) < count { try? await Task.sleep(for: .milliseconds(2)) }
    }

    func percentilesMicroseconds() -> (p50: Double, p99: Double, p999: Double, max: Double) {
        histogram.withLock { h in
            (
                Double(h.valueAtPercentile(50)) / 1_000, Double(h.valueAtPercentile(99)) / 1_000,
                Double(h.valueAtPercentile(99.9)) / 1_000, Double(h.max) / 1_000
            )
        }
    }
}
