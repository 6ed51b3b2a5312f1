internal import CLibevent
import Logging
import RoomLinkEngine
@_spi(RoomLinkInternals) import RoomLinkLibevent
import RoomLinkRuntime
import RoomLinkWire

/// One client's connection to `roomlink serve`, on the loop that accepted it: it reads the client's frames, checks
/// them, routes each to its room, and writes the rooms' answers back.
///
/// A connection carries one user (the first login's) and the rooms it logged in to; a frame naming another user, or
/// a room it has not logged in to, closes it. It closes with a logged reason, and a `Goodbye` frame where one helps
/// the client, on: a frame too long, malformed or unknown; no hello and login within the login timeout; an output
/// buffer past the maximum (a client that reads too slowly); a hello of another version or dialect. Closing tells
/// each of its rooms that the member's connection closed, as a server's network stack notices a socket close.
final class ServerConnection: ClientChannel, @unchecked Sendable {
    // Safe: every `var` is touched on `loop`'s thread only — from libevent callbacks on that loop (the bufferevent's,
    // whose base is the loop's), from timers on that loop, and from `send`, which hops there first. The `let`s are
    // immutable and Sendable.

    let id: UInt64
    let loop: LibeventLoop
    let peer: String
    private let server: TCPServerTransport
    private var bufferEvent: OpaquePointer?
    private var phase = Phase.awaitingHello
    private var clientID = ""
    /// The user the connection carries: the first login's.
    private var userID: String?
    /// The rooms the connection logged in to, with the session of the latest login and whether it is still in.
    private var rooms: [String: Membership] = [:]
    private var timer: TimerHandle?
    /// When the last frame was written: a quiet connection of a dialect whose media flows gets keep-alives. Kept
    /// only for such a dialect, so that other dialects' writes read no clock.
    private var lastWrite = RuntimeInstant.zero
    private let tracksWrites: Bool
    /// ``ServerFrame/keepAlive`` on the wire, encoded once.
    private static let keepAliveFrame = ServerFrame.keepAlive.encoded()

    private enum Phase { case awaitingHello, open, closing, closed }

    private struct Membership {
        let room: any RoomEndpoint
        var session: SessionID
        var isIn: Bool
        /// For a dialect whose media flows continuously: when the member's media last arrived, and whether the
        /// server has treated it as stopped (and told the room).
        var lastMedia: RuntimeInstant
        var mediaStopped = false
    }

    /// Serves the connection on `fd`; `greeted` is the client's ID when its hello was already taken and answered.
    init(id: UInt64, fd: Int32, peer: String, loop: LibeventLoop, server: TCPServerTransport, greeted: String? = nil) {
        self.id = id
        if let greeted {
            phase = .open
            clientID = greeted
        }
        self.peer = peer
        self.loop = loop
        self.tracksWrites = server.configuration.mediaInterval.map { $0 > .zero } ?? false
        self.server = server
        Sockets.setNoDelay(fd)
        if let size = server.configuration.socketSendBuffer { Sockets.setSendBuffer(fd, bytes: size) }
        bufferEvent = bufferevent_socket_new(loop.eventBase, fd, Sockets.bufferEventOptions)
        guard let bufferEvent else {
            server.logger.error("cannot make a bufferevent for a connection", metadata: ["peer": "\(peer)"])
            phase = .closed
            return
        }
        let context = Unmanaged.passUnretained(self).toOpaque()
        bufferevent_setcb(bufferEvent, serverReadCallback, serverWriteCallback, serverEventCallback, context)
        bufferevent_setwatermark(bufferEvent, Sockets.read, 0, Sockets.inputHighWatermark)
        bufferevent_enable(bufferEvent, Sockets.readWrite)
        // A connection that never logs in is closed after the login timeout.
        timer = try? loop.schedule(after: server.configuration.loginTimeout) { [self] in
            guard userID == nil else { return }
            close(.loginTimeout, goodbye: .loginTimeout, detail: "no hello and login within the login timeout")
        }
    }

    var isOpen: Bool { phase == .awaitingHello || phase == .open }

    // MARK: - Reading

    fileprivate func readable() {
        guard let bufferEvent else { return }
        let input = bufferevent_get_input(bufferEvent)!
        while isOpen {
            switch InputFrames.next(in: input) {
            case .incomplete:
                return
            case .tooLong(let length):
                close(
                    .protocolError,
                    goodbye: .protocolError,
                    detail: "frame of \(length) bytes is longer than the maximum \(WireProtocol.maximumFrameLength)"
                )
                return
            case .frame(let body, let consumed):
                let frame: ClientFrame
                do {
                    frame = try ClientFrame(body: body, receivedAt: loop.now)
                } catch {
                    close(.protocolError, goodbye: .protocolError, detail: error.description)
                    return
                }
                evbuffer_drain(input, consumed)
                server.statistics.add(.framesReceived)
                server.statistics.add(.bytesReceived, consumed)
                handle(frame)
            }
        }
    }

    private func handle(_ frame: ClientFrame) {
        switch (phase, frame) {
        case (.awaitingHello, .hello(let hello)):
            guard hello.protocolVersion == WireProtocol.version else {
                close(
                    .handshakeRefused,
                    goodbye: .unsupportedVersion,
                    detail: "protocol version \(hello.protocolVersion); this server speaks \(WireProtocol.version)"
                )
                return
            }
            if let dialect = hello.dialect, dialect != server.configuration.dialect {
                close(
                    .handshakeRefused,
                    goodbye: .wrongDialect,
                    detail: "dialect \(dialect.rawValue); this server speaks \(server.configuration.dialect.rawValue)"
                )
                return
            }
            clientID = hello.clientID
            phase = .open
            write(ServerFrame.helloAck(server.hello).encoded())
        case (.awaitingHello, .room), (.awaitingHello, .media):
            close(.protocolError, goodbye: .protocolError, detail: "the first frame must be a hello")
        case (_, .hello):
            close(.protocolError, goodbye: .protocolError, detail: "a second hello")
        case (_, .room(let roomID, let message)):
            route(message, to: roomID)
        case (_, .media(let roomID)):
            mediaArrived(for: roomID)
        }
    }

    private func route(_ message: ClientMessage, to roomID: String) {
        let user = message.userID
        if let userID, user != userID {
            close(
                .protocolError,
                goodbye: .protocolError,
                detail: "a frame for user '\(user)' on the connection of user '\(userID)'"
            )
            return
        }
        let room: any RoomEndpoint
        let session: SessionID?
        switch message {
        case .login(let request):
            session = request.session
            server.statistics.add(.loginRequests)
        case .connectionResumed(_, let resumed) where rooms[roomID] == nil:
            // The member's data flows again over a connection it did not log in on (its old one closed during a short
            // outage): the room checks the session before it sends the member anything here.
            session = resumed
        default:
            session = nil
        }
        if let session {
            if rooms[roomID] == nil, rooms.count >= server.configuration.maximumRoomsPerConnection {
                close(
                    .protocolError,
                    goodbye: .protocolError,
                    detail: "more than \(server.configuration.maximumRoomsPerConnection) rooms on one connection"
                )
                return
            }
            if userID == nil {
                userID = user
                if let timer { loop.cancel(timer) }
                timer = nil
            }
            room = rooms[roomID]?.room ?? server.room(roomID)
            rooms[roomID] = Membership(room: room, session: session, isIn: true, lastMedia: loop.now)
        } else {
            guard let membership = rooms[roomID] else {
                close(
                    .protocolError,
                    goodbye: .protocolError,
                    detail: "a frame for room '\(roomID)', which this connection has not logged in to"
                )
                return
            }
            room = membership.room
            switch message {
            case .heartbeat: server.statistics.add(.heartbeatsReceived)
            case .logout(_, let session) where session == membership.session: rooms[roomID]?.isIn = false
            default: break
            }
        }
        deliver(message, to: room)
    }

    // MARK: - Media (a dialect whose media flows continuously)

    private func mediaArrived(for roomID: String) {
        // Media for a room the connection is not (or no longer) in is harmless: ignored.
        guard let membership = rooms[roomID], membership.isIn, let userID else { return }
        rooms[roomID]?.lastMedia = loop.now
        guard membership.mediaStopped else { return }
        rooms[roomID]?.mediaStopped = false
        // The server hears the member again: as when its client says so (`connectionResumed`).
        deliver(.connectionResumed(userID: userID, session: membership.session), to: membership.room)
    }

    /// Treats the media of every member whose media has not arrived for `timeout` as stopped: each room hears that
    /// the member's data stopped, and times it out from now unless it flows again.
    ///
    /// The server's media flows too: a connection with a logged-in room that was written nothing for `quietAfter` gets
    /// a keep-alive, so that its client tells a silent path from a quiet room (docs/protocol.md).
    func checkMedia(now: RuntimeInstant, timeout: Duration, quietAfter: Duration) {
        guard isOpen, let userID else { return }
        var isIn = false
        for (roomID, membership) in rooms where membership.isIn {
            isIn = true
            guard !membership.mediaStopped, membership.lastMedia.duration(to: now) > timeout else { continue }
            rooms[roomID]?.mediaStopped = true
            tellClosed(membership, userID: userID)
        }
        if isIn, phase == .open, lastWrite.duration(to: now) >= quietAfter { write(Self.keepAliveFrame) }
    }

    /// Tells the room of `membership` that its member's connection closed (or its data stopped), on the room's loop.
    private func tellClosed(_ membership: Membership, userID: String) {
        let (room, session) = (membership.room, membership.session)
        room.loop.runSoon { room.connectionClosed(userID: userID, session: session) }
    }

    // The two hops below run for every frame: written out, so that a frame for a room on this loop allocates no
    // closure (`runSoon` takes an escaping one).

    private func deliver(_ message: ClientMessage, to room: any RoomEndpoint) {
        if room.loop.isInServiceThread {
            room.deliver(message, on: self)
        } else {
            _ = try? room.loop.schedule(after: .zero) { [self] in room.deliver(message, on: self) }
        }
    }

    // MARK: - Writing

    /// Writes a frame from any thread: on the connection's loop, at once there; dropped once the connection closes.
    func send(_ frame: [UInt8]) {
        if loop.isInServiceThread {
            write(frame)
        } else {
            _ = try? loop.schedule(after: .zero) { [self] in write(frame) }
        }
    }

    private func write(_ frame: [UInt8]) {
        guard isOpen, let bufferEvent else { return }
        frame.withUnsafeBytes { _ = bufferevent_write(bufferEvent, $0.baseAddress, $0.count) }
        if tracksWrites { lastWrite = loop.now }
        server.statistics.add(.framesSent)
        server.statistics.add(.bytesSent, frame.count)
        let pending = evbuffer_get_length(bufferevent_get_output(bufferEvent))
        if pending > server.configuration.maximumOutputBuffer {
            // A goodbye could not get through a full buffer: close at once.
            close(.slowReader, goodbye: nil, detail: "\(pending) bytes waiting to be read, more than the maximum")
        }
    }

    fileprivate func writable() {
        guard phase == .closing, let bufferEvent else { return }
        if evbuffer_get_length(bufferevent_get_output(bufferEvent)) == 0 { free() }
    }

    fileprivate func event(_ what: Int16) {
        if phase == .closing {
            free()
        } else if what & (Sockets.eof | Sockets.error) != 0 {
            let detail = what & Sockets.eof != 0 ? "end of stream" : "connection reset or failed"
            close(.peerClosed, goodbye: nil, detail: detail)
        }
    }

    // MARK: - Closing

    /// Closes the connection for `reason`: logs it, tells its rooms their member's connection closed, and sends
    /// `goodbye` first when given (the socket closes once it is written, or after the close grace).
    func close(_ reason: CloseReason, goodbye: GoodbyeReason?, detail: String) {
        guard isOpen else { return }
        let level: Logger.Level = reason == .peerClosed || reason == .serverShutdown ? .debug : .notice
        server.logger.log(
            level: level,
            "closed a connection: \(reason.rawValue): \(detail)",
            metadata: [
                "peer": "\(peer)", "connection": "\(id)", "client": "\(clientID)", "user": "\(userID ?? "-")",
            ]
        )
        server.statistics.count(reason)
        if let timer { loop.cancel(timer) }
        timer = nil
        for membership in rooms.values where membership.isIn && !membership.mediaStopped {
            tellClosed(membership, userID: userID ?? "")
        }
        rooms.removeAll()
        guard let goodbye, let bufferEvent else {
            free()
            return
        }
        let frame = ServerFrame.goodbye(goodbye, detail: detail).encoded()
        frame.withUnsafeBytes { _ = bufferevent_write(bufferEvent, $0.baseAddress, $0.count) }
        bufferevent_disable(bufferEvent, Sockets.read)
        phase = .closing
        timer = try? loop.schedule(after: server.configuration.closeGrace) { [self] in free() }
    }

    /// Frees the socket now, whatever is left to write.
    func free() {
        guard phase != .closed else { return }
        phase = .closed
        if let timer { loop.cancel(timer) }
        timer = nil
        if let bufferEvent { bufferevent_free(bufferEvent) }
        bufferEvent = nil
        server.forget(self)
    }
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

// Capture-free C callbacks; the context is the connection, unretained: the server's table holds it until `free`,
// after which libevent calls nothing.

private func serverReadCallback(_ bufferEvent: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    let connection = Unmanaged<ServerConnection>.fromOpaque(context!).takeUnretainedValue()
    connection.loop.runCallback { connection.readable() }
}

private func serverWriteCallback(_ bufferEvent: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    let connection = Unmanaged<ServerConnection>.fromOpaque(context!).takeUnretainedValue()
    connection.loop.runCallback { connection.writable() }
}

private func serverEventCallback(_ bufferEvent: OpaquePointer?, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    let connection = Unmanaged<ServerConnection>.fromOpaque(context!).takeUnretainedValue()
    connection.loop.runCallback { connection.event(what) }
}
