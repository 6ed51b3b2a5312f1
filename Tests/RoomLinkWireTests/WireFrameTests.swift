import RoomLinkEngine
import RoomLinkTestSupport
import SwiftProtobuf
import Testing

@testable import RoomLinkWire

/// Every message survives the wire, and everything that is not a valid frame is refused with a reason.
@Suite(.hangLimit(minutes: 10)) struct WireFrameTests {
    static let now = RuntimeInstant(nanoseconds: 5_000_000_000)
    static let session = SessionID(rawValue: 0xfeed_beef_1234_5678)

    static let clientMessages: [ClientMessage] = [
        .login(
            LoginRequest(
                userID: "alice",
                session: session,
                token: "t-1",
                userStatusNotify: true,
                maxMemberCount: 50,
                kind: .join,
                hidden: false,
                attempt: 3,
                answerBy: now.advanced(by: .seconds(10))
            )
        ),
        .login(LoginRequest(userID: "bob", session: session, kind: .reconnect, hidden: true)),
        .login(LoginRequest(userID: "bob", session: session, kind: .resume)),
        .heartbeat(userID: "alice", session: session),
        .logout(userID: "alice", session: session),
        .renewToken(userID: "alice", session: session, token: "t-2"),
        .connectionResumed(userID: "alice", session: session),
        .setHidden(userID: "alice", session: session, hidden: true),
    ]

    static let serverMessages: [ServerMessage] = [
        .loginAccepted(session: session, attempt: 2, roomSessionID: "r-1", present: ["bob", "carol"]),
        .loginAccepted(session: session, attempt: 0, roomSessionID: "r-1", present: []),
        .loginRejected(session: session, attempt: 1, reason: .tokenInvalid),
        .loginRejected(session: session, attempt: 1, reason: .memberCapReached),
        .busy(session: session, attempt: 4, retryAfter: .milliseconds(1_500)),
        .heartbeatAck(session: session),
        .sessionUnknown(session: session),
        .userUpdate(.add, users: ["bob"], reason: nil),
        .userUpdate(.delete, users: ["bob", "carol"], reason: .dropped),
        .userUpdate(.delete, users: ["bob"], reason: .quit),
        .userUpdate(.delete, users: ["bob"], reason: .becomeAudience),
        .kicked(session: session, reason: .duplicateLogin),
        .kicked(session: session, reason: .admin),
        .kicked(session: session, reason: .tokenExpired),
        .tokenWillExpire(session: session, remaining: .seconds(30)),
        .reconnectRequested(session: session),
    ]

    /// Splits one encoded frame into its body, checking the prefix.
    static func body(of frame: [UInt8]) throws -> [UInt8] {
        let length = try WireProtocol.bodyLength(prefix: frame[0], frame[1], frame[2], frame[3])
        #expect(frame.count == WireProtocol.headerLength + length)
        return Array(frame[WireProtocol.headerLength...])
    }

    @Test(arguments: clientMessages)
    func clientMessagesRoundTrip(_ message: ClientMessage) throws {
        let frame = ClientFrame.room("room-1", message)
        let decoded = try ClientFrame(body: Self.body(of: frame.encoded(at: Self.now)), receivedAt: Self.now)
        #expect(decoded == frame)
    }

    @Test(arguments: serverMessages)
    func serverMessagesRoundTrip(_ message: ServerMessage) throws {
        let frame = ServerFrame.room("room-1", message)
        #expect(try ServerFrame(body: Self.body(of: frame.encoded())) == frame)
    }

    /// A frame is its body encoded in place behind the prefix: the same bytes as the body encoded alone and copied
    /// behind a prefix announcing its length — for every message, an empty one, and a body given as a sequence.
    @Test(arguments: serverMessages)
    func aFrameIsItsPrefixAndTheBodyEncodedInPlace(_ message: ServerMessage) throws {
        let encoded = ServerFrame.room("room-1", message).encoded()
        let body = try Self.body(of: encoded)
        let alone: [UInt8] = try Roomlink_V1_ServerFrame(serializedBytes: body).serializedBytes()
        #expect(body == alone)
        let length = UInt32(alone.count)
        #expect(Array(encoded.prefix(4)) == [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: length >> $0) })
        #expect(Roomlink_V1_KeepAlive().framed == [0, 0, 0, 0])
        #expect(FrameBytes(alone).bytes == encoded)
        #expect(FrameBytes(alone).count == alone.count)
    }

    @Test func hellosAndGoodbyesRoundTrip() throws {
        let hello = ClientFrame.hello(ClientHello(dialect: .agora, clientID: "device-7"))
        #expect(try ClientFrame(body: Self.body(of: hello.encoded(at: Self.now)), receivedAt: Self.now) == hello)
        let ack = ServerFrame.helloAck(
            ServerHello(dialect: .livekit, heartbeatInterval: .seconds(5), heartbeatTimeout: .seconds(20))
        )
        #expect(try ServerFrame(body: Self.body(of: ack.encoded())) == ack)
        for reason in GoodbyeReason.allCases {
            let goodbye = ServerFrame.goodbye(reason, detail: "because")
            #expect(try ServerFrame(body: Self.body(of: goodbye.encoded())) == goodbye)
        }
    }

    /// A login's acceptance carries the server's heartbeat interval and timeout, as its hello does.
    @Test func theLoginAnswerCarriesTheServersTimings() throws {
        let hello = ServerHello(dialect: .zego, heartbeatInterval: .seconds(30), heartbeatTimeout: .seconds(90))
        let frame = ServerFrame.room(
            "r",
            .loginAccepted(session: Self.session, attempt: 1, roomSessionID: "x", present: [])
        )
        let decoded = try Roomlink_V1_ServerFrame(serializedBytes: Self.body(of: frame.encoded(server: hello)))
        #expect(decoded.loginAccepted.heartbeatIntervalMs == 30_000)
        #expect(decoded.loginAccepted.heartbeatTimeoutMs == 90_000)
    }

    /// The wire carries a login's answer deadline as a relative timeout: the receiver's clock starts it again.
    @Test func answerDeadlineTravelsAsATimeout() throws {
        let request = LoginRequest(
            userID: "a",
            session: Self.session,
            attempt: 1,
            answerBy: Self.now.advanced(by: .seconds(6))
        )
        let bytes = try Self.body(of: ClientFrame.room("r", .login(request)).encoded(at: Self.now))
        let later = RuntimeInstant(nanoseconds: 900_000_000_000)
        guard case .room(_, .login(let decoded)) = try ClientFrame(body: bytes, receivedAt: later) else {
            Issue.record("not a login")
            return
        }
        #expect(decoded.answerBy == later.advanced(by: .seconds(6)))
    }

    @Test func tooLongAPrefixIsRefusedBeforeTheBody() {
        #expect(throws: WireError.frameTooLong(length: 65_537, maximum: 65_536)) {
            try WireProtocol.bodyLength(prefix: 0, 1, 0, 1)
        }
        #expect(throws: WireError.frameTooLong(length: 0xffff_ffff, maximum: 65_536)) {
            try WireProtocol.bodyLength(prefix: 0xff, 0xff, 0xff, 0xff)
        }
        var reader = FrameReader()
        reader.append([0x7f, 0, 0, 0])
        #expect(throws: WireError.self) { try reader.next() }
    }

    @Test func anEmptyFrameHoldsNoMessage() {
        #expect(throws: WireError.unknownMessage) { try ClientFrame(body: [], receivedAt: Self.now) }
        #expect(throws: WireError.unknownMessage) { try ServerFrame(body: []) }
    }

    /// A field number this version does not know (a newer peer's message) is not a message.
    @Test func anUnknownMessageTypeIsRefused() {
        // Field 15, length-delimited, empty: `0x7a 0x00`.
        #expect(throws: WireError.unknownMessage) { try ClientFrame(body: [0x7a, 0x00], receivedAt: Self.now) }
    }

    @Test func bytesThatAreNotProtocolBuffersAreMalformed() {
        // Field 2 (login), length 10, but only 2 bytes follow.
        #expect {
            try ClientFrame(body: [0x12, 0x0a, 0x01, 0x02], receivedAt: Self.now)
        } throws: { error in
            guard case WireError.malformed = error else { return false }
            return true
        }
    }

    @Test func fieldsAreChecked() throws {
        func login(_ edit: (inout Roomlink_V1_Login) -> Void) throws -> [UInt8] {
            var login = Roomlink_V1_Login()
            login.room = "r"
            login.userID = "u"
            login.kind = .join
            edit(&login)
            var frame = Roomlink_V1_ClientFrame()
            frame.login = login
            return try frame.serializedBytes()
        }
        let cases: [(bytes: [UInt8], field: String)] = [
            (try login { $0.room = "" }, "login.room"),
            (try login { $0.userID = "" }, "login.user_id"),
            (try login { $0.kind = .unspecified }, "login.kind"),
            (try login { $0.kind = .UNRECOGNIZED(9) }, "login.kind"),
            (try login { $0.userID = String(repeating: "x", count: 257) }, "login.user_id"),
            (try login { $0.token = String(repeating: "x", count: 4_097) }, "login.token"),
            (try login { $0.maxMemberCount = .max }, "login.max_member_count"),
        ]
        for (bytes, field) in cases {
            #expect {
                try ClientFrame(body: bytes, receivedAt: Self.now)
            } throws: { error in
                guard case WireError.invalidField(let named, _) = error else { return false }
                return named == field
            }
        }
        #expect(throws: Never.self) { try ClientFrame(body: try login { _ in }, receivedAt: Self.now) }
    }

    /// Frames cut anywhere by the socket come out whole, in order.
    @Test func theReaderReassemblesFramesCutAtEveryByte() throws {
        let frames = Self.clientMessages.map { ClientFrame.room("room-1", $0) }
        let stream = frames.flatMap { $0.encoded(at: Self.now) }
        for cut in 1...stream.count {
            var reader = FrameReader()
            var decoded: [ClientFrame] = []
            var offset = 0
            while offset < stream.count {
                let end = min(stream.count, offset + cut)
                reader.append(stream[offset..<end])
                offset = end
                while let body = try reader.next() { decoded.append(try ClientFrame(body: body, receivedAt: Self.now)) }
            }
            #expect(decoded == frames)
            #expect(reader.bufferedCount == 0)
        }
    }
}
