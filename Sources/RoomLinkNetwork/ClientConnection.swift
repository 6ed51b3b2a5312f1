internal import CLibevent
import RoomLinkEngine
@_spi(RoomLinkInternals) import RoomLinkLibevent
import RoomLinkRuntime
import RoomLinkWire

#if canImport(Glibc)
import Glibc
#endif

/// One client's TCP connection to the server, on the client's loop: every room of the client is multiplexed over
/// it, as an SDK keeps one connection per device. It tells the client when it comes up, when it closes under the
/// client (end of stream, reset, a goodbye) and when it could not be opened.
final class ClientConnection: @unchecked Sendable {
    // Safe: every `var` is touched on `loop`'s thread only — the client calls the transport from its actor, which
    // runs there; libevent's callbacks and timers run there; calls from other threads (a dropped link) hop there.

    let loop: LibeventLoop
    let transport: TCPClientTransport
    let key: ObjectIdentifier
    private weak var client: (any ClientEndpoint)?
    /// The client's path, when a fault injector stands between it and this socket: asked per frame whether the frame
    /// crosses (one that does not is neither written nor counted as read).
    let path: (any ClientPath)?
    private var bufferEvent: OpaquePointer?
    /// The connection's rules: its phase, its rooms, the server's data and the abandon verdict.
    private var state = ClientConnectionState()
    /// The rooms whose channels ride on this connection.
    var rooms: Set<String> { state.rooms }
    /// Why the server said goodbye, if it did.
    private var goodbye: GoodbyeReason?
    /// The server's timings, from its hello.
    private(set) var serverHello: ServerHello?
    /// Sends the rooms' media every media interval, for a dialect whose media flows continuously; once the connection
    /// is given up into a black hole, checks instead whether its path carries again (``ParkedClose``).
    private var mediaTimer: TimerHandle?
    /// Which of the transport's servers the connection goes to.
    private var serverIndex = 0
    /// With an observer: when the attempt began, and the round trips of the rooms' logins and heartbeats.
    private var attemptStart = RuntimeInstant.zero
    private var roundTrips = ConnectionRoundTrips()

    /// Opens `client`'s connection, for `room` first (the room may decide the server: ``ServerRouting/byRoom``).
    init(client: any ClientEndpoint, room: String, loop: LibeventLoop, transport: TCPClientTransport) {
        self.loop = loop
        self.transport = transport
        self.client = client
        self.key = ObjectIdentifier(client)
        self.path = client as? any ClientPath
        attemptStart = loop.now
        transport.observer?.connectionAttempted(at: attemptStart)
        let (address, serverIndex) = transport.address(for: client, room: room)
        self.serverIndex = serverIndex
        var socket: Int32 = -1
        if let source = transport.source(spread: client.endpointHash) {
            // Bound to its source address before connecting; the port is picked at connect.
            socket = Sockets.bound(to: source)
            guard socket >= 0 else {
                // At bind, `EADDRNOTAVAIL` is an address this machine does not have, not a lack of ports.
                let failure = errno == EADDRNOTAVAIL ? ConnectionFailure.other : ConnectionFailure(errno: errno)
                state.close()
                _ = try? loop.schedule(after: .zero) { [self] in refusedAtOnce(failure) }
                return
            }
        }
        bufferEvent = TLSContext.clientBufferEvent(
            transport.tls,
            fd: socket,
            on: loop.eventBase,
            serverName: transport.serverName(of: serverIndex)
        )
        guard let bufferEvent else {
            if socket >= 0 { Glibc.close(socket) }
            state.close()
            return
        }
        let context = Unmanaged.passUnretained(self).toOpaque()
        bufferevent_setcb(bufferEvent, clientReadCallback, nil, clientEventCallback, context)
        bufferevent_setwatermark(bufferEvent, Sockets.read, 0, Sockets.inputHighWatermark)
        bufferevent_enable(bufferEvent, Sockets.readWrite)
        let status = address.withSockaddr { bufferevent_socket_connect(bufferEvent, $0, $1) }
        if status != 0 {
            // Failed at once (no route, out of descriptors or ports): tell the client as soon as its loop runs.
            let failure = ConnectionFailure(errno: errno)
            _ = try? loop.schedule(after: .zero) { [self] in
                transport.observer?.connectionFailed(failure, at: loop.now)
                finish(.refused)
            }
            return
        }
        write(
            ClientFrame.hello(ClientHello(dialect: transport.dialect, clientID: client.endpointID)).encoded(
                at: loop.now
            )
        )
    }

    var isLive: Bool { state.phase != .closed }

    func add(room: String) {
        state.add(room: room)
    }

    // MARK: - Sending

    /// Sends a frame for `room`.
    func send(_ frame: [UInt8], room: String) {
        sent(room: room)
        write(frame)
    }

    private func write(_ frame: [UInt8]) {
        guard state.phase != .closed, let bufferEvent else { return }
        frame.withUnsafeBytes { bytes in
            // Straight to the socket once it is connected; before that the bufferevent holds the frame (a write to a
            // socket still connecting would take the connect's own error, which libevent reads to report it). Under
            // TLS always through the bufferevent, which encrypts.
            if state.phase == .open, transport.tls == nil {
                Sockets.write(bytes, to: bufferEvent)
            } else {
                _ = bufferevent_write(bufferEvent, bytes.baseAddress, bytes.count)
            }
        }
        transport.countFrame()
    }

    /// Sends a media frame for each room whose path carries it now (a black hole or a partition stops the media, and
    /// the server notices).
    fileprivate func sendMedia() {
        guard state.phase == .open else { return }
        for room in rooms where path?.carries(room: room) ?? true {
            send(ClientFrame.media(room: room).encoded(at: loop.now), room: room)
        }
        watchData()
    }

    /// A message of `room` left the client (into a black hole, perhaps).
    func sent(room: String) {
        state.sent(room: room, at: loop.now)
    }

    /// Whether the server's data stopped: a server of a dialect whose media flows sends something every media
    /// interval to a connection with a logged-in room (one with nothing else to say gets a keep-alive at least every
    /// one and a half), so three intervals without a frame is a silent path (a black hole the socket cannot see). The client hears it once per silence, with when the data stopped, and again when
    /// it flows.
    private func watchData() {
        guard let (since, rooms) = state.watch(at: loop.now) else { return }
        for room in rooms { client?.connectionChanged(.dataStopped(since: since), room: room) }
    }

    /// The client gave up on this connection for `room` (an unanswered login or heartbeat, or silent data): closes it
    /// unless a frame arrived since the room's last message left — then the connection is alive and only the room's
    /// path is silent. The connection's other rooms hear it closed; the next attempt dials a new one.
    func abandon(room: String) {
        let wasOpen = state.phase == .open
        let pathCarries = path?.carries(room: nil) ?? true
        let verdict = state.abandon(room: room, at: loop.now, pathCarries: pathCarries)
        guard case .close(let others, let held) = verdict else { return }
        if wasOpen { transport.observer?.report(roundTrips.unanswered(.timeout), at: loop.now) }
        release(wasOpen: wasOpen, held: held)
        transport.moveOn(key, from: serverIndex)
        guard !others.isEmpty else { return }
        // Later in this loop turn: the client is in the middle of the step that gave up.
        _ = try? loop.schedule(after: .zero) { [self] in
            for other in others { client?.connectionChanged(.closed(.abandoned), room: other) }
        }
    }

    /// The media timer's handler.
    private struct MediaSender: TimerHandler {
        let connection: ClientConnection
        func timerFired(_ timer: TimerHandle) { connection.sendMedia() }
    }

    /// A connection that could not even be made (its socket or its source address failed): the client hears the
    /// attempt refused.
    private func refusedAtOnce(_ failure: ConnectionFailure) {
        transport.observer?.connectionFailed(failure, at: loop.now)
        for room in rooms.sorted() { client?.connectionChanged(.refused, room: room) }
        transport.moveOn(key, from: serverIndex)
        transport.forget(self)
    }

    // MARK: - Measuring (with an observer)

    /// A room's message is about to leave: logins and heartbeats are timed until their answers.
    func sending(_ message: ClientMessage, room: String) {
        transport.observer?.report(roundTrips.sending(message, room: room, at: loop.now), at: loop.now)
    }

    // MARK: - Receiving

    fileprivate func readable() {
        guard let bufferEvent else { return }
        let input = bufferevent_get_input(bufferEvent)!
        while state.phase != .closed {
            switch InputFrames.next(in: input) {
            case .incomplete:
                return
            case .tooLong:
                finish(.closed(.protocolError))
                return
            case .frame(let body, let consumed):
                let frame: ServerFrame
                do {
                    frame = try ServerFrame(body: body)
                } catch {
                    finish(.closed(.protocolError))
                    return
                }
                evbuffer_drain(input, consumed)
                receive(frame)
            }
        }
    }

    private func receive(_ frame: ServerFrame) {
        // A frame lost on the client's path (a fault injector's black hole or partition) never reached the client.
        if let path {
            let room: String? = if case .room(let room, _) = frame { room } else { nil }
            guard path.carries(room: room) else { return }
        }
        for room in state.received(at: loop.now) { client?.connectionChanged(.dataResumed, room: room) }
        switch frame {
        case .helloAck(let hello):
            serverHello = hello
            state.hello(mediaInterval: hello.mediaInterval)
            if let interval = hello.mediaInterval, interval > .zero, mediaTimer == nil {
                mediaTimer = try? loop.schedulePeriodic(every: interval, handler: MediaSender(connection: self))
            }
        case .goodbye(let reason, _):
            goodbye = reason
            let cause: ConnectionCloseCause = reason == .serverShutdown ? .serverShutdown : .protocolError
            finish(.closed(cause))
        case .keepAlive:
            transport.countFrame()
        case .room(let room, let message):
            transport.countFrame()
            if let observer = transport.observer {
                observer.report(roundTrips.answered(message, room: room, at: loop.now), at: loop.now)
            }
            client?.deliver(message, from: room)
        }
    }

    fileprivate func event(_ what: Int16) {
        if what & Sockets.connected != 0 {
            state.connected()
            transport.observer?.connectionOpened(after: attemptStart.duration(to: loop.now), at: loop.now)
            if let fd = bufferEvent.map(bufferevent_getfd) { Sockets.setNoDelay(fd) }
            for room in rooms { client?.connectionChanged(.connected, room: room) }
        } else if what & (Sockets.eof | Sockets.error | Sockets.timeout) != 0 {
            if state.phase == .connecting {
                let failure = TLSContext.connectFailure(of: bufferEvent, tls: transport.tls)
                transport.observer?.connectionFailed(failure, at: loop.now)
                finish(.refused)
            } else {
                finish(.closed(what & Sockets.eof != 0 ? .endOfStream : .reset))
            }
        }
    }

    // MARK: - Closing

    /// The connection closed under the client (or never opened): frees it and tells the client, room by room.
    private func finish(_ event: ConnectionEvent) {
        guard state.phase != .closed else { return }
        // Logins still waiting for their answers never got one.
        if state.phase == .open { transport.observer?.report(roundTrips.unanswered(.reset), at: loop.now) }
        close()
        // The next connection tries the next server (a cluster's other node), if there is one.
        transport.moveOn(key, from: serverIndex)
        for room in rooms.sorted() { client?.connectionChanged(event, room: room) }
    }

    /// Closes the socket without telling the client (its link went down, and the client hears of that).
    func close() {
        guard state.phase != .closed else { return }
        let wasOpen = state.phase == .open
        state.close()
        release(wasOpen: wasOpen)
    }

    /// Frees the socket and the media timer of a connection whose state is closed — or, `held` (its close lost in
    /// a black hole), keeps the socket until the path carries again.
    private func release(wasOpen: Bool, held: Bool = false) {
        if wasOpen { transport.observer?.connectionClosed(at: loop.now) }
        if let mediaTimer { loop.cancel(mediaTimer) }
        mediaTimer = nil
        transport.forget(self)
        guard held, let bufferEvent, let path else {
            freeSocket()
            return
        }
        // Kept open, deaf and mute, until the path carries again; then the socket closes and the server hears it.
        bufferevent_setcb(bufferEvent, nil, nil, nil, nil)
        bufferevent_disable(bufferEvent, Sockets.readWrite)
        transport.park(self)
        mediaTimer = try? loop.schedulePeriodic(
            every: .milliseconds(100),
            handler: ParkedClose(connection: self, path: path)
        )
    }

    /// Frees the socket (its close reaches the server).
    func freeSocket() {
        if let mediaTimer { loop.cancel(mediaTimer) }
        mediaTimer = nil
        if let bufferEvent { bufferevent_free(bufferEvent) }
        bufferEvent = nil
        transport.unpark(self)
    }

    /// Closes a connection given up into a black hole once its path carries again.
    private struct ParkedClose: TimerHandler {
        let connection: ClientConnection
        let path: any ClientPath
        func timerFired(_ timer: TimerHandle) {
            if path.carries(room: nil) { connection.freeSocket() }
        }
    }
}

// Capture-free C callbacks; the context is the connection, unretained: the transport's table holds it until
// `close`, after which libevent calls nothing.

private func clientReadCallback(_ bufferEvent: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    let connection = Unmanaged<ClientConnection>.fromOpaque(context!).takeUnretainedValue()
    connection.loop.runCallback { connection.readable() }
}

private func clientEventCallback(_ bufferEvent: OpaquePointer?, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    let connection = Unmanaged<ClientConnection>.fromOpaque(context!).takeUnretainedValue()
    connection.loop.runCallback { connection.event(what) }
}
