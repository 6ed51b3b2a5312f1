import RoomLink
import RoomLinkNetwork
import RoomLinkTestSupport
import Testing

/// A path that falls silent where the client's socket cannot see it — a firewall's DROP, a dead link somewhere on
/// the way (``SilentProxy``): the client must notice within its dialect's time, give the dead connection up, dial a
/// new one, and end where its peers and the server see it. What a loaded machine cannot shift is asserted: the
/// order of events and what was dialed, never how long anything took.
@Suite(.hangLimit(minutes: 10))
struct SilentPathTests {
    /// RealFaultsTests's ZEGO timings (×0.25 real: heartbeat 2 s, silence after 6 s, the server drops a member
    /// after 12 s), with attempts answered within 3 s.
    static let zego: ZegoTimings = {
        var timings = RealFaultsTests.timings
        timings.attemptTimeout = .seconds(3)
        return timings
    }()

    /// A generic event collector for any dialect's client.
    final class Events<Event: Sendable>: Sendable {
        private let events = LockedBox<[Event]>([])
        private let task: Task<Void, Never>

        init<Dialect: RoomDialect>(_ client: RoomClient<Dialect>) async where Dialect.Event == Event {
            let stream = await client.events()
            let events = self.events
            task = Task { for await change in stream { events.withLock { $0.append(change.event) } } }
        }

        var all: [Event] { events.withLock { $0 } }

        deinit { task.cancel() }
    }

    @Test func aZegoClientGivesUpASilentConnectionAndRedialsWhenThePathCarriesAgain() async throws {
        try await NetworkTest.withGroup { group in
            try NetworkTest.watchStalls(of: group)
            let (server, address) = try await NetworkTest.server(
                on: group,
                .init(dialect: .zego, timings: Self.zego.server)
            )
            // Stalled as on a loaded machine: her login's answer can cross after bob heard of her (see "both in").
            let proxy = try SilentProxy(to: address.port, stall: .milliseconds(100))
            let viaProxy = try TCPClientTransport(
                server: SocketAddress(host: "127.0.0.1", port: proxy.port),
                dialect: .zego
            )
            let direct = try TCPClientTransport(server: address, dialect: .zego)
            let alice = ZegoClient(
                id: "alice",
                loop: group.loop(for: "alice"),
                environment: .init(transport: viaProxy, timings: Self.zego)
            )
            let bob = ZegoClient(
                id: "bob",
                loop: group.loop(for: "bob"),
                environment: .init(transport: direct, timings: Self.zego)
            )
            let aliceLog = await EventLog(alice)
            let bobLog = await EventLog(bob)
            #expect(await bob.loginRoom("room-1", config: ZegoRoomConfig(isUserStatusNotify: true)) == .success)
            #expect(await alice.loginRoom("room-1") == .success)
            let aliceDropped = ZegoEvent.roomUserUpdate(roomID: "room-1", update: .delete, users: ["alice"])
            // Both sides of her login: bob hears of her straight from the server, and her own answer crosses the proxy
            // after it — a silence that began between the two would hold her answer, and she would never be in.
            try await NetworkTest.until("both in") { bobLog.sees("alice", in: "room-1") && aliceLog.isIn }

            // What the silence is measured against: a loaded machine may have made faults of its own already.
            let reconnectingBefore = aliceLog.count(of: .reconnecting)
            let reconnectedBefore = aliceLog.count(of: .reconnected)
            let droppedBefore = bobLog.count(aliceDropped)
            let acceptedBefore = server.statistics[.connectionsAccepted]
            proxy.isSilent = true
            try await NetworkTest.until("alice notices by silence") {
                aliceLog.count(of: .reconnecting) > reconnectingBefore
            }
            try await NetworkTest.until("bob sees alice dropped") { bobLog.count(aliceDropped) > droppedBefore }
            // Her attempts during the silence dialed the proxy and never reached the server.
            let acceptedDuringSilence = server.statistics[.connectionsAccepted] - acceptedBefore

            proxy.isSilent = false
            // Back over a new connection, while the old one is still silent (its retransmissions wait): she gave it
            // up, and her next attempt dialed anew — and she and her peer agree she is back.
            try await NetworkTest.until("alice reconnected") {
                aliceLog.count(of: .reconnected) > reconnectedBefore && aliceLog.isIn
            }
            try await NetworkTest.until("bob sees alice back") { bobLog.sees("alice", in: "room-1") }
            // At least one new connection reached the server; more when a loaded machine made an attempt outlast its
            // timeout (an attempt given up as the path carried again still connects; a login answered late is
            // abandoned and redialed) — a count load can raise, so only its floor is asserted.
            #expect(server.statistics[.connectionsAccepted] - acceptedBefore >= acceptedDuringSilence + 1)
            try await NetworkTest.until("the server has both") {
                await server.rooms.serverRoom("room-1").memberIDs.sorted() == ["alice", "bob"]
            }

            // The old connection's retransmissions get through at last: her stale heartbeats and her close. They
            // must not undo the new session.
            let peerClosedBefore = server.statistics.connectionsClosed(by: .peerClosed)
            proxy.releaseHeld()
            try await NetworkTest.until("the server hears the old connection close") {
                server.statistics.connectionsClosed(by: .peerClosed) > peerClosedBefore
            }
            try await group.loops[0].sleep(for: .seconds(14))  // past the server's heartbeat timeout
            try await NetworkTest.until("both in, and seen so") {
                await server.rooms.serverRoom("room-1").memberIDs.sorted() == ["alice", "bob"]
                    && aliceLog.isIn && bobLog.sees("alice", in: "room-1")
            }
            // The exact story, unless the machine stalled a loop long enough to write its own: no attempt of hers
            // reached the server during the silence, she lost her connection once, and bob saw her go once —
            // the stale close did not undo her new session.
            NetworkTest.ifNoStall(of: group, proxy: proxy, in: "SilentPathTests (ZEGO)") {
                #expect(acceptedDuringSilence == 0)
                #expect(bobLog.count(aliceDropped) == droppedBefore + 1)
                #expect(aliceLog.count(of: .reconnected) == reconnectedBefore + 1)
                #expect(aliceLog.count(of: .reconnecting) == reconnectingBefore + 1)
            }
            await alice.shutdown()
            await bob.shutdown()
            await viaProxy.close()
            await direct.close()
            await proxy.stop()
            await server.shutdown()
        }
    }

    @Test func anAgoraClientNoticesASilentPathByTheServersDataAndComesBack() async throws {
        try await NetworkTest.withGroup { group in
            try NetworkTest.watchStalls(of: group)
            let (server, address) = try await NetworkTest.server(on: group, .init(dialect: .agora))
            let proxy = try SilentProxy(to: address.port)
            let transport = try TCPClientTransport(
                server: SocketAddress(host: "127.0.0.1", port: proxy.port),
                dialect: .agora
            )
            let alice = AgoraClient(
                id: "alice",
                loop: group.loop(for: "alice"),
                environment: .init(transport: transport)
            )
            let log = await Events(alice)
            #expect(await alice.joinChannel("c1") == 0)
            let joined = AgoraEvent.connectionStateChanged(channel: "c1", state: .connected, reason: .joinSuccess)
            let interrupted = AgoraEvent.connectionStateChanged(
                channel: "c1",
                state: .reconnecting,
                reason: .interrupted
            )
            try await NetworkTest.until("alice is in") { log.all.contains(joined) }
            // Quiet but alive: nothing else is said in the room, yet the server's data flows — keep-alives, one per
            // media interval at least every one and a half (counted, not timed: a loaded machine shifts when, not
            // whether). Before the silence below, alice is connected.
            let sentBefore = server.statistics[.framesSent]
            try await group.loops[0].sleep(for: .seconds(8))
            let sentWhileQuiet = server.statistics[.framesSent] - sentBefore
            try await NetworkTest.until("alice is connected before the silence") {
                log.all.last { if case .connectionStateChanged = $0 { true } else { false } }.map {
                    if case .connectionStateChanged(_, .connected, _) = $0 { true } else { false }
                } ?? false
            }

            proxy.isSilent = true
            // The server's data stops, and the client says so after Agora's 4 s — during the silence, not after.
            try await NetworkTest.until("alice is interrupted") { log.all.contains(interrupted) }
            proxy.isSilent = false
            let states = {
                log.all.compactMap { event -> AgoraConnectionChangedReason? in
                    if case .connectionStateChanged(_, _, let reason) = event { return reason }
                    return nil
                }
            }
            try await NetworkTest.until("alice is back") { states().last == .rejoinSuccess }
            #expect(server.statistics[.connectionsAccepted] >= 2)
            #expect(Array(states().prefix(3)) == [.connecting, .joinSuccess, .interrupted])
            // The keep-alives' count, unless the machine held the server's loop up long enough to skip some.
            NetworkTest.ifNoStall(of: group, proxy: proxy, in: "SilentPathTests (Agora)") {
                #expect(sentWhileQuiet >= 4, "keep-alives flow to a quiet connection")
            }
            await alice.shutdown()
            await transport.close()
            await proxy.stop()
            await server.shutdown()
        }
    }
}
