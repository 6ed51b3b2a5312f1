internal import CLibevent
import Foundation
import Logging
import RoomLinkEngine
@_spi(RoomLinkInternals) import RoomLinkLibevent
import RoomLinkNetwork
import RoomLinkRuntime
import RoomLinkTokens
import RoomLinkWire
import SwiftProtobuf

/// One connection to the LiveKit port of `roomlink serve`: an HTTP/1.1 request first — `GET /rtc` upgraded to a
/// WebSocket of signalling, `GET /rtc/validate`, or the room service (``LiveKitRoomService``) — then, for a
/// participant, LiveKit's signalling: binary protobuf `SignalRequest`s in, `SignalResponse`s out, by the rules of
/// ``LiveKitSignalState``.
final class LiveKitConnection: ClientChannel, ServedConnection, @unchecked Sendable {
    // Safe: every `var` is touched on `loop`'s thread only — from the bufferevent's callbacks (its base is the loop's),
    // from timers on that loop, and from `answer`, which hops there first. The `let`s are immutable and Sendable.

    package let id: UInt64
    package let loop: LibeventLoop
    let peer: String
    private let server: TCPServerTransport
    private let service: LiveKitProtocol
    private var bufferEvent: OpaquePointer?
    private var phase = Phase.request
    private let requests = HTTPRequestReader()
    private var socket: WebSocketSession?
    private var signal: LiveKitSignalState?
    private var room: (any RoomEndpoint)?
    private var timer: TimerHandle?
    /// Sends a refreshed token every `tokenRefresh` while the participant is in its room.
    private var refreshTimer: TimerHandle?
    /// The id of the latest offer of each of the participant's peer connections, which its answer carries back.
    private var offers: [String: UInt32] = [:]
    /// Whether the close was logged and counted (once per connection).
    private var closeCounted = false

    private enum Phase {
        /// Reading an HTTP request.
        case request
        /// A WebSocket of signalling.
        case signalling
        /// Writing its last bytes (an HTTP answer, a leave and the WebSocket's close).
        case closing
        /// Freed.
        case closed
    }

    init(id: UInt64, fd: Int32, peer: String, loop: LibeventLoop, server: TCPServerTransport, service: LiveKitProtocol)
    {
        self.id = id
        self.peer = peer
        self.loop = loop
        self.server = server
        self.service = service
        Sockets.setNoDelay(fd)
        bufferEvent = server.bufferEvent(fd: fd, on: loop)
        guard let bufferEvent else {
            server.logger.error("cannot make a bufferevent for a connection", metadata: ["peer": "\(peer)"])
            phase = .closed
            return
        }
        let context = Unmanaged.passUnretained(self).toOpaque()
        bufferevent_setcb(bufferEvent, readCallback, writeCallback, eventCallback, context)
        Sockets.startReading(bufferEvent)
        // A connection whose request does not arrive within the login timeout is closed.
        timer = try? loop.schedule(after: server.configuration.loginTimeout) { [self] in
            guard phase == .request else { return }
            finish(.loginTimeout, "no request within the login timeout")
        }
    }

    package var isOpen: Bool { phase == .request || phase == .signalling }

    // MARK: - Reading

    fileprivate func readable() {
        guard let bufferEvent else { return }
        let input = bufferevent_get_input(bufferEvent)!
        switch phase {
        case .request:
            let length = evbuffer_get_length(input)
            guard length > 0, let bytes = evbuffer_pullup(input, -1) else { return }
            switch requests.read(UnsafeRawBufferPointer(start: bytes, count: length)) {
            case .incomplete:
                evbuffer_drain(input, length)
            case .invalid(let detail):
                evbuffer_drain(input, length)
                respond(400, detail, reason: .protocolError)
            case .request(let request, let consumed):
                evbuffer_drain(input, consumed)
                server.statistics.add(.bytesReceived, consumed)
                handle(request)
                // The bytes after a WebSocket handshake are its first frames.
                if phase == .signalling, evbuffer_get_length(input) > 0 { readable() }
            }
        case .signalling, .closing:
            guard let socket else {
                evbuffer_drain(input, evbuffer_get_length(input))
                return
            }
            for message in socket.receive() where phase == .signalling {
                server.statistics.add(.framesReceived)
                server.statistics.add(.bytesReceived, message.payload.count)
                let request: Livekit_SignalRequest
                do {
                    request = try Livekit_SignalRequest(serializedBytes: message.payload)
                } catch {
                    finish(.protocolError, "a message that is not a SignalRequest: \(error)", code: 1003)
                    return
                }
                if case .pingReq = request.message { server.statistics.add(.heartbeatsReceived) }
                if case .ping = request.message { server.statistics.add(.heartbeatsReceived) }
                carry(signal?.received(request) ?? [])
            }
            if socket.isOver {
                if phase == .signalling {
                    lost("the WebSocket closed")
                } else {
                    free()
                }
            }
        case .closed:
            break
        }
    }

    private func handle(_ request: HTTPRequest) {
        let path = request.path
        switch (request.method, path) {
        case ("GET", "/rtc"), ("GET", "/rtc/"):
            upgrade(request)
        case ("GET", "/rtc/validate"):
            do {
                _ = try service.join(request.query, authorization: request.header("authorization"))
                respond(200, "success")
            } catch {
                respond(error.status, error.message)
            }
        case (_, _) where path.hasPrefix(LiveKitRoomService.prefix):
            LiveKitRoomService(service: service).handle(request) { [self] answer in
                loop.execute { [self] in respond(answer.status, answer.body, contentType: answer.contentType) }
            }
        default:
            // `/rtc/v1` among them: the SDK falls back to `/rtc`.
            respond(404, "404 page not found")
        }
    }

    /// `GET /rtc`: the token checked, the WebSocket opened (RFC 6455's handshake), and the participant's login sent
    /// to its room.
    private func upgrade(_ request: HTTPRequest) {
        guard request.isUpgrade, request.header("upgrade")?.lowercased() == "websocket",
            let key = request.header("sec-websocket-key"), request.header("sec-websocket-version") == "13"
        else { return respond(400, "expected a WebSocket upgrade (version 13)") }
        let join: LiveKitJoin
        do {
            join = try service.join(request.query, authorization: request.header("authorization"))
        } catch {
            return respond(error.status, error.message)
        }
        guard let bufferEvent, let socket = WebSocketSession(on: bufferEvent, isServer: true, maximumMessage: 1 << 20)
        else { return finish(.protocolError, "cannot make a WebSocket session") }
        let accept = Digests.sha1(Data((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))
        write(
            Array(
                ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Accept: \(accept.base64EncodedString())\r\n\r\n").utf8
            )
        )
        if let timer { loop.cancel(timer) }
        timer = nil
        self.socket = socket
        phase = .signalling
        // The client counts in real seconds: the server's timings as they run (`--time-scale`).
        let hello = server.hello
        let scale = server.group.configuration.timeScale
        let state = LiveKitSignalState(
            join: join,
            pingInterval: (hello.heartbeatInterval > .zero ? hello.heartbeatInterval : .seconds(5)) * scale,
            pingTimeout: service.pingTimeout * scale
        )
        signal = state
        // Known before the room hears of the participant: the others' updates name it by this sid.
        service.joined(join.identity, sid: state.participantSID, in: join.room)
        let room = server.room(join.room)
        self.room = room
        server.statistics.add(.loginRequests)
        deliver(state.login(), to: room)
    }

    // MARK: - The room's answers

    /// The room answers its member on this connection: on the connection's loop, in LiveKit's words.
    func send(_ message: ServerMessage, from room: any RoomEndpoint) {
        server.count(message)
        answer(message)
    }

    /// The room answered: on the connection's loop, in LiveKit's words.
    func answer(_ message: ServerMessage) {
        if loop.isInServiceThread {
            answered(message)
        } else {
            _ = try? loop.schedule(after: .zero) { [self] in answered(message) }
        }
    }

    private func answered(_ message: ServerMessage) {
        guard phase == .signalling, var state = signal else { return }
        let actions = state.answer(
            message,
            at: Int64(Date().timeIntervalSince1970 * 1000),
            room: { "RM_\($0)" },
            sid: { [service, state] identity in service.sid(of: identity, in: state.join.room) }
        )
        signal = state
        carry(actions)
        if refreshTimer == nil, state.isInRoom, service.tokenRefresh > .zero {
            let every = service.tokenRefresh * server.group.configuration.timeScale
            refreshTimer = try? loop.schedulePeriodic(every: every, handler: TokenRefresher(connection: self))
        }
    }

    /// Sends the participant a refreshed token (``LiveKitSignalState/refreshedToken(secret:now:lifetime:)``).
    fileprivate func refreshToken() {
        guard phase == .signalling, let signal, let secret = service.keys.secrets[signal.join.apiKey] else { return }
        carry(signal.refreshedToken(secret: secret, now: Int64(Date().timeIntervalSince1970)))
    }

    /// The refresh timer's handler.
    private struct TokenRefresher: TimerHandler {
        let connection: LiveKitConnection
        func timerFired(_ timer: TimerHandle) { connection.refreshToken() }
    }

    /// The peer helper answered the offer for the peer connection `id`: the answer goes to the participant.
    func peerAnswered(id: String, sdp: String) {
        let body: @Sendable () -> Void = { [self] in
            guard phase == .signalling, let offerID = offers[id] else { return }
            let answer = Livekit_SessionDescription.with {
                $0.type = "answer"
                $0.sdp = sdp
                $0.id = offerID
            }
            carry([.respond(.with { $0.answer = answer })])
        }
        if loop.isInServiceThread {
            body()
        } else {
            _ = try? loop.schedule(after: .zero, body)
        }
    }

    /// The room service deleted the participant's room: on the connection's loop, before the room's removal arrives
    /// (both hop the same way).
    func roomDeleted() {
        let body: @Sendable () -> Void = { [self] in
            guard phase == .signalling, var state = signal else { return }
            let actions = state.roomDeleted()
            signal = state
            carry(actions)
        }
        if loop.isInServiceThread {
            body()
        } else {
            _ = try? loop.schedule(after: .zero, body)
        }
    }

    private func carry(_ actions: [LiveKitSignalState.Action]) {
        for action in actions {
            switch action {
            case .deliver(let message):
                if let room { deliver(message, to: room) }
            case .respond(let response):
                guard let socket, let bytes: [UInt8] = try? response.serializedBytes() else { continue }
                socket.send(bytes)
                server.statistics.add(.framesSent)
                server.statistics.add(.bytesSent, bytes.count)
                checkOutput()
            case .negotiate(let peer, let offer):
                offers[peer] = offer.id
                service.peers?.offer(id: peer, sdp: offer.sdp, for: self)
            case .candidate(let peer, let json):
                service.peers?.candidate(id: peer, json: json)
            case .close(let detail):
                if let signal, case .closed = signal.phase {
                    // Forgotten a while after it left, not at once: the others' updates of its leave still name it.
                    let (identity, sid, room) = (signal.join.identity, signal.participantSID, signal.join.room)
                    _ = try? loop.schedule(after: .seconds(60)) { [service] in
                        service.left(identity, sid: sid, in: room)
                    }
                }
                finish(.peerClosed, detail, code: 1000)
            }
        }
    }

    private func deliver(_ message: ClientMessage, to room: any RoomEndpoint) {
        if room.loop.isInServiceThread {
            room.deliver(message, on: self)
        } else {
            _ = try? room.loop.schedule(after: .zero) { [self] in room.deliver(message, on: self) }
        }
    }

    // MARK: - Writing

    private func write(_ bytes: [UInt8]) {
        guard let bufferEvent else { return }
        bytes.withUnsafeBytes { _ = bufferevent_write(bufferEvent, $0.baseAddress, $0.count) }
    }

    /// A client that reads too slowly is dropped, as on RoomLink's own protocol.
    private func checkOutput() {
        guard let bufferEvent, phase == .signalling else { return }
        let pending = evbuffer_get_length(bufferevent_get_output(bufferEvent))
        if pending > server.configuration.maximumOutputBuffer {
            lost("\(pending) bytes waiting to be read, more than the maximum", reason: .slowReader)
        }
    }

    /// Answers an HTTP request and closes the connection once the answer is written.
    private func respond(_ status: Int, _ body: String, contentType: String = "text/plain; charset=utf-8") {
        respond(status, Array(body.utf8), contentType: contentType)
    }

    private func respond(_ status: Int, _ body: [UInt8], contentType: String, reason: CloseReason = .peerClosed) {
        guard phase == .request else { return }
        let head =
            "HTTP/1.1 \(status) \(HTTPStatus.reason(status))\r\nContent-Type: \(contentType)\r\n"
            + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        write(Array(head.utf8) + body)
        server.statistics.add(.bytesSent, head.utf8.count + body.count)
        closing(reason, "HTTP \(status)")
    }

    private func respond(_ status: Int, _ body: String, reason: CloseReason) {
        respond(status, Array(body.utf8), contentType: "text/plain; charset=utf-8", reason: reason)
    }

    fileprivate func writable() {
        guard phase == .closing, let bufferEvent else { return }
        // An HTTP answer is done once written; a WebSocket waits for the client's close too (or the grace).
        if evbuffer_get_length(bufferevent_get_output(bufferEvent)) == 0, socket?.isOver ?? true { free() }
    }

    fileprivate func event(_ what: Int16) {
        if phase == .closing {
            free()
        } else if what & (Sockets.eof | Sockets.error) != 0 {
            server.noteTLSFailure(what, of: bufferEvent, peer: peer)
            lost(what & Sockets.eof != 0 ? "end of stream" : "connection reset or failed")
        }
    }

    // MARK: - Closing

    package func shutDown() {
        guard phase == .signalling, var state = signal else {
            return finish(.serverShutdown, "the server is shutting down", code: 1001)
        }
        // The rooms hear that the connection closed (as on RoomLink's protocol): each holds the participant until its
        // ping timeout, for a resume on another node.
        tellRoomClosed()
        let actions = state.shutDown()
        signal = state
        for case .respond(let response) in actions {
            if let socket, let bytes: [UInt8] = try? response.serializedBytes() { socket.send(bytes) }
        }
        finish(.serverShutdown, "the server is shutting down", code: 1001)
    }

    package func loginTimedOut() {
        finish(.loginTimeout, "no request within the login timeout")
    }

    /// The connection was lost under a participant (its socket closed or failed): its room holds it until its ping
    /// timeout, for a resume.
    private func lost(_ detail: String, reason: CloseReason = .peerClosed) {
        log(reason, detail)
        tellRoomClosed()
        free()
    }

    private func tellRoomClosed() {
        guard let signal, signal.isInRoom, let room else { return }
        let (identity, session) = (signal.join.identity, signal.join.session)
        room.loop.runSoon { [self] in room.connectionClosed(userID: identity, session: session, on: self) }
        self.signal = nil
    }

    /// Closes: the WebSocket's close handshake (`code`) when there is one, then the socket once written or after the
    /// close grace.
    private func finish(_ reason: CloseReason, _ detail: String, code: UInt16 = 1000) {
        guard isOpen else { return }
        socket?.close(code: code, reason: detail)
        closing(reason, detail)
        if reason != .peerClosed { tellRoomClosed() }
    }

    private func closing(_ reason: CloseReason, _ detail: String) {
        guard isOpen else { return }
        log(reason, detail)
        phase = .closing
        if let timer { loop.cancel(timer) }
        timer = try? loop.schedule(after: server.configuration.closeGrace) { [self] in free() }
        writable()
    }

    private func log(_ reason: CloseReason, _ detail: String) {
        guard !closeCounted else { return }
        closeCounted = true
        let level: Logger.Level = reason == .peerClosed || reason == .serverShutdown ? .debug : .notice
        server.logger.log(
            level: level,
            "closed a LiveKit connection: \(reason.rawValue): \(detail)",
            metadata: ["peer": "\(peer)", "connection": "\(id)", "identity": "\(signal?.join.identity ?? "-")"]
        )
        server.statistics.count(reason)
    }

    package func free() {
        guard phase != .closed else { return }
        log(.peerClosed, "freed")
        phase = .closed
        if let timer { loop.cancel(timer) }
        timer = nil
        if let refreshTimer { loop.cancel(refreshTimer) }
        refreshTimer = nil
        socket = nil
        if !offers.isEmpty { service.peers?.close(ids: Array(offers.keys)) }
        if let bufferEvent { bufferevent_free(bufferEvent) }
        bufferEvent = nil
        server.forget(self)
    }
}

// Capture-free C callbacks; the context is the connection, unretained: the server's table holds it until `free`,
// after which libevent calls nothing.

private func readCallback(_ bufferEvent: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    let connection = Unmanaged<LiveKitConnection>.fromOpaque(context!).takeUnretainedValue()
    connection.loop.runCallback { connection.readable() }
}

private func writeCallback(_ bufferEvent: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    let connection = Unmanaged<LiveKitConnection>.fromOpaque(context!).takeUnretainedValue()
    connection.loop.runCallback { connection.writable() }
}

private func eventCallback(_ bufferEvent: OpaquePointer?, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    let connection = Unmanaged<LiveKitConnection>.fromOpaque(context!).takeUnretainedValue()
    connection.loop.runCallback { connection.event(what) }
}
