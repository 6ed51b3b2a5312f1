import RoomLink
import RoomLinkTestSupport
import Testing

@Suite(.hangLimit(minutes: 10))
struct NetworkModelTests {
    static let conditions = Scenario.Network(latency: .milliseconds(50), jitter: .milliseconds(20), loss: 0.1)

    @Test
    func deliveredMessagesTakeTheLatencyPlusAtMostTheJitter() {
        var network = NetworkModel(conditions: .init(latency: .milliseconds(50), jitter: .milliseconds(20)), seed: 1)
        var delays: Set<Duration> = []
        for _ in 0..<1_000 {
            guard case .delivered(let delay) = network.transit(for: "A") else {
                Issue.record("a lossless up link lost a message")
                return
            }
            #expect(delay >= .milliseconds(50) && delay <= .milliseconds(70))
            delays.insert(delay)
        }
        #expect(delays.count > 100, "jitter should vary the delay")
        var exact = NetworkModel(conditions: .init(latency: .milliseconds(50)), seed: 1)
        #expect(exact.transit(for: "A") == .delivered(after: .milliseconds(50)))
    }

    /// A message's key (its sender's clock and identity) is read only when loss or jitter draws from it.
    @Test
    func theKeyIsReadOnlyWhenLossOrJitterNeedsIt() {
        var reads = 0
        func key() -> UInt64 {
            reads += 1
            return 42
        }
        let plain = NetworkModel(conditions: .init(latency: .milliseconds(50)), seed: 1)
        #expect(plain.transit(link: .up, key: key()) == .delivered(after: .milliseconds(50)))
        #expect(reads == 0)
        let lossy = NetworkModel(conditions: .init(latency: .milliseconds(50), loss: 0.5), seed: 1)
        _ = lossy.transit(link: .up, key: key())
        #expect(reads == 1)
    }

    @Test
    func lossDropsAboutItsShareOfMessages() {
        var network = NetworkModel(conditions: Self.conditions, seed: 7)
        let lost = (0..<10_000).filter { _ in network.transit(for: "A") == .lost }.count
        #expect((900...1_100).contains(lost), "lost \(lost) of 10,000 at 10 % loss")
    }

    @Test
    func aDownLinkRefusesABlackholeLosesAndUpDeliversAgain() {
        var network = NetworkModel(conditions: .init(), seed: 1)
        network.setLink(.down, for: "A")
        #expect(network.transit(for: "A") == .refused)
        #expect(network.transit(for: "B") == .delivered(after: .milliseconds(50)), "other clients are unaffected")
        network.setLink(.blackhole, for: "A")
        #expect(network.link(of: "A") == .blackhole)
        #expect(network.transit(for: "A") == .lost)
        network.setLink(.up, for: "A")
        #expect(network.transit(for: "A") == .delivered(after: .milliseconds(50)))
    }

    @Test
    func aClientsFateDependsOnTheSeedNotOnOtherClientsMessages() {
        var alone = NetworkModel(conditions: Self.conditions, seed: 3)
        let aloneFates = (0..<200).map { _ in alone.transit(for: "A") }
        var interleaved = NetworkModel(conditions: Self.conditions, seed: 3)
        let interleavedFates = (0..<200).map { i -> Transit in
            for _ in 0..<(i % 3) { _ = interleaved.transit(for: "B") }
            return interleaved.transit(for: "A")
        }
        #expect(aloneFates == interleavedFates)
        var otherSeed = NetworkModel(conditions: Self.conditions, seed: 4)
        #expect(aloneFates != (0..<200).map { _ in otherSeed.transit(for: "A") })
    }

    @Test
    func aKeyedFateDependsOnTheKeyAloneAndHasTheConditionsShape() {
        let network = NetworkModel(conditions: Self.conditions, seed: 11)
        let fates = (0..<20_000).map { network.transit(link: .up, key: UInt64($0)) }
        #expect(fates == (0..<20_000).map { network.transit(link: .up, key: UInt64($0)) }, "same key, same fate")
        let lost = fates.filter { $0 == .lost }.count
        #expect((1_700...2_300).contains(lost), "lost \(lost) of 20,000 at 10 % loss")
        var delays: Set<Duration> = []
        for case .delivered(let delay) in fates {
            #expect(delay >= .milliseconds(50) && delay <= .milliseconds(70))
            delays.insert(delay)
        }
        #expect(delays.count > 1_000, "jitter should vary the delay")
        #expect(network.transit(link: .down, key: 1) == .refused)
        #expect(network.transit(link: .blackhole, key: 1) == .lost)
        let other = NetworkModel(conditions: Self.conditions, seed: 12)
        #expect(fates != (0..<20_000).map { other.transit(link: .up, key: UInt64($0)) })
    }
}
