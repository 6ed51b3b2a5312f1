import RoomLinkNetwork
import Testing

/// Which node of a cluster a client's connection goes to (the transports' pick; `--route`).
struct ServerRoutingTests {
    private let clients: [UInt64] = (0..<64).map { $0 &* 0x9E37_79B9_7F4A_7C15 &+ 12_345 }

    @Test func byRoomSendsEveryClientOfARoomToOneServer() {
        for room in ["r", "room-1", "room-2", "a room with spaces", "房间"] {
            let picks = Set(clients.map { ServerRouting.byRoom.server(clientHash: $0, room: room, count: 8) })
            #expect(picks.count == 1, "\(room) went to \(picks.sorted())")
            #expect(picks.allSatisfy { (0..<8).contains($0) })
        }
    }

    /// Rooms named alike (a load's `room-N`) still spread over a few servers: none gets less than half its share.
    @Test func byRoomSpreadsRoomsOverTheServers() {
        for count in [2, 3, 4, 8] {
            var perServer = [Int](repeating: 0, count: count)
            for index in 0..<400 {
                perServer[ServerRouting.byRoom.server(clientHash: 0, room: "room-\(index)", count: count)] += 1
            }
            #expect(perServer.allSatisfy { $0 >= 400 / count / 2 }, "\(count) servers: \(perServer)")
        }
    }

    @Test func byClientFollowsTheClientWhateverTheRoom() {
        for hash in clients {
            let picks = Set(
                ["room-1", "room-2", "r"].map { ServerRouting.byClient.server(clientHash: hash, room: $0, count: 5) }
            )
            #expect(picks == [Int(hash % 5)])
        }
        #expect(Set(clients.map { ServerRouting.byClient.server(clientHash: $0, room: "r", count: 5) }).count == 5)
    }

    @Test func oneServerIsAlwaysTheOne() {
        for routing in ServerRouting.allCases {
            #expect(clients.allSatisfy { routing.server(clientHash: $0, room: "room-\($0 % 7)", count: 1) == 0 })
        }
    }
}
