import RoomLinkEngine
import RoomLinkTestSupport
import Testing

@testable import RoomLinkRedis

/// A room's presence changes put in order alone, with no Redis: held before a snapshot, applied one after another
/// from its number, dropped when covered, and a reload asked for at a gap — with nothing held lost to it.
@Suite(.hangLimit(minutes: 10))
struct PresenceFeedOrderTests {
    static func join(_ sequence: UInt64, _ user: String = "u") -> PresenceEvent {
        PresenceEvent(
            kind: .join,
            sequence: sequence,
            userID: "\(user)\(sequence)",
            session: SessionID(rawValue: sequence),
            node: "b",
            hidden: false,
            reason: ""
        )
    }

    static func applied(_ actions: [PresenceFeedOrder.Action]) -> [UInt64] {
        actions.compactMap { if case .apply(let event) = $0 { event.sequence } else { nil } }
    }

    @Test
    func changesBeforeTheSnapshotAreHeldThenTheOnesAfterItAppliedInOrder() {
        var order = PresenceFeedOrder()
        for sequence: UInt64 in [6, 4, 5, 3] { #expect(order.received(Self.join(sequence)).isEmpty) }
        #expect(order.held.count == 4)
        let actions = order.loaded(snapshotAt: 4)
        #expect(Self.applied(actions) == [5, 6], "3 and 4 are in the snapshot; 5 and 6 follow in order")
        #expect(order.synced && order.applied == 6 && order.held.isEmpty)
        #expect(Self.applied(order.received(Self.join(7))) == [7])
        #expect(order.received(Self.join(7)).isEmpty, "a change applied once is not applied again")
    }

    @Test
    func aSkippedNumberAsksForAReloadAndHoldsUntilTheSnapshot() {
        var order = PresenceFeedOrder()
        _ = order.loaded(snapshotAt: 10)
        #expect(order.received(Self.join(12)) == [.reload], "11 was missed")
        #expect(!order.synced)
        #expect(order.received(Self.join(13)).isEmpty, "held while the reload runs")
        #expect(order.received(Self.join(11)).isEmpty)
        // The snapshot came as of 11: 12 and 13 follow it.
        #expect(Self.applied(order.loaded(snapshotAt: 11)) == [12, 13])
        #expect(order.applied == 13 && order.held.isEmpty)
    }

    @Test
    func aGapAmongTheHeldChangesKeepsTheRestForTheNextSnapshot() {
        var order = PresenceFeedOrder()
        for sequence: UInt64 in [2, 4, 5] { _ = order.received(Self.join(sequence)) }
        let actions = order.loaded(snapshotAt: 1)
        #expect(actions == [.apply(Self.join(2)), .reload], "3 is missing")
        #expect(order.held.map(\.sequence) == [4, 5], "nothing after the gap is lost")
        #expect(Self.applied(order.loaded(snapshotAt: 3)) == [4, 5])
    }

    @Test
    func aDroppedConnectionForgetsWhatWasHeld() {
        var order = PresenceFeedOrder()
        _ = order.loaded(snapshotAt: 1)
        _ = order.received(Self.join(3))
        order.disconnected()
        #expect(!order.synced && order.held.isEmpty)
        #expect(order.loaded(snapshotAt: 9).isEmpty)
        #expect(order.applied == 9)
    }
}
