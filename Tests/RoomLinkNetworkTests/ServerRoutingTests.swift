import Foundation
import RoomLink
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

    /// A scenario played against two servers with `routing: .byRoom` (what `roomlink run --route room` asks for) meets
    /// each room on its own server: each server made only the room routed to it. Routed by client, these users would
    /// split both rooms over the two servers.
    @Test(.timeLimit(.minutes(2)))
    func aRunRoutedByRoomMeetsEachRoomOnItsServer() async throws {
        func server(ofRoom room: String) -> Int { ServerRouting.byRoom.server(clientHash: 0, room: room, count: 2) }
        let first = "r1"
        let second = try #require((2..<64).map { "r\($0)" }.first { server(ofRoom: $0) != server(ofRoom: first) })
        let scenario = try Scenario(
            json: Data(
                """
                {
                  "dialect": "zego",
                  "users": [ { "id": "A" }, { "id": "B" }, { "id": "C" }, { "id": "D" } ],
                  "timeline": [
                    { "at": "0s", "user": "A", "action": "login", "room": "\(first)" },
                    { "at": "0s", "user": "B", "action": "login", "room": "\(first)" },
                    { "at": "0s", "user": "C", "action": "login", "room": "\(second)" },
                    { "at": "0s", "user": "D", "action": "login", "room": "\(second)" }
                  ],
                  "end": "100s"
                }
                """.utf8
            )
        )
        // 100 scenario seconds are 5 real ones: time enough for a login on a loaded machine (a room appears on the
        // server its first login reaches).
        let configuration = LibeventLoopGroup.Configuration(loopCount: 1, timeScale: 0.05)
        let serverGroup = try LibeventLoopGroup(configuration: configuration)
        defer { serverGroup.shutdown() }
        let servers = [
            NetworkServer(group: serverGroup, configuration: .init(dialect: .zego, timings: .zego)),
            NetworkServer(group: serverGroup, configuration: .init(dialect: .zego, timings: .zego)),
        ]
        var addresses: [SocketAddress] = []
        for server in servers {
            addresses.append(try await server.listen(on: SocketAddress(host: "127.0.0.1", port: 0)))
        }
        try await LibeventLoopGroup.withLoopGroup(configuration: configuration) { group in
            var runner = try ScenarioRunner(scenario: scenario)
            try runner.playAgainst(TCPServerTarget(servers: addresses, routing: .byRoom), on: group)
            _ = try await runner.run(on: group)
        }
        for server in servers { await server.shutdown() }
        #expect(servers[server(ofRoom: first)].rooms.roomIDs == [first])
        #expect(servers[server(ofRoom: second)].rooms.roomIDs == [second])
    }
}
