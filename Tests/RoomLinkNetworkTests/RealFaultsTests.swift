import RoomLink
import RoomLinkNetwork
import RoomLinkTestSupport
import Testing

/// A scenario's faults played on real sockets, at the client's side (a `FaultInjectingTransport` wrapped around the
/// `TCPClientTransport`): `networkDown` closes the connection and refuses new ones until `networkUp`, a black hole
/// keeps the socket and drops every frame (the server hears silence), and latency delays frames on the path.
@Suite(.hangLimit(minutes: 10))
struct RealFaultsTests {
    static let timings = ZegoTimings(
        server: {
            var server = ServerTimings.zego
            server.heartbeatTimeout = .seconds(12)
            return server
        }(),
        heartbeatInterval: .seconds(2),
        blackholeDetection: .seconds(6),
        attemptTimeout: .seconds(60),
        loginTimeout: .seconds(600)
    )

    static func client(
        _ id: String,
        _ transport: any ClientTransport,
        on group: LibeventLoopGroup
    ) -> ZegoClient {
        ZegoClient(
            id: id,
            loop: group.loop(for: id),
            environment: ZegoClient.Environment(transport: transport, timings: timings)
        )
    }

    @Test func networkDownClosesTheSocketAndRefusesNewOnesUntilUp() async throws {
        try await NetworkTest.withGroup { group in
            try NetworkTest.watchStalls(of: group)
            let (server, address) = try await NetworkTest.server(
                on: group,
                .init(dialect: .zego, timings: Self.timings.server)
            )
            let transport = FaultInjectingTransport(wrapping: try TCPClientTransport(server: address, dialect: .zego))
            let alice = Self.client("alice", transport, on: group)
            let log = await EventLog(alice)
            #expect(await alice.loginRoom("room-1") == .success)
            try await NetworkTest.until("alice is in") { log.isIn }

            // What the fault is measured against: a loaded machine may have made faults of its own already.
            let reconnectedBefore = log.count(of: .reconnected)
            let acceptedBefore = server.statistics[.connectionsAccepted]
            let peerClosedBefore = server.statistics.connectionsClosed(by: .peerClosed)
            transport.setLink(.down, for: alice)
            try await NetworkTest.until("the server sees the socket close") {
                server.statistics.connectionsClosed(by: .peerClosed) > peerClosedBefore
            }
            try await NetworkTest.until("alice is reconnecting") { log.reasons.last == .reconnecting }
            // While the link is down, the client's retries open no socket.
            try await group.loops[0].sleep(for: .seconds(8))
            let acceptedWhileDown = server.statistics[.connectionsAccepted] - acceptedBefore
            let peerClosedWhileDown = server.statistics.connectionsClosed(by: .peerClosed) - peerClosedBefore

            transport.setLink(.up, for: alice)
            try await NetworkTest.until("alice reconnected") {
                log.count(of: .reconnected) > reconnectedBefore && log.isIn
            }
            // A new socket once the link is up — more than one if a loaded machine answered an attempt after its
            // timeout and she dialed again: a count load can raise, so only its floor is asserted.
            #expect(server.statistics[.connectionsAccepted] - acceptedBefore >= acceptedWhileDown + 1)
            #expect(await server.rooms.serverRoom("room-1").memberIDs == ["alice"])
            NetworkTest.ifNoStall(of: group, in: "RealFaultsTests (link down)") {
                #expect(acceptedWhileDown == 0)
                #expect(peerClosedWhileDown == 1)
                #expect(log.count(of: .reconnected) == reconnectedBefore + 1)
            }
            await alice.shutdown()
            await server.shutdown()
        }
    }

    @Test func aBlackholeIsNoticedBySilenceAndTheSilentConnectionGivenUp() async throws {
        try await NetworkTest.withGroup { group in
            try NetworkTest.watchStalls(of: group)
            let (server, address) = try await NetworkTest.server(
                on: group,
                .init(dialect: .zego, timings: Self.timings.server)
            )
            // Each on a path of their own: the hole is alice's.
            let aliceTransport = FaultInjectingTransport(
                wrapping: try TCPClientTransport(server: address, dialect: .zego)
            )
            let alice = Self.client("alice", aliceTransport, on: group)
            let bob = Self.client("bob", try TCPClientTransport(server: address, dialect: .zego), on: group)
            let aliceLog = await EventLog(alice)
            let bobLog = await EventLog(bob)
            #expect(await bob.loginRoom("room-1", config: ZegoRoomConfig(isUserStatusNotify: true)) == .success)
            #expect(await alice.loginRoom("room-1") == .success)
            try await NetworkTest.until("both in") { aliceLog.isIn && bobLog.sees("alice", in: "room-1") }

            // What the hole is measured against: a loaded machine may have made faults of its own already.
            let aliceDropped = ZegoEvent.roomUserUpdate(roomID: "room-1", update: .delete, users: ["alice"])
            let reconnectingBefore = aliceLog.count(of: .reconnecting)
            let reconnectedBefore = aliceLog.count(of: .reconnected)
            let droppedBefore = bobLog.count(aliceDropped)
            let acceptedBefore = server.statistics[.connectionsAccepted]
            let peerClosedBefore = server.statistics.connectionsClosed(by: .peerClosed)
            aliceTransport.setLink(.blackhole, for: alice)
            // Alice notices by missed acks and gives the silent connection up, as an SDK does: she closes it — a
            // close lost in the hole, so the server hears nothing and drops her by its heartbeat timeout — and while
            // the hole lasts her attempts dial nothing. Bob sees her dropped.
            try await NetworkTest.until("alice is reconnecting") {
                aliceLog.count(of: .reconnecting) > reconnectingBefore
            }
            try await NetworkTest.until("bob sees alice dropped") { bobLog.count(aliceDropped) > droppedBefore }
            let peerClosedInHole = server.statistics.connectionsClosed(by: .peerClosed) - peerClosedBefore
            let acceptedInHole = server.statistics[.connectionsAccepted] - acceptedBefore

            aliceTransport.setLink(.up, for: alice)
            // The hole lifted: her given-up connection's close gets through, and her next attempt dials anew.
            try await NetworkTest.until("the server hears her old connection close") {
                server.statistics.connectionsClosed(by: .peerClosed) - peerClosedBefore > peerClosedInHole
            }
            try await NetworkTest.until("alice reconnected") {
                aliceLog.count(of: .reconnected) > reconnectedBefore && aliceLog.isIn
            }
            // Over a new connection: the next attempt after the hole dialed one (or more, if a loaded machine answered
            // one after its timeout — only the floor is load-proof).
            #expect(server.statistics[.connectionsAccepted] - acceptedBefore >= acceptedInHole + 1)
            try await NetworkTest.until("bob sees alice back") { bobLog.sees("alice", in: "room-1") }
            // The exact story, unless the machine stalled a loop long enough to write its own (bob's connection, or
            // alice's before the hole, judged dead by load): in the hole nothing of hers reached the server — no
            // close, no new connection — and she lost her connection once.
            NetworkTest.ifNoStall(of: group, in: "RealFaultsTests (blackhole)") {
                #expect(peerClosedInHole == 0)
                #expect(acceptedInHole == 0)
                #expect(aliceLog.count(of: .reconnecting) == reconnectingBefore + 1)
                #expect(bobLog.count(aliceDropped) == droppedBefore + 1)
            }
            await alice.shutdown()
            await bob.shutdown()
            await server.shutdown()
        }
    }

    @Test func latencyDelaysEveryFrameOnThePath() async throws {
        try await NetworkTest.withGroup { group in
            let (server, address) = try await NetworkTest.server(on: group)
            let transport = FaultInjectingTransport(
                wrapping: try TCPClientTransport(server: address, dialect: .zego),
                latency: .milliseconds(400),
                jitter: .milliseconds(100),
                seed: 3
            )
            let alice = Self.client("alice", transport, on: group)
            let events = await alice.events()
            #expect(await alice.loginRoom("room-1") == .success)
            var times: [RuntimeInstant] = []
            for await change in events {
                times.append(change.time)
                if times.count == 2 { break }
            }
            // Up 400 ms, the server's 20 ms, down 400 ms: never sooner.
            #expect(times[0].duration(to: times[1]) >= .milliseconds(820))
            await alice.shutdown()
            await server.shutdown()
        }
    }
}
