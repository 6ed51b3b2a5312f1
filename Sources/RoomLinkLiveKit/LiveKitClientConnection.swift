internal import CLibevent
import Foundation
import RoomLinkEngine
@_spi(RoomLinkInternals) import RoomLinkLibevent
import RoomLinkNetwork
import RoomLinkRuntime
import RoomLinkTokens
import SwiftProtobuf

#if canImport(Glibc)
import Glibc
#endif

/// One dial of a RoomLink client to a LiveKit server for one room, on the client's loop: TCP, the `GET /rtc`
/// WebSocket handshake that carries the login, then signalling by the rules of the channel's ``LiveKitClientState``.
/// LiveKit's clients keep one signalling connection per room; a new login dials a new one.
final class LiveKitClientConnection: @unchecked Sendable {
    // Safe: every `var` — the channel's state among them — is touched on `loop`'s thread only: the client calls its
    // transport from its actor, which runs there; libevent's callbacks and timers run there; calls from other
    // threads (a dropped link, the transport's close) hop there.

    let loop: LibeventLoop
    let transport: LiveKitClientTransport
    let channel: LiveKitClientTransport.Channel
    /// The client's key in the transport's tables.
    let clientKey: ObjectIdentifier
    private weak var client: (any ClientEndpoint)?
    private var bufferEvent: OpaquePointer?
    private var phase = Phase.connecting
    private let responses = HTTPRequestReader(responses: true)
    private var socket: WebSocketSession?
    /// The handshake's `Sec-WebSocket-Key`, whose hash the server's `Sec-WebSocket-Accept` must be.
    private let key: String
    /// Which of the transport's servers it dialled.
    private let serverIndex: Int
    /// With an observer: when the attempt began (its login left with the dial), and when the unanswered heartbeat
    /// left.
    private let attemptStart: RuntimeInstant
    private var heartbeatSent: RuntimeInstant?

    enum Phase: Equatable {
        /// TCP's handshake.
        case connecting
        /// The `GET` sent; its answer awaited.
        case upgrading
        /// Signalling.
        case open
        /// Done: the socket is freed (or parked until its close is written).
        case closed
    }

    /// Dials for `client`'s `login` on `channel`.
    init(
        client: any ClientEndpoint,
        channel: LiveKitClientTransport.Channel,
        login: LoginRequest,
        loop: LibeventLoop,
        transport: LiveKitClientTransport
    ) {
        self.loop = loop
        self.transport = transport
        self.channel = channel
        self.client = client
        clientKey = ObjectIdentifier(client)
        attemptStart = loop.now
        var bytes = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in bytes.indices { bytes[index] = generator.next() }
        key = Data(bytes).base64EncodedString()
        // A token the client fetched from the app's token server is its own; otherwise the transport mints one.
        let token = login.token ?? transport.token(for: channel.state, hidden: login.hidden)
        let target = channel.state.dial(login, token: token)
        let (address, index, host) = transport.address(for: client, room: channel.state.room)
        serverIndex = index
        transport.observer?.connectionAttempted(at: attemptStart)
        var fd: Int32 = -1
        if let source = transport.source(spread: client.endpointHash) {
            fd = Sockets.bound(to: source)
            guard fd >= 0 else {
                let failure = errno == EADDRNOTAVAIL ? ConnectionFailure.other : ConnectionFailure(errno: errno)
                failLater(failure)
                return
            }
        }
        bufferEvent = TLSContext.clientBufferEvent(
            transport.tls,
            fd: fd,
            on: loop.eventBase,
            serverName: transport.configuration.tls?.serverName ?? transport.servers[index].host
        )
        guard let bufferEvent else {
            if fd >= 0 { Glibc.close(fd) }
            failLater(.outOfFiles)
            return
        }
        let context = Unmanaged.passUnretained(self).toOpaque()
        bufferevent_setcb(bufferEvent, liveKitClientReadCallback, nil, liveKitClientEventCallback, context)
        bufferevent_enable(bufferEvent, Sockets.readWrite)
        let status = address.connect(bufferEvent)
        if status != 0 {
            failLater(ConnectionFailure(errno: errno))
            return
        }
        // Written once TCP connects (the bufferevent holds it until then).
        let request =
            "GET \(target) HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\nUser-Agent: roomlink\r\n\r\n"
        write(Array(request.utf8))
        phase = .upgrading
    }

    var isLive: Bool { phase != .closed }

    /// Whether the WebSocket is open (the login's answer may still be on its way).
    var isOpen: Bool { phase == .open }

    /// A connection that could not even be made: the client hears its attempt refused when its loop next runs (it is
    /// in the middle of the step that sent the login).
    private func failLater(_ failure: ConnectionFailure) {
        phase = .closed
        channel.state.closed()
        _ = try? loop.schedule(after: .zero) { [self] in
            transport.observer?.connectionFailed(failure, at: loop.now)
            transport.moveOn(clientKey, from: serverIndex)
            client?.connectionChanged(.refused, room: channel.room)
            transport.forget(self)
        }
    }

    // MARK: - Sending

    /// Sends `message`'s request, if it makes one; `false` when the WebSocket is not open for it.
    func send(_ message: ClientMessage) -> Bool {
        guard phase == .open, let socket else { return phase == .upgrading }
        guard let request = channel.state.request(for: message, at: Self.wallMillis()),
            let bytes: [UInt8] = try? request.serializedBytes()
        else { return true }
        if case .heartbeat = message, transport.observer != nil { heartbeatSent = loop.now }
        socket.send(bytes)
        transport.countFrame()
        if case .logout = message { close(code: 1000) }
        return true
    }

    private func write(_ bytes: [UInt8]) {
        guard let bufferEvent else { return }
        bytes.withUnsafeBytes { _ = bufferevent_write(bufferEvent, $0.baseAddress, $0.count) }
    }

    // MARK: - Receiving

    fileprivate func readable() {
        guard let bufferEvent else { return }
        let input = bufferevent_get_input(bufferEvent)!
        if phase == .upgrading {
            let length = evbuffer_get_length(input)
            guard length > 0, let bytes = evbuffer_pullup(input, -1) else { return }
            switch responses.read(UnsafeRawBufferPointer(start: bytes, count: length)) {
            case .incomplete:
                evbuffer_drain(input, length)
                return
            case .invalid:
                evbuffer_drain(input, length)
                return finish(.closed(.protocolError), failure: .other)
            case .request(let response, let consumed):
                evbuffer_drain(input, consumed)
                upgraded(response)
            }
        }
        guard phase == .open, let socket else { return }
        for message in socket.receive() where phase == .open {
            transport.countFrame()
            guard let response = try? Livekit_SignalResponse(serializedBytes: message.payload) else {
                return finish(.closed(.protocolError))
            }
            carry(channel.state.received(response, at: Self.wallMillis()), response: response)
        }
        if phase == .open, socket.isOver { finish(.closed(.endOfStream)) }
    }

    /// The server's answer to the `GET`: the WebSocket opens, or the login is refused.
    private func upgraded(_ response: HTTPRequest) {
        let expected = Digests.sha1(Data((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))
            .base64EncodedString()
        guard response.status == 101 else {
            let rejection = channel.state.refused(status: response.status)
            transport.observer?.connectionFailed(rejection == nil ? .refused : .auth, at: loop.now)
            if rejection != nil {
                transport.observer?.loginAnswered(
                    after: attemptStart.duration(to: loop.now),
                    accepted: false,
                    at: loop.now
                )
            }
            release()
            if let rejection {
                client?.deliver(rejection, from: channel.room)
            } else {
                client?.connectionChanged(.refused, room: channel.room)
            }
            return
        }
        guard response.header("sec-websocket-accept") == expected, let bufferEvent,
            let socket = WebSocketSession(on: bufferEvent, isServer: false, maximumMessage: 1 << 20)
        else { return finish(.closed(.protocolError), failure: .other) }
        self.socket = socket
        phase = .open
        transport.observer?.connectionOpened(after: attemptStart.duration(to: loop.now), at: loop.now)
        client?.connectionChanged(.connected, room: channel.room)
    }

    private func carry(_ outputs: [LiveKitClientState.Output], response: Livekit_SignalResponse) {
        for output in outputs {
            switch output {
            case .deliver(let message):
                if transport.observer != nil { measure(message) }
                client?.deliver(message, from: channel.room)
            case .close(let cause):
                if let cause {
                    finish(.closed(cause))
                } else {
                    close(code: 1000)
                }
            }
        }
    }

    /// Times the answers an observer measures: the login's, the heartbeat's.
    private func measure(_ message: ServerMessage) {
        let now = loop.now
        switch message {
        case .heartbeatAck:
            if let sent = heartbeatSent {
                transport.observer?.heartbeatAnswered(after: sent.duration(to: now), at: now)
            }
            heartbeatSent = nil
        case .loginAccepted:
            transport.observer?.loginAnswered(after: attemptStart.duration(to: now), accepted: true, at: now)
        case .loginRejected:
            transport.observer?.connectionFailed(.auth, at: now)
            transport.observer?.loginAnswered(after: attemptStart.duration(to: now), accepted: false, at: now)
        case .busy:
            transport.observer?.connectionFailed(.busy, at: now)
            transport.observer?.loginAnswered(after: attemptStart.duration(to: now), accepted: false, at: now)
        default:
            break
        }
    }

    fileprivate func event(_ what: Int16) {
        if what & Sockets.connected != 0 {
            if let fd = bufferEvent.map(bufferevent_getfd) { Sockets.setNoDelay(fd) }
        } else if what & (Sockets.eof | Sockets.error | Sockets.timeout) != 0 {
            if phase == .upgrading {
                // Refused, or closed before the answer: the attempt failed (TLS's failure named as such).
                let failure = TLSContext.connectFailure(of: bufferEvent, tls: transport.tls)
                finish(.refused, failure: failure == .other && what & Sockets.eof != 0 ? .reset : failure)
            } else {
                finish(.closed(what & Sockets.eof != 0 ? .endOfStream : .reset))
            }
        }
    }

    // MARK: - Closing

    /// The connection ended under the client: freed, and the client told (`failure`: an attempt that failed).
    private func finish(_ event: ConnectionEvent, failure: ConnectionFailure? = nil) {
        guard phase != .closed else { return }
        if let failure { transport.observer?.connectionFailed(failure, at: loop.now) }
        if phase == .open, channel.state.login != nil {
            // A login still waiting for its answer never got one.
            transport.observer?.connectionFailed(.reset, at: loop.now)
        }
        release()
        transport.moveOn(clientKey, from: serverIndex)
        client?.connectionChanged(event, room: channel.room)
    }

    /// Ends the connection without telling the client: the WebSocket's close is written, then the socket freed.
    func close(code: UInt16 = 1000) {
        guard phase == .open, let socket, let bufferEvent else { return release() }
        socket.close(code: code, reason: "")
        // The bufferevent goes on alone until its close is written (or fails): the connection is over now.
        self.socket = nil
        self.bufferEvent = nil
        bufferevent_disable(bufferEvent, Sockets.read)
        bufferevent_setcb(bufferEvent, nil, liveKitClientWrittenCallback, liveKitClientWrittenEventCallback, nil)
        release()
        if evbuffer_get_length(bufferevent_get_output(bufferEvent)) == 0 { bufferevent_free(bufferEvent) }
    }

    /// Frees the socket (the server hears it close) and forgets the connection.
    private func release() {
        guard phase != .closed else { return }
        let wasOpen = phase == .open
        phase = .closed
        channel.state.closed()
        if wasOpen { transport.observer?.connectionClosed(at: loop.now) }
        socket = nil
        if let bufferEvent { bufferevent_free(bufferEvent) }
        bufferEvent = nil
        transport.forget(self)
    }

    static func wallMillis() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}

// Capture-free C callbacks; the context is the connection, unretained: the transport's table holds it until
// `release`, after which libevent calls nothing.

private func liveKitClientReadCallback(_ bufferEvent: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    let connection = Unmanaged<LiveKitClientConnection>.fromOpaque(context!).takeUnretainedValue()
    connection.loop.runCallback { connection.readable() }
}

private func liveKitClientEventCallback(
    _ bufferEvent: OpaquePointer?,
    _ what: Int16,
    _ context: UnsafeMutableRawPointer?
) {
    let connection = Unmanaged<LiveKitClientConnection>.fromOpaque(context!).takeUnretainedValue()
    connection.loop.runCallback { connection.event(what) }
}

// A closing connection's bufferevent, on its own once its close frame is queued: freed when written or failed.

private func liveKitClientWrittenCallback(_ bufferEvent: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    guard let bufferEvent, evbuffer_get_length(bufferevent_get_output(bufferEvent)) == 0 else { return }
    bufferevent_free(bufferEvent)
}

private func liveKitClientWrittenEventCallback(
    _ bufferEvent: OpaquePointer?,
    _ what: Int16,
    _ context: UnsafeMutableRawPointer?
) {
    if let bufferEvent { bufferevent_free(bufferEvent) }
}
