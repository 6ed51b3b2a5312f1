import RoomLink
import RoomLinkTestSupport
import Testing

// The "Clients and Servers over TCP" article's sample (Sources/RoomLinkNetwork/Docs.docc/NetworkGuide.md), verbatim
// apart from `print` → collecting; DocSampleTests checks that the article still shows these lines.

/// Serves ZEGO rooms on loopback, logs Bob and then Alice in over TCP, and returns what Alice's app is told.
func aliceOverTCP(on group: LibeventLoopGroup) async throws -> ([ZegoEvent], [String]) {
    let server = NetworkServer(group: group, configuration: .init(dialect: .zego))
    let address = try await server.listen(on: SocketAddress(host: "127.0.0.1", port: 0))
    let transport = try TCPClientTransport(server: address, dialect: .zego)
    let environment = ZegoClient.Environment(transport: transport)
    let alice = ZegoClient(id: "alice", loop: group.loop(for: "alice"), environment: environment)
    let bob = ZegoClient(id: "bob", loop: group.loop(for: "bob"), environment: environment)
    let changes = await alice.events()

    await bob.loginRoom("room-1")
    try await group.loops[0].sleep(for: .seconds(1))  // bob is in
    await alice.loginRoom("room-1", config: ZegoRoomConfig(isUserStatusNotify: true))
    var told: [ZegoEvent] = []
    for await change in changes {
        told.append(change.event)
        if told.count == 3 { break }  // logining, logined, and bob is here
    }
    let members = await server.rooms.serverRoom("room-1").memberIDs  // article: print(…)
    await alice.shutdown()
    await bob.shutdown()
    await transport.close()  // the clients' sockets, before their loops go
    await server.shutdown()  // goodbye to every client, then close
    return (told, members)
}

@Suite(.hangLimit(minutes: 10))
struct NetworkGuideSampleTests {
    @Test func theSampleLogsAliceInOverTCPAndSheSeesBob() async throws {
        // Not scaled: the sample's one-second wait is real, and bob is in long before.
        let (told, members) = try await LibeventLoopGroup.withLoopGroup { group in
            try await aliceOverTCP(on: group)
        }
        guard told.count == 3, case .roomStateChanged(_, .logining, _, _) = told[0],
            case .roomStateChanged(_, .logined, _, _) = told[1]
        else {
            Issue.record("unexpected events: \(told)")
            return
        }
        #expect(told[2] == .roomUserUpdate(roomID: "room-1", update: .add, users: ["bob"]))
        #expect(members == ["bob", "alice"])
    }
}
