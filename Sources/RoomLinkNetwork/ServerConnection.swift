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
final class ServerConnection: ClientChannel, ServedConnection, CallbackEndWork, @unchecked Sendable {
    // Safe: every `var` is touched on `loop`'s thread only — from libevent callbacks on that loop (the bufferevent's,
    // whose base is the loop's), from timers on that loop, and from `send`, which hops there first. The `let`s are
    // immutable and Sendable.

    let id: UInt64
    let loop: LibeventLoop
    let peer: String
    private let server: TCPServerTransport
    private var bufferEvent: OpaquePointer?
    /// The connection's rules: what it carries, what it refuses, why it closes. This class only carries them out.
    private var state: ServerConnectionState
    private var timer: TimerHandle?
    /// The frames written during the loop's current callback, sent together at its end (``callbackEnded()``): one
    /// system call for what one turn of the loop says to this client. The first frame is kept as it is (most turns
    /// write one frame to a connection, and that costs no copy); a second is appended to it.
    private var unsent: [UInt8] = []
    /// ``ServerFrame/keepAlive`` on the wire, encoded once.
    private static let keepAliveFrame = ServerFrame.keepAlive.encoded()

    /// Serves the connection on `fd`; `greeted` is the client's ID when its hello was already taken and answered.
    init(id: UInt64, fd: Int32, peer: String, loop: LibeventLoop, server: TCPServerTransport, greeted: String? = nil) {
        self.id = id
        self.peer = peer
        self.loop = loop
        self.server = server
        state = ServerConnectionState(limits: server.connectionLimits, greeted: greeted)
        Sockets.setNoDelay(fd)
        if let size = server.configuration.socketSendBuffer { Sockets.setSendBuffer(fd, bytes: size) }
        bufferEvent = server.bufferEvent(fd: fd, on: loop)
        guard let bufferEvent else {
            server.logger.error("cannot make a bufferevent for a connection", metadata: ["peer": "\(peer)"])
            _ = state.freed()
            return
        }
        let context = Unmanaged.passUnretained(self).toOpaque()
        bufferevent_setcb(bufferEvent, serverReadCallback, serverWriteCallback, serverEventCallback, context)
        bufferevent_setwatermark(bufferEvent, Sockets.read, 0, Sockets.inputHighWatermark)
        Sockets.startReading(bufferEvent)
        // A connection that never logs in is closed after the login timeout.
        timer = try? loop.schedule(after: server.configuration.loginTimeout) { [self] in
            loginTimedOut()
        }
    }

    var isOpen: Bool { state.isOpen }

    // MARK: - Reading

    fileprivate func readable() {
        guard let bufferEvent else { return }
        let input = bufferevent_get_input(bufferEvent)!
        while state.isOpen {
            switch InputFrames.next(in: input) {
            case .incomplete:
                return
            case .tooLong(let length):
                let detail = "frame of \(length) bytes is longer than the maximum \(WireProtocol.maximumFrameLength)"
                if let close = state.refused(detail) { carry(close) }
                return
            case .frame(let body, let consumed):
                let now = loop.now
                let frame: ClientFrame
                do {
                    frame = try ClientFrame(body: body, receivedAt: now)
                } catch {
                    if let close = state.refused(error.description) { carry(close) }
                    return
                }
                evbuffer_drain(input, consumed)
                server.statistics.add(.framesReceived)
                server.statistics.add(.bytesReceived, consumed)
                handle(frame, at: now)
            }
        }
    }

    private func handle(_ frame: ClientFrame, at now: RuntimeInstant) {
        let action = state.received(frame, at: now) { server.room($0) }
        if let timer, state.isLoggedIn {
            // Logged in: the login timeout no longer applies (the timer is the login timeout's until then).
            loop.cancel(timer)
            self.timer = nil
        }
        switch action {
        case .none:
            break
        case .answerHello:
            write(ServerFrame.helloAck(server.hello).encoded())
        case .deliver(let message, let room):
            switch message {
            case .login: server.statistics.add(.loginRequests)
            case .heartbeat: server.statistics.add(.heartbeatsReceived)
            default: break
            }
            deliver(message, to: room)
        case .resumed(let member):
            let (room, userID, session) = (member.room, member.userID, member.session)
            room.loop.runSoon { [self] in room.dataResumed(userID: userID, session: session, on: self) }
        case .close(let close):
            carry(close)
        }
    }

    // MARK: - Media (a dialect whose media flows continuously)

    /// The periodic media check (see ``ServerConnectionState/checkMedia(at:)``): the rooms of members whose media
    /// stopped hear that their connection closed, and a quiet connection gets a keep-alive (docs/protocol.md).
    func checkMedia(now: RuntimeInstant) {
        let (stopped, keepAlive) = state.checkMedia(at: now)
        for member in stopped { tellClosed(member) }
        if keepAlive { write(Self.keepAliveFrame) }
    }

    /// Tells the room of `member` that its connection closed (or its data stopped), on the room's loop.
    private func tellClosed(_ member: ServerConnectionState.Member) {
        let (room, userID, session) = (member.room, member.userID, member.session)
        room.loop.runSoon { [self] in room.connectionClosed(userID: userID, session: session, on: self) }
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

    /// The room answers its member on this connection: encoded on the room's loop, written on the connection's.
    func send(_ message: ServerMessage, from room: any RoomEndpoint) {
        server.count(message)
        send(ServerFrame.room(room.roomID, message).encoded(server: server.hello))
    }

    /// Writes a frame from any thread: on the connection's loop, at once there; dropped once the connection closes.
    func send(_ frame: [UInt8]) {
        if loop.isInServiceThread {
            write(frame)
        } else {
            _ = try? loop.schedule(after: .zero) { [self] in write(frame) }
        }
    }

    private func write(_ frame: [UInt8]) {
        guard state.isOpen, bufferEvent != nil else { return }
        if unsent.isEmpty {
            loop.atCallbackEnd(self)
            unsent = frame
        } else {
            unsent.append(contentsOf: frame)
        }
        server.statistics.add(.framesSent)
        server.statistics.add(.bytesSent, frame.count)
    }

    /// The loop's callback ended: what it wrote goes out, straight to the socket when nothing waits before it.
    func callbackEnded() {
        guard sendUnsent(), state.isOpen, let bufferEvent else { return }
        let pending = evbuffer_get_length(bufferevent_get_output(bufferEvent))
        if let close = state.wrote(at: state.tracksWrites ? loop.now : nil, pending: pending) { carry(close) }
    }

    /// Sends the frames written so far in this callback (also before a close, which must not lose them); whether
    /// there were any.
    private func sendUnsent() -> Bool {
        guard !unsent.isEmpty else { return false }
        if let bufferEvent {
            unsent.withUnsafeBytes { bytes in
                // Under TLS through the bufferevent, which encrypts; otherwise straight to the socket.
                if server.tls == nil {
                    Sockets.write(bytes, to: bufferEvent)
                } else {
                    _ = bufferevent_write(bufferEvent, bytes.baseAddress, bytes.count)
                }
            }
        }
        unsent = []
        return true
    }

    fileprivate func writable() {
        guard state.phase == .closing, let bufferEvent else { return }
        if evbuffer_get_length(bufferevent_get_output(bufferEvent)) == 0 { free() }
    }

    fileprivate func event(_ what: Int16) {
        if state.phase == .closing {
            free()
        } else if what & (Sockets.eof | Sockets.error) != 0,
            let close = state.peerClosed(endOfStream: what & Sockets.eof != 0)
        {
            server.noteTLSFailure(what, of: bufferEvent, peer: peer)
            carry(close)
        }
    }

    // MARK: - Closing

    func shutDown() {
        close(.serverShutdown, goodbye: .serverShutdown, detail: "the server is shutting down")
    }

    func loginTimedOut() {
        if let close = state.loginTimedOut() { carry(close) }
    }

    /// Closes the connection for `reason`, sending `goodbye` first when given (see ``carry(_:)``).
    func close(_ reason: CloseReason, goodbye: GoodbyeReason?, detail: String) {
        if case .close(let close) = state.close(reason, goodbye: goodbye, detail: detail) { carry(close) }
    }

    /// Carries out a close the state decided: logs and counts it, tells the members' rooms their connection closed,
    /// and writes the goodbye when there is one (the socket is freed once it is written, or after the close grace).
    private func carry(_ close: ServerConnectionState.Close) {
        let level: Logger.Level = close.reason == .peerClosed || close.reason == .serverShutdown ? .debug : .notice
        server.logger.log(
            level: level,
            "closed a connection: \(close.reason.rawValue): \(close.detail)",
            metadata: [
                "peer": "\(peer)", "connection": "\(id)", "client": "\(state.clientID)",
                "user": "\(state.userID ?? "-")",
            ]
        )
        server.statistics.count(close.reason)
        _ = sendUnsent()
        if let timer { loop.cancel(timer) }
        timer = nil
        for member in close.members { tellClosed(member) }
        guard let goodbye = close.goodbye, let bufferEvent else {
            free()
            return
        }
        let frame = ServerFrame.goodbye(goodbye, detail: close.detail).encoded()
        frame.withUnsafeBytes { _ = bufferevent_write(bufferEvent, $0.baseAddress, $0.count) }
        bufferevent_disable(bufferEvent, Sockets.read)
        timer = try? loop.schedule(after: server.configuration.closeGrace) { [self] in free() }
    }

    /// Frees the socket now, whatever is left to write.
    func free() {
        _ = sendUnsent()
        guard state.freed() else { return }
        if let timer { loop.cancel(timer) }
        timer = nil
        if let bufferEvent { bufferevent_free(bufferEvent) }
        bufferEvent = nil
        server.forget(self)
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
