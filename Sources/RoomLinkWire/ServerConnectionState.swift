public import RoomLinkEngine
public import RoomLinkRuntime

/// The rules of one client's connection to a server, as a value: the handshake, which user and rooms the connection
/// carries, which frames it refuses, when it is too slow a reader, whose media stopped, when a quiet connection gets
/// a keep-alive, and why it closes. The socket code (`RoomLinkNetwork`'s server connection) reads frames off the
/// socket, tells it what arrived and when, and carries out what it answers; tests drive it alone, in virtual time,
/// with no socket (as ``ClientConnectionState`` is the client's side).
///
/// A connection carries one user (the first login's) and the rooms it logged in to; a frame naming another user, or a
/// room it has not logged in to, closes it.
///
/// Not generic on purpose: it runs for every frame, from another module, where a generic value's methods would run
/// unspecialized.
public struct ServerConnectionState: Sendable {
    /// What a connection routes a room's messages to: the server's room.
    public typealias Room = any RoomEndpoint

    /// What the server allows a connection: one instance shared by every connection of a server (a class, so that
    /// each connection holds a reference, not a copy).
    public final class Limits: Sendable {
        /// The dialect the server speaks: a hello naming another is refused.
        public let dialect: DialectName
        /// Rooms one connection may log in to.
        public let maximumRoomsPerConnection: Int
        /// Bytes that may wait to be written before the client counts as too slow a reader.
        public let maximumOutputBuffer: Int
        /// How often a member's media flows, for a dialect whose media flows continuously; `nil` otherwise.
        public let mediaInterval: Duration?

        public init(
            dialect: DialectName,
            maximumRoomsPerConnection: Int,
            maximumOutputBuffer: Int,
            mediaInterval: Duration? = nil
        ) {
            self.dialect = dialect
            self.maximumRoomsPerConnection = maximumRoomsPerConnection
            self.maximumOutputBuffer = maximumOutputBuffer
            self.mediaInterval = mediaInterval.flatMap { $0 > .zero ? $0 : nil }
        }
    }

    /// Where the connection stands.
    public enum Phase: Sendable, Hashable {
        /// Accepted; the client's hello has not arrived.
        case awaitingHello
        /// Greeted: the client's frames are served.
        case open
        /// Closed, and nothing more is read; the socket is still to be freed (at once, or once a goodbye is written).
        case closing
        /// The socket is freed (``freed()``).
        case closed
    }

    /// One member the connection carries into a room: who must hear when the connection closes under it.
    public struct Member: Sendable {
        public let room: Room
        public let userID: String
        public let session: SessionID
    }

    /// How the connection closes: why (logged and counted), the goodbye to write first when one helps the client, and
    /// the members whose rooms must hear that their connection closed.
    public struct Close: Sendable {
        public let reason: CloseReason
        public let goodbye: GoodbyeReason?
        public let detail: String
        public let members: [Member]
    }

    /// What to do about a frame.
    public enum Action: Sendable {
        /// Nothing.
        case none
        /// Answer the hello with the server's.
        case answerHello
        /// Hand the message to its room.
        case deliver(ClientMessage, to: Room)
        /// Tell the member's room that its data flows again on this connection
        /// (`RoomEndpoint.dataResumed(userID:session:on:)`).
        case resumed(Member)
        /// Close the connection.
        case close(Close)
    }

    public let limits: Limits
    public private(set) var phase: Phase
    /// The client's ID, from its hello.
    public private(set) var clientID = ""
    /// The user the connection carries: the first login's.
    public private(set) var userID: String?
    private var rooms = ConnectionRooms<Membership>()
    /// When the last frame was written, for a dialect whose media flows (a quiet connection gets keep-alives).
    private var lastWrite = RuntimeInstant.zero

    private struct Membership: Sendable {
        let room: Room
        /// The session of the latest login, and whether it is still in.
        var session: SessionID
        var isIn: Bool
        /// For a dialect whose media flows continuously: when the member's media last arrived, and whether the server
        /// has treated it as stopped (and told the room).
        var lastMedia: RuntimeInstant
        var mediaStopped = false
    }

    /// A connection just accepted; `greeted` is the client's ID when its hello was already taken and answered.
    public init(limits: Limits, greeted: String? = nil) {
        self.limits = limits
        if let greeted {
            phase = .open
            clientID = greeted
        } else {
            phase = .awaitingHello
        }
    }

    /// Whether a login set the connection's user.
    public var isLoggedIn: Bool { userID != nil }

    /// Whether the connection still reads and serves frames.
    public var isOpen: Bool { phase == .awaitingHello || phase == .open }

    /// The rooms the connection is logged in to now.
    public var roomsIn: [String] { rooms.filter(\.value.isIn).map(\.key).sorted() }

    // MARK: - Frames

    /// `frame` arrived at `now`. `room` finds the room of a room the connection logs in to for the first time.
    public mutating func received(
        _ frame: ClientFrame,
        at now: RuntimeInstant,
        room: (String) -> Room
    ) -> Action {
        guard isOpen else { return .none }
        switch (phase, frame) {
        case (.awaitingHello, .hello(let hello)):
            guard hello.protocolVersion == WireProtocol.version else {
                return close(
                    .handshakeRefused,
                    goodbye: .unsupportedVersion,
                    detail: "protocol version \(hello.protocolVersion); this server speaks \(WireProtocol.version)"
                )
            }
            if let dialect = hello.dialect, dialect != limits.dialect {
                return close(
                    .handshakeRefused,
                    goodbye: .wrongDialect,
                    detail: "dialect \(dialect.rawValue); this server speaks \(limits.dialect.rawValue)"
                )
            }
            clientID = hello.clientID
            phase = .open
            return .answerHello
        case (.awaitingHello, .room), (.awaitingHello, .media):
            return close(.protocolError, goodbye: .protocolError, detail: "the first frame must be a hello")
        case (_, .hello):
            return close(.protocolError, goodbye: .protocolError, detail: "a second hello")
        case (_, .room(let roomID, let message)):
            return route(message, to: roomID, at: now, room: room)
        case (_, .media(let roomID)):
            return mediaArrived(for: roomID, at: now)
        }
    }

    /// A frame on the wire could not be taken (too long, malformed): the connection closes with a protocol error.
    public mutating func refused(_ detail: String) -> Close? {
        close(.protocolError, goodbye: .protocolError, detail: detail).closing
    }

    private mutating func route(
        _ message: ClientMessage,
        to roomID: String,
        at now: RuntimeInstant,
        room: (String) -> Room
    ) -> Action {
        let user = message.userID
        if let userID, user != userID {
            return close(
                .protocolError,
                goodbye: .protocolError,
                detail: "a frame for user '\(user)' on the connection of user '\(userID)'"
            )
        }
        let session: SessionID? =
            switch message {
            case .login(let request): request.session
            // The member's data flows again over a connection it did not log in on (its old one closed during a short
            // outage): the room checks the session before it sends the member anything here.
            case .connectionResumed(_, let resumed) where rooms[roomID] == nil: resumed
            default: nil
            }
        if let session {
            let existing = rooms[roomID]?.room
            if existing == nil, rooms.count >= limits.maximumRoomsPerConnection {
                return close(
                    .protocolError,
                    goodbye: .protocolError,
                    detail: "more than \(limits.maximumRoomsPerConnection) rooms on one connection"
                )
            }
            if userID == nil { userID = user }
            let target = existing ?? room(roomID)
            rooms[roomID] = Membership(room: target, session: session, isIn: true, lastMedia: now)
            return .deliver(message, to: target)
        }
        guard let membership = rooms[roomID] else {
            return close(
                .protocolError,
                goodbye: .protocolError,
                detail: "a frame for room '\(roomID)', which this connection has not logged in to"
            )
        }
        if case .logout(_, let session) = message, session == membership.session { rooms[roomID]?.isIn = false }
        return .deliver(message, to: membership.room)
    }

    // MARK: - Media (a dialect whose media flows continuously)

    /// The member's media for `roomID` arrived: when it had been treated as stopped, its room hears it flows again on
    /// this connection — which moves nothing if a newer connection carries the member now (media the client wrote
    /// before it gave this one up, delivered late). Media for a room the connection is not in is ignored.
    private mutating func mediaArrived(for roomID: String, at now: RuntimeInstant) -> Action {
        guard let membership = rooms[roomID], membership.isIn, let userID else { return .none }
        rooms[roomID]?.lastMedia = now
        guard membership.mediaStopped else { return .none }
        rooms[roomID]?.mediaStopped = false
        return .resumed(Member(room: membership.room, userID: userID, session: membership.session))
    }

    /// The periodic media check at `now`: every member whose media has not arrived for three media intervals counts as
    /// stopped — its room hears that its connection closed, and times it out from now unless the media flows again.
    /// A connection with a logged-in room that was written nothing for half an interval gets a keep-alive, so that its
    /// client tells a silent path from a quiet room.
    public mutating func checkMedia(at now: RuntimeInstant) -> (stopped: [Member], keepAlive: Bool) {
        guard isOpen, let userID, let interval = limits.mediaInterval else { return ([], false) }
        var stopped: [Member] = []
        var isIn = false
        for (roomID, membership) in rooms where membership.isIn {
            isIn = true
            guard !membership.mediaStopped, membership.lastMedia.duration(to: now) > interval * 3 else { continue }
            rooms[roomID]?.mediaStopped = true
            stopped.append(Member(room: membership.room, userID: userID, session: membership.session))
        }
        return (stopped, isIn && phase == .open && lastWrite.duration(to: now) >= interval / 2)
    }

    // MARK: - Writing

    /// Whether a write must say when it happened (``wrote(at:pending:)``): only for a dialect whose media flows, so
    /// that other dialects' writes read no clock.
    public var tracksWrites: Bool { limits.mediaInterval != nil }

    /// A frame was written at `now` (`nil`: the time was not read, ``tracksWrites`` being false), and `pending` bytes
    /// now wait to be read by the client: past the maximum it is too slow a reader, and the connection closes at once
    /// (a goodbye could not get through a full buffer).
    public mutating func wrote(at now: RuntimeInstant?, pending: Int) -> Close? {
        if let now { lastWrite = now }
        guard pending > limits.maximumOutputBuffer else { return nil }
        return close(.slowReader, goodbye: nil, detail: "\(pending) bytes waiting to be read, more than the maximum")
            .closing
    }

    // MARK: - Closing

    /// The login timeout passed: a connection that has not logged in by then closes.
    public mutating func loginTimedOut() -> Close? {
        guard userID == nil else { return nil }
        return close(.loginTimeout, goodbye: .loginTimeout, detail: "no hello and login within the login timeout")
            .closing
    }

    /// The socket reached its end (`endOfStream`) or failed. Returns the close, or `nil` when the connection was
    /// already closing (its goodbye is as written as it will be: free it).
    public mutating func peerClosed(endOfStream: Bool) -> Close? {
        close(.peerClosed, goodbye: nil, detail: endOfStream ? "end of stream" : "connection reset or failed").closing
    }

    /// Closes the connection for `reason`: afterwards it reads nothing, and is ``Phase/closing`` until its socket is
    /// freed (``freed()``) — at once without a goodbye, once the goodbye is written with one. The members still in their rooms — and whose
    /// media had not already been treated as stopped, which told their rooms — are to hear that it closed.
    public mutating func close(_ reason: CloseReason, goodbye: GoodbyeReason?, detail: String) -> Action {
        guard isOpen else { return .none }
        let userID = userID ?? ""
        let members = rooms.filter { $0.value.isIn && !$0.value.mediaStopped }.map {
            Member(room: $0.value.room, userID: userID, session: $0.value.session)
        }
        rooms.removeAll()
        phase = .closing
        return .close(Close(reason: reason, goodbye: goodbye, detail: detail, members: members))
    }

    /// The socket was freed. Returns whether it had not been.
    public mutating func freed() -> Bool {
        defer { phase = .closed }
        return phase != .closed
    }
}

extension ServerConnectionState.Action {
    /// The close this action is, if it is one.
    fileprivate var closing: ServerConnectionState.Close? {
        if case .close(let close) = self { close } else { nil }
    }
}

/// Why a server closed a connection.
public enum CloseReason: String, Sendable, Hashable, CaseIterable {
    /// The client closed it, or it was reset.
    case peerClosed
    /// A frame too long, malformed, unknown, or not allowed (another user's, out of turn).
    case protocolError
    /// No hello and login within the login timeout.
    case loginTimeout
    /// The client read too slowly: its output buffer passed the maximum.
    case slowReader
    /// The hello's version or dialect is not the server's.
    case handshakeRefused
    /// The server shut down.
    case serverShutdown
}

extension ClientMessage {
    /// The user a client's message names.
    var userID: String {
        switch self {
        case .login(let request): request.userID
        case .heartbeat(let userID, _), .logout(let userID, _), .renewToken(let userID, _, _),
            .connectionResumed(let userID, _), .setHidden(let userID, _, _):
            userID
        }
    }
}
