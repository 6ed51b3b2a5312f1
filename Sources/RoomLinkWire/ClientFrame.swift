public import RoomLinkEngine
import SwiftProtobuf

/// One frame a client sends: its hello, or a message for one of its rooms.
public enum ClientFrame: Sendable, Equatable {
    /// The first frame of a connection.
    case hello(ClientHello)
    /// A message for the server of `room`.
    case room(String, ClientMessage)
    /// The client's media for `room` flows (a dialect whose media flows continuously): a transport's liveness
    /// signal, not a message of the engine.
    case media(room: String)

    /// The frame on the wire, length prefix included. `now` turns a login's answer deadline into the relative
    /// timeout the wire carries.
    public func encoded(at now: RuntimeInstant) -> [UInt8] {
        var frame = Roomlink_V1_ClientFrame()
        switch self {
        case .hello(let hello):
            frame.hello = .with {
                $0.protocolVersion = hello.protocolVersion
                $0.dialect = WireDialect.wire(hello.dialect)
                $0.clientID = hello.clientID
            }
        case .room(let room, let message):
            frame.message = Self.wire(message, room: room, now: now)
        case .media(let room):
            frame.media = .with { $0.room = room }
        }
        return frame.framed
    }

    /// Decodes a frame's body (without its length prefix), received at `now`.
    ///
    /// - Throws: ``WireError`` naming what was wrong: not a `ClientFrame`, no message this version knows, or a field
    ///   missing, empty, too long or out of range.
    public init(body: UnsafeRawBufferPointer, receivedAt now: RuntimeInstant) throws(WireError) {
        let frame: Roomlink_V1_ClientFrame
        do {
            frame = try Roomlink_V1_ClientFrame(
                serializedBytes: RawSpan(_unsafeBytes: body),
                options: WireDecoding.options
            )
        } catch {
            throw .malformed(String(describing: error))
        }
        self = try Self.decode(frame, now: now)
    }

    /// Decodes a frame's body (without its length prefix), received at `now`.
    public init(body: [UInt8], receivedAt now: RuntimeInstant) throws(WireError) {
        let result = body.withUnsafeBytes { bytes in
            Result { () throws(WireError) in try ClientFrame(body: bytes, receivedAt: now) }
        }
        self = try result.get()
    }

    /// The room this frame's message is for, if it is one.
    public var room: String? {
        switch self {
        case .hello: nil
        case .room(let room, _), .media(let room): room
        }
    }

    // MARK: - To the wire

    private static func wire(
        _ message: ClientMessage,
        room: String,
        now: RuntimeInstant
    ) -> Roomlink_V1_ClientFrame.OneOf_Message {
        switch message {
        case .login(let request):
            return .login(
                .with {
                    $0.room = room
                    $0.userID = request.userID
                    $0.session = request.session.rawValue
                    $0.token = request.token ?? ""
                    $0.userStatusNotify = request.userStatusNotify
                    $0.maxMemberCount = UInt32(clamping: request.maxMemberCount ?? 0)
                    $0.kind = WireLoginKind.wire(request.kind)
                    $0.hidden = request.hidden
                    $0.attempt = request.attempt
                    if let answerBy = request.answerBy {
                        // At least 1 ms: 0 means "does not say".
                        $0.answerWithinMs = max(
                            1,
                            UInt64(clamping: WireDuration.milliseconds(now.duration(to: answerBy)))
                        )
                    }
                }
            )
        case .heartbeat(let userID, let session):
            return .heartbeat(
                .with {
                    $0.room = room
                    $0.userID = userID
                    $0.session = session.rawValue
                }
            )
        case .logout(let userID, let session):
            return .logout(
                .with {
                    $0.room = room
                    $0.userID = userID
                    $0.session = session.rawValue
                }
            )
        case .renewToken(let userID, let session, let token):
            return .renewToken(
                .with {
                    $0.room = room
                    $0.userID = userID
                    $0.session = session.rawValue
                    $0.token = token
                }
            )
        case .connectionResumed(let userID, let session):
            return .connectionResumed(
                .with {
                    $0.room = room
                    $0.userID = userID
                    $0.session = session.rawValue
                }
            )
        case .setHidden(let userID, let session, let hidden):
            return .setHidden(
                .with {
                    $0.room = room
                    $0.userID = userID
                    $0.session = session.rawValue
                    $0.hidden = hidden
                }
            )
        }
    }

    // MARK: - From the wire

    private static func decode(_ frame: Roomlink_V1_ClientFrame, now: RuntimeInstant) throws(WireError) -> ClientFrame {
        switch frame.message {
        case nil:
            throw .unknownMessage
        case .hello(let hello)?:
            return .hello(
                ClientHello(
                    protocolVersion: hello.protocolVersion,
                    dialect: try WireDialect.decode(hello.dialect, field: "hello.dialect"),
                    clientID: try WireCheck.identifier(hello.clientID, field: "hello.client_id", allowsEmpty: true)
                )
            )
        case .login(let login)?:
            let room = try WireCheck.identifier(login.room, field: "login.room")
            let userID = try WireCheck.identifier(login.userID, field: "login.user_id")
            let token = try WireCheck.token(login.token, field: "login.token")
            let kind = try WireLoginKind.decode(login.kind)
            guard login.maxMemberCount <= UInt32(Int32.max) else {
                throw .invalidField(field: "login.max_member_count", problem: "is out of range")
            }
            let answerBy: RuntimeInstant? =
                login.answerWithinMs == 0
                ? nil : now.advanced(by: WireDuration.duration(milliseconds: login.answerWithinMs))
            let request = LoginRequest(
                userID: userID,
                session: SessionID(rawValue: login.session),
                token: token.isEmpty ? nil : token,
                userStatusNotify: login.userStatusNotify,
                maxMemberCount: login.maxMemberCount == 0 ? nil : Int(login.maxMemberCount),
                kind: kind,
                hidden: login.hidden,
                attempt: login.attempt,
                answerBy: answerBy
            )
            return .room(room, .login(request))
        case .heartbeat(let message)?:
            let (room, userID) = try WireCheck.roomAndUser(message.room, message.userID, in: "heartbeat")
            return .room(room, .heartbeat(userID: userID, session: SessionID(rawValue: message.session)))
        case .logout(let message)?:
            let (room, userID) = try WireCheck.roomAndUser(message.room, message.userID, in: "logout")
            return .room(room, .logout(userID: userID, session: SessionID(rawValue: message.session)))
        case .renewToken(let message)?:
            let (room, userID) = try WireCheck.roomAndUser(message.room, message.userID, in: "renew_token")
            let token = try WireCheck.token(message.token, field: "renew_token.token")
            return .room(
                room,
                .renewToken(userID: userID, session: SessionID(rawValue: message.session), token: token)
            )
        case .setHidden(let message)?:
            let (room, userID) = try WireCheck.roomAndUser(message.room, message.userID, in: "set_hidden")
            return .room(
                room,
                .setHidden(userID: userID, session: SessionID(rawValue: message.session), hidden: message.hidden)
            )
        case .media(let message)?:
            return .media(room: try WireCheck.identifier(message.room, field: "media.room"))
        case .connectionResumed(let message)?:
            let (room, userID) = try WireCheck.roomAndUser(message.room, message.userID, in: "connection_resumed")
            return .room(room, .connectionResumed(userID: userID, session: SessionID(rawValue: message.session)))
        }
    }
}

/// A client's first frame: the protocol version it speaks, its dialect, and its name for the server's logs.
public struct ClientHello: Sendable, Hashable {
    public var protocolVersion: UInt32
    /// `nil` when the client does not say (the server then assumes its own).
    public var dialect: DialectName?
    public var clientID: String

    public init(protocolVersion: UInt32 = WireProtocol.version, dialect: DialectName?, clientID: String) {
        self.protocolVersion = protocolVersion
        self.dialect = dialect
        self.clientID = clientID
    }
}
