public import RoomLinkEngine
import SwiftProtobuf

/// One frame a server sends: its answer to a hello, a message from one of the client's rooms, or goodbye.
public enum ServerFrame: Sendable, Equatable {
    /// The answer to the client's hello.
    case helloAck(ServerHello)
    /// A message from the server of `room`.
    case room(String, ServerMessage)
    /// The server closes the connection on purpose, for `reason`; `detail` says more, for the client's logs.
    case goodbye(GoodbyeReason, detail: String)
    /// The server's media flows: sent on an otherwise quiet connection with a logged-in room, every
    /// ``ServerHello/mediaInterval``, for a dialect whose media flows continuously (Agora), so that its client can
    /// tell a silent path (a black hole) from a quiet room.
    case keepAlive

    /// The frame on the wire, length prefix included. A login's acceptance carries `server`'s heartbeat interval and
    /// timeout when given.
    public func encoded(server: ServerHello? = nil) -> [UInt8] {
        var frame = Roomlink_V1_ServerFrame()
        switch self {
        case .helloAck(let hello):
            frame.helloAck = .with {
                $0.protocolVersion = hello.protocolVersion
                $0.dialect = WireDialect.wire(hello.dialect)
                $0.heartbeatIntervalMs = UInt64(clamping: WireDuration.milliseconds(hello.heartbeatInterval))
                $0.heartbeatTimeoutMs = UInt64(clamping: WireDuration.milliseconds(hello.heartbeatTimeout))
                $0.mediaIntervalMs = UInt64(clamping: WireDuration.milliseconds(hello.mediaInterval ?? .zero))
            }
        case .room(let room, let message):
            frame.message = Self.wire(message, room: room)
            if let server, case .loginAccepted = message {
                frame.loginAccepted.heartbeatIntervalMs = UInt64(
                    clamping: WireDuration.milliseconds(server.heartbeatInterval)
                )
                frame.loginAccepted.heartbeatTimeoutMs = UInt64(
                    clamping: WireDuration.milliseconds(server.heartbeatTimeout)
                )
            }
        case .goodbye(let reason, let detail):
            frame.goodbye = .with {
                $0.reason = reason.wire
                $0.detail = String(detail.utf8.prefix(WireProtocol.maximumTokenLength)) ?? ""
            }
        case .keepAlive:
            frame.keepAlive = Roomlink_V1_KeepAlive()
        }
        return frame.framed
    }

    /// Decodes a frame's body (without its length prefix).
    ///
    /// - Throws: ``WireError`` naming what was wrong.
    public init(body: UnsafeRawBufferPointer) throws(WireError) {
        let frame: Roomlink_V1_ServerFrame
        do {
            frame = try Roomlink_V1_ServerFrame(
                serializedBytes: RawSpan(_unsafeBytes: body),
                options: WireDecoding.options
            )
        } catch {
            throw .malformed(String(describing: error))
        }
        self = try Self.decode(frame)
    }

    /// Decodes a frame's body (without its length prefix).
    public init(body: [UInt8]) throws(WireError) {
        let result = body.withUnsafeBytes { bytes in Result { () throws(WireError) in try ServerFrame(body: bytes) } }
        self = try result.get()
    }

    // MARK: - To the wire

    private static func wire(_ message: ServerMessage, room: String) -> Roomlink_V1_ServerFrame.OneOf_Message {
        switch message {
        case .loginAccepted(let session, let attempt, let roomSessionID, let present):
            return .loginAccepted(
                .with {
                    $0.room = room
                    $0.session = session.rawValue
                    $0.attempt = attempt
                    $0.roomSessionID = roomSessionID
                    $0.present = present
                }
            )
        case .loginRejected(let session, let attempt, let reason):
            return .loginRejected(
                .with {
                    $0.room = room
                    $0.session = session.rawValue
                    $0.attempt = attempt
                    $0.reason =
                        switch reason {
                        case .tokenInvalid: .tokenInvalid
                        case .memberCapReached: .memberCapReached
                        }
                }
            )
        case .busy(let session, let attempt, let retryAfter):
            return .busy(
                .with {
                    $0.room = room
                    $0.session = session.rawValue
                    $0.attempt = attempt
                    $0.retryAfterMs = UInt64(clamping: WireDuration.milliseconds(retryAfter))
                }
            )
        case .heartbeatAck(let session):
            return .heartbeatAck(
                .with {
                    $0.room = room
                    $0.session = session.rawValue
                }
            )
        case .sessionUnknown(let session):
            return .sessionUnknown(
                .with {
                    $0.room = room
                    $0.session = session.rawValue
                }
            )
        case .userUpdate(let change, let users, let reason):
            return .userUpdate(
                .with {
                    $0.room = room
                    $0.change = change == .add ? .add : .delete
                    $0.users = users
                    $0.reason =
                        switch reason {
                        case nil: .unspecified
                        case .quit?: .quit
                        case .dropped?: .dropped
                        case .becomeAudience?: .becomeAudience
                        }
                }
            )
        case .kicked(let session, let reason):
            return .kicked(
                .with {
                    $0.room = room
                    $0.session = session.rawValue
                    $0.reason =
                        switch reason {
                        case .duplicateLogin: .duplicateLogin
                        case .admin: .admin
                        case .tokenExpired: .tokenExpired
                        }
                }
            )
        case .tokenWillExpire(let session, let remaining):
            return .tokenWillExpire(
                .with {
                    $0.room = room
                    $0.session = session.rawValue
                    $0.remainingMs = UInt64(clamping: WireDuration.milliseconds(remaining))
                }
            )
        case .reconnectRequested(let session):
            return .reconnectRequested(
                .with {
                    $0.room = room
                    $0.session = session.rawValue
                }
            )
        }
    }

    // MARK: - From the wire

    private static func decode(_ frame: Roomlink_V1_ServerFrame) throws(WireError) -> ServerFrame {
        func room(_ value: String, _ message: String) throws(WireError) -> String {
            try WireCheck.identifier(value, field: "\(message).room")
        }
        switch frame.message {
        case nil:
            throw .unknownMessage
        case .helloAck(let hello)?:
            guard let dialect = try WireDialect.decode(hello.dialect, field: "hello_ack.dialect") else {
                throw .invalidField(field: "hello_ack.dialect", problem: "is missing")
            }
            return .helloAck(
                ServerHello(
                    protocolVersion: hello.protocolVersion,
                    dialect: dialect,
                    heartbeatInterval: WireDuration.duration(milliseconds: hello.heartbeatIntervalMs),
                    heartbeatTimeout: WireDuration.duration(milliseconds: hello.heartbeatTimeoutMs),
                    mediaInterval: hello.mediaIntervalMs == 0
                        ? nil : WireDuration.duration(milliseconds: hello.mediaIntervalMs)
                )
            )
        case .loginAccepted(let message)?:
            return .room(
                try room(message.room, "login_accepted"),
                .loginAccepted(
                    session: SessionID(rawValue: message.session),
                    attempt: message.attempt,
                    roomSessionID: message.roomSessionID,
                    present: message.present
                )
            )
        case .loginRejected(let message)?:
            let reason: LoginRejection
            switch message.reason {
            case .tokenInvalid: reason = .tokenInvalid
            case .memberCapReached: reason = .memberCapReached
            case .unspecified, .UNRECOGNIZED:
                throw .invalidField(
                    field: "login_rejected.reason",
                    problem: "is \(message.reason.rawValue), not a reason"
                )
            }
            return .room(
                try room(message.room, "login_rejected"),
                .loginRejected(session: SessionID(rawValue: message.session), attempt: message.attempt, reason: reason)
            )
        case .busy(let message)?:
            return .room(
                try room(message.room, "busy"),
                .busy(
                    session: SessionID(rawValue: message.session),
                    attempt: message.attempt,
                    retryAfter: WireDuration.duration(milliseconds: message.retryAfterMs)
                )
            )
        case .heartbeatAck(let message)?:
            return .room(
                try room(message.room, "heartbeat_ack"),
                .heartbeatAck(session: SessionID(rawValue: message.session))
            )
        case .sessionUnknown(let message)?:
            return .room(
                try room(message.room, "session_unknown"),
                .sessionUnknown(session: SessionID(rawValue: message.session))
            )
        case .userUpdate(let message)?:
            let change: PresenceChange
            switch message.change {
            case .add: change = .add
            case .delete: change = .delete
            case .unspecified, .UNRECOGNIZED:
                throw .invalidField(field: "user_update.change", problem: "is \(message.change.rawValue), not a change")
            }
            let reason: DepartureReason?
            switch message.reason {
            case .unspecified: reason = nil
            case .quit: reason = .quit
            case .dropped: reason = .dropped
            case .becomeAudience: reason = .becomeAudience
            case .UNRECOGNIZED(let value):
                throw .invalidField(field: "user_update.reason", problem: "is \(value), not a reason")
            }
            return .room(
                try room(message.room, "user_update"),
                .userUpdate(change, users: message.users, reason: reason)
            )
        case .kicked(let message)?:
            let reason: KickReason
            switch message.reason {
            case .duplicateLogin: reason = .duplicateLogin
            case .admin: reason = .admin
            case .tokenExpired: reason = .tokenExpired
            case .unspecified, .UNRECOGNIZED:
                throw .invalidField(field: "kicked.reason", problem: "is \(message.reason.rawValue), not a reason")
            }
            return .room(
                try room(message.room, "kicked"),
                .kicked(session: SessionID(rawValue: message.session), reason: reason)
            )
        case .tokenWillExpire(let message)?:
            return .room(
                try room(message.room, "token_will_expire"),
                .tokenWillExpire(
                    session: SessionID(rawValue: message.session),
                    remaining: WireDuration.duration(milliseconds: message.remainingMs)
                )
            )
        case .reconnectRequested(let message)?:
            return .room(
                try room(message.room, "reconnect_requested"),
                .reconnectRequested(session: SessionID(rawValue: message.session))
            )
        case .goodbye(let message)?:
            guard let reason = GoodbyeReason(message.reason) else {
                throw .invalidField(field: "goodbye.reason", problem: "is \(message.reason.rawValue), not a reason")
            }
            return .goodbye(reason, detail: message.detail)
        case .keepAlive?:
            return .keepAlive
        }
    }
}

/// The server's answer to a client's hello: its version, its dialect, and the timings a client needs.
public struct ServerHello: Sendable, Hashable {
    public var protocolVersion: UInt32
    public var dialect: DialectName
    /// How often the server expects heartbeats.
    public var heartbeatInterval: Duration
    /// How long the server keeps a member it does not hear from.
    public var heartbeatTimeout: Duration
    /// For a dialect whose media flows continuously: how often a client sends ``ClientFrame/media(room:)`` for each
    /// of its rooms (the server treats three intervals of none as the data stopping); `nil` otherwise.
    public var mediaInterval: Duration?

    public init(
        protocolVersion: UInt32 = WireProtocol.version,
        dialect: DialectName,
        heartbeatInterval: Duration,
        heartbeatTimeout: Duration,
        mediaInterval: Duration? = nil
    ) {
        self.protocolVersion = protocolVersion
        self.dialect = dialect
        self.heartbeatInterval = heartbeatInterval
        self.heartbeatTimeout = heartbeatTimeout
        self.mediaInterval = mediaInterval
    }
}

/// Why a server closes a connection on purpose.
public enum GoodbyeReason: String, Sendable, Hashable, CaseIterable {
    /// The server is shutting down: reconnect, to it or another node.
    case serverShutdown
    /// A frame the server could not accept.
    case protocolError
    /// No hello and login in time.
    case loginTimeout
    /// The client read too slowly: the server's output buffer for it filled.
    case slowReader
    /// The hello named a protocol version the server does not speak.
    case unsupportedVersion
    /// The hello named another dialect than the server's.
    case wrongDialect

    var wire: Roomlink_V1_Goodbye.Reason {
        switch self {
        case .serverShutdown: .serverShutdown
        case .protocolError: .protocolError
        case .loginTimeout: .loginTimeout
        case .slowReader: .slowReader
        case .unsupportedVersion: .unsupportedVersion
        case .wrongDialect: .wrongDialect
        }
    }

    init?(_ wire: Roomlink_V1_Goodbye.Reason) {
        switch wire {
        case .serverShutdown: self = .serverShutdown
        case .protocolError: self = .protocolError
        case .loginTimeout: self = .loginTimeout
        case .slowReader: self = .slowReader
        case .unsupportedVersion: self = .unsupportedVersion
        case .wrongDialect: self = .wrongDialect
        case .unspecified, .UNRECOGNIZED: return nil
        }
    }
}
