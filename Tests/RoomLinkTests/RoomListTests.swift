import RoomLinkRuntime
import Testing

@testable import RoomLinkEngine

/// A client's rooms: the first inline, the rest in an array — in join order whichever is removed.
@Suite
struct RoomListTests {
    static func room(_ id: String) -> RoomConnection {
        RoomConnection(
            roomID: id,
            options: JoinOptions(notifiesPeers: false),
            session: SessionID(rawValue: 1),
            now: .zero,
            retry: RetryPolicy.zegoDefault.makeIterator(random: SeededRandom(seed: 1))
        )
    }

    @Test
    func keepsJoinOrderThroughRemovals() {
        var list = RoomList()
        #expect(list.isEmpty && list.count == 0)
        for id in ["a", "b", "c", "d"] { list.append(Self.room(id)) }
        #expect(list.map(\.roomID) == ["a", "b", "c", "d"])
        #expect(list.remove(at: 0).roomID == "a")  // the inline one: the next moves in
        #expect(list.map(\.roomID) == ["b", "c", "d"])
        #expect(list.remove(at: 1).roomID == "c")
        #expect(list.map(\.roomID) == ["b", "d"])
        list.append(Self.room("e"))
        #expect(list.map(\.roomID) == ["b", "d", "e"])
        #expect(list.remove(at: 2).roomID == "e")
        #expect(list.remove(at: 0).roomID == "b")
        #expect(list.remove(at: 0).roomID == "d")
        #expect(list.isEmpty && list.first == nil)
        list.append(Self.room("f"))
        #expect(list.map(\.roomID) == ["f"])
    }

    @Test
    func changesInPlaceReachTheRightRoom() {
        var list = RoomList()
        for id in ["a", "b"] { list.append(Self.room(id)) }
        list[0].phase = .joined
        list[1].phase = .reconnecting
        #expect(list.map(\.phase) == [.joined, .reconnecting])
        #expect(list.firstIndex { $0.roomID == "b" } == 1)
    }
}
