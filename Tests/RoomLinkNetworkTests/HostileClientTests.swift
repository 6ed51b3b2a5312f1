import RoomLink
import RoomLinkNetwork
import RoomLinkTestSupport
import RoomLinkWire
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Bad input on the wire: each offence closes the offender's connection with a logged reason (and a goodbye that
/// names it), and a well-behaved client logged in beside it never notices.
@Suite(.hangLimit(minutes: 10))
struct HostileClientTests {
    static let session = SessionID(rawValue: 42)

    static func login(_ user: String, room: String = "room-1", kind: LoginRequest.Kind = .join) -> ClientFrame {
        .room(room, .login(LoginRequest(userID: user, session: session, kind: kind)))
    }

    /// Runs `body` against a server with a well-behaved client in room-1, then checks that the client never lost its
    /// connection and the server still accepts a new login. A loop stalled for longer than a heartbeat's silence is a
    /// real lost connection (``NetworkTest/storyStands(of:proxy:in:)``): then only that the bystander was in first.
    ///
    /// The server's login timeout is ten minutes unless a test asks for its own: an offence must be what closes an
    /// offender's connection, and a server loop stalled past a short timeout (a ThreadSanitizer soak run beside six
    /// hogs, with 5 s) closes it for the timeout before it reads the offending frame.
    static func withBystander(
        _ configuration: NetworkServer.Configuration = .init(dialect: .zego, loginTimeout: .seconds(600)),
        _ body: (NetworkServer, UInt16, LibeventLoopGroup) async throws -> Void
    ) async throws {
        try await NetworkTest.withGroup { group in
            try NetworkTest.watchStalls(of: group)
            let (server, address) = try await NetworkTest.server(on: group, configuration)
            let bystander = try NetworkServerTests.client("bystander", on: group, to: address)
            let log = await EventLog(bystander)
            #expect(await bystander.loginRoom("room-1") == .success)
            try await NetworkTest.until("the bystander is in") { log.count(of: .logined) == 1 }

            try await body(server, address.port, group)

            let late = try NetworkServerTests.client("late", on: group, to: address)
            let lateLog = await EventLog(late)
            #expect(await late.loginRoom("room-1") == .success)
            try await NetworkTest.until("a new client still logs in") { lateLog.count(of: .logined) == 1 }
            #expect(log.reasons.starts(with: [.logining, .logined]))
            if NetworkTest.storyStands(of: group, in: "withBystander") {
                #expect(log.reasons == [.logining, .logined], "the bystander never noticed")
                #expect(await server.rooms.serverRoom("room-1").memberIDs.contains("bystander"))
            }
            await bystander.shutdown()
            await late.shutdown()
            await server.shutdown()
        }
    }

    /// The goodbye a closed connection got, if any, and that the stream then ended.
    static func goodbye(_ connection: RawConnection) throws -> GoodbyeReason? {
        for frame in try connection.untilClosed() {
            if case .goodbye(let reason, _) = frame { return reason }
        }
        return nil
    }

    @Test func eachOffenceClosesOnlyItsConnection() async throws {
        try await Self.withBystander { server, port, _ in
            // A length prefix over the maximum: refused before a byte of the body is read.
            let tooLong = try RawConnection(port: port)
            tooLong.hello()
            tooLong.write([0x00, 0x10, 0x00, 0x01])
            #expect(try Self.goodbye(tooLong) == .protocolError)

            // Bytes that are not a frame.
            let garbage = try RawConnection(port: port)
            garbage.write([0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff])
            #expect(try Self.goodbye(garbage) == .protocolError)

            // A message type this version does not know (field 15).
            let unknown = try RawConnection(port: port)
            unknown.hello()
            unknown.write([0, 0, 0, 2, 0x7a, 0x00])
            #expect(try Self.goodbye(unknown) == .protocolError)

            // A login before the hello.
            let noHello = try RawConnection(port: port)
            noHello.send(Self.login("mallory"))
            #expect(try Self.goodbye(noHello) == .protocolError)

            // Another version, another dialect.
            let oldVersion = try RawConnection(port: port)
            oldVersion.send(.hello(ClientHello(protocolVersion: 99, dialect: .zego, clientID: "old")))
            #expect(try Self.goodbye(oldVersion) == .unsupportedVersion)
            let agora = try RawConnection(port: port)
            agora.hello(dialect: .agora)
            #expect(try Self.goodbye(agora) == .wrongDialect)

            // A heartbeat for a room the connection never logged in to: someone else's session.
            let stranger = try RawConnection(port: port)
            stranger.hello()
            stranger.send(.room("room-1", .heartbeat(userID: "bystander", session: Self.session)))
            #expect(try Self.goodbye(stranger) == .protocolError)

            // A second user on one connection: a logout of the bystander's session by mallory's connection.
            let impostor = try RawConnection(port: port)
            impostor.hello()
            impostor.send(Self.login("mallory"))
            impostor.send(.room("room-1", .logout(userID: "bystander", session: Self.session)))
            #expect(try Self.goodbye(impostor) == .protocolError)

            // Media before the hello: out of turn like any other frame.
            let mediaFirst = try RawConnection(port: port)
            mediaFirst.send(.media(room: "room-1"))
            #expect(try Self.goodbye(mediaFirst) == .protocolError)

            #expect(server.statistics.connectionsClosed(by: .protocolError) == 7)
            #expect(server.statistics.connectionsClosed(by: .handshakeRefused) == 2)
        }
    }

    /// What the server wrote before an offence closes the connection still goes out, before the goodbye: a heartbeat
    /// and a malformed frame sent together are read together, and the heartbeat's answer — gathered for the end of
    /// that read — is sent ahead of the goodbye the malformed frame earns, not dropped with the connection.
    @Test func framesWrittenBeforeAnOffenceGoOutBeforeItsGoodbye() async throws {
        try await Self.withBystander { server, port, _ in
            let raw = try RawConnection(port: port)
            raw.hello()
            raw.send(Self.login("mallory"))
            while let frame = try raw.next() {
                if case .room(_, .loginAccepted) = frame { break }
            }
            let heartbeat = ClientFrame.room("room-1", .heartbeat(userID: "mallory", session: Self.session))
            raw.write(heartbeat.encoded(at: .zero) + [0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff])
            let rest = try raw.untilClosed().filter {
                if case .room(_, .userUpdate) = $0 { false } else { true }
            }
            #expect(rest.count == 2)
            #expect(rest.first == .room("room-1", .heartbeatAck(session: Self.session)))
            if case .goodbye(let reason, _) = rest.last {
                #expect(reason == .protocolError)
            } else {
                Issue.record("no goodbye: \(rest)")
            }
        }
    }

    /// A client that closes its side in the middle of a frame, before it logged in, is let go as soon as the
    /// server sees the end of its stream, not at the login timeout (ten minutes, longer than the suite may run).
    @Test func aConnectionClosedMidFrameBeforeLoginIsNoticedAtOnce() async throws {
        try await Self.withBystander { server, port, _ in
            let hello = ClientFrame.hello(ClientHello(dialect: .zego, clientID: "cut")).encoded(at: .zero)
            let login = Self.login("cut").encoded(at: .zero)
            let cuts: [[UInt8]] = [
                Array(hello.prefix(3)), Array(hello.prefix(hello.count - 1)),
                hello + login.prefix(5),
            ]
            for (index, cut) in cuts.enumerated() {
                let connection = try RawConnection(port: port)
                connection.write(cut)
                shutdown(connection.fd, Int32(SHUT_WR))
                _ = try connection.untilClosed()
                try await NetworkTest.until("cut \(index) is let go") {
                    server.statistics.connectionsClosed(by: .peerClosed)
                        + server.statistics.connectionsClosed(by: .protocolError) == index + 1
                }
            }
            #expect(server.statistics.connectionsClosed(by: .loginTimeout) == 0)
        }
    }

    /// The test client tells a silent server from one that closed: a read that waits its whole bound throws (the
    /// server answers nothing before a hello), where a stream that ended reads as `nil`.
    @Test func aSilentServerIsATimeoutNotTheEndOfTheStream() async throws {
        try await Self.withBystander { _, port, _ in
            let silent = try RawConnection(port: port, timeout: .seconds(1))
            do {
                let frame = try silent.next()
                Issue.record("a server that said nothing read as \(frame.map { "\($0)" } ?? "the end of the stream")")
            } catch RawConnection.RawError.timedOut(let bound) {
                #expect(bound == .seconds(Sanitizers.hangLimitFactor))
            }
        }
    }

    @Test func aConnectionThatNeverLogsInIsClosedAfterTheLoginTimeout() async throws {
        try await Self.withBystander(.init(dialect: .zego, loginTimeout: .seconds(5))) { server, port, group in
            let idle = try RawConnection(port: port)
            idle.hello()
            let goodbye = try Self.goodbye(idle)
            try await NetworkTest.until("the server closed the idle connection for its login timeout") {
                server.statistics.connectionsClosed(by: .loginTimeout) == 1
            }
            // A server loop stalled past the timeout may find it expired before it reads the hello; closing with the
            // hello unread resets the connection, and the goodbye is lost with it.
            if NetworkTest.storyStands(of: group, in: "aConnectionThatNeverLogsInIsClosedAfterTheLoginTimeout") {
                #expect(goodbye == .loginTimeout)
            } else {
                #expect(goodbye == .loginTimeout || goodbye == nil)
            }
        }
    }

    /// A client that sends and never reads: the server's buffer for it is bounded, and then the connection is
    /// closed — the server's memory does not grow with the client's backlog.
    @Test func aSlowReaderIsClosedWhenItsBufferFills() async throws {
        var configuration = NetworkServer.Configuration(dialect: .zego, maximumOutputBuffer: 16 * 1024)
        // A small kernel buffer, so that a few thousand unread acks fill the server's own.
        configuration.socketSendBuffer = 4096
        try await Self.withBystander(configuration) { server, port, _ in
            let slow = try RawConnection(port: port, receiveBuffer: 4096)
            slow.hello()
            slow.send(Self.login("slow"))
            let heartbeat = ClientFrame.room("room-1", .heartbeat(userID: "slow", session: Self.session))
                .encoded(at: .zero)
            let batch = Array([[UInt8]](repeating: heartbeat, count: 1_000).joined())
            // Each heartbeat earns an ack it never reads; the server gives up long before 20 MB of them.
            var rounds = 0
            while slow.write(batch), rounds < 20_000, server.statistics.connectionsClosed(by: .slowReader) == 0 {
                rounds += 1
            }
            try await NetworkTest.until("the slow reader is closed") {
                server.statistics.connectionsClosed(by: .slowReader) == 1
            }
        }
    }

    /// Thousands of seeded hostile frames over many connections: every connection that sent one is closed or
    /// ignored as the protocol says, and the server keeps serving.
    @Test func seededFuzzLeavesTheServerServing() async throws {
        try await Self.withBystander { server, port, _ in
            var random = SeededRandom(seed: 7)
            let valid = [
                Self.login("fuzz"),
                .room("room-1", .heartbeat(userID: "fuzz", session: Self.session)),
                .room("room-2", .renewToken(userID: "fuzz", session: Self.session, token: "t")),
            ].map { Array($0.encoded(at: .zero).dropFirst(4)) }
            var sent = 0
            for _ in 0..<40 {
                let connection = try RawConnection(port: port, timeout: .seconds(5))
                connection.hello()
                for _ in 0..<60 {
                    var body = valid[Int(random.next() % UInt64(valid.count))]
                    for _ in 0..<Int(random.next() % 4) where !body.isEmpty {
                        body[Int(random.next() % UInt64(body.count))] ^= UInt8(truncatingIfNeeded: random.next() | 1)
                    }
                    var frame: [UInt8] = []
                    let length = random.next() % 50 == 0 ? UInt32(random.next() % 0x10_0000) : UInt32(body.count)
                    frame.append(contentsOf: withUnsafeBytes(of: length.bigEndian, Array.init))
                    frame.append(contentsOf: body)
                    sent += 1
                    guard connection.write(frame) else { break }
                }
            }
            #expect(sent >= 40)
            try await NetworkTest.until("the server accepted every connection") {
                server.statistics[.connectionsAccepted] >= 41
            }
        }
    }
}
