internal import CLibevent
import RoomLinkEngine
@_spi(RoomLinkInternals) import RoomLinkLibevent
import RoomLinkRuntime
import RoomLinkWire

#if canImport(Glibc)
import Glibc
#endif

/// A connection accepted and not yet served: it waits, peeking, for the client's hello and first login, so that the
/// connection is served on the loop of the room it logs in to — its frames then reach the room, and the room's
/// answers reach it, with no hop between threads. The bytes stay in the socket for the connection to read.
///
/// Anything else — a first frame that is not a hello, a second that is not a login, a malformed or over-long frame, an
/// end of stream, nothing within the login timeout — is served on the accepting loop, which deals with it as with any
/// connection.
final class PendingConnection: @unchecked Sendable {
    // Safe: touched on `state.loop`'s thread only: created in the listener's callback there, and called back by its
    // event, on that loop's base.

    let fd: Int32
    let peer: String
    let state: TCPServerTransport.LoopState
    private let transport: TCPServerTransport
    private var event: OpaquePointer?
    /// The client's ID, once its hello was taken and answered here (a client may wait for the answer before it logs
    /// in).
    private(set) var greetedClient: String?

    /// How much of the stream it peeks at, at most: a hello and a login fit many times over.
    private static let peekLimit = 4_096

    init(fd: Int32, peer: String, state: TCPServerTransport.LoopState, transport: TCPServerTransport, timeout: Duration)
    {
        self.fd = fd
        self.peer = peer
        self.state = state
        self.transport = transport
        // Edge-triggered: the bytes peeked stay unread, and a level-triggered event would fire again at once.
        let what = Int16(EV_READ | EV_ET | EV_PERSIST)
        event = event_new(state.loop.eventBase, fd, what, pendingCallback, Unmanaged.passUnretained(self).toOpaque())
        var limit = Sockets.timeval(timeout, scale: transport.group.configuration.timeScale)
        if let event, event_add(event, &limit) == 0 { return }
        serve(on: state)
    }

    /// Whether it still waits for the first login.
    var isWaiting: Bool { event != nil }

    fileprivate func ready(_ what: Int16) {
        guard what & Int16(EV_TIMEOUT) == 0 else { return serve(on: state, timedOut: true) }
        var bytes = [UInt8](repeating: 0, count: Self.peekLimit)
        let count = bytes.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_PEEK | MSG_DONTWAIT)) }
        if count < 0, errno == EAGAIN || errno == EINTR { return }
        guard count > 0 else { return serve(on: state) }  // end of stream or an error: the connection will see it
        var reader = FrameReader()
        reader.append(bytes[..<count])
        let now = state.loop.now
        do {
            guard var frame = try reader.next() else { return waitOrServe(count) }
            if greetedClient == nil {
                // A hello the server refuses is refused at once, where the connection was accepted: by the rules
                // the connection will be served by.
                var rules = ServerConnectionState(limits: transport.connectionLimits)
                let first = try ClientFrame(body: frame, receivedAt: now)
                guard case .hello(let hello) = first,
                    case .answerHello = rules.received(first, at: now, room: { transport.room($0) })
                else { return serve(on: state) }
                // Take the hello off the stream and answer it: the client may wait for the answer to log in.
                var taken = [UInt8](repeating: 0, count: WireProtocol.headerLength + frame.count)
                let read = taken.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                guard read == taken.count else { return serve(on: state) }
                let answer = ServerFrame.helloAck(transport.hello).encoded()
                let sent = answer.withUnsafeBytes {
                    send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
                }
                greetedClient = hello.clientID
                guard sent == answer.count else { return serve(on: state) }
                guard let next = try reader.next() else { return waitOrServe(count) }
                frame = next
            }
            guard case .room(let roomID, .login) = try ClientFrame(body: frame, receivedAt: now),
                let loop = transport.room(roomID).loop as? LibeventLoop
            else { return serve(on: state) }
            serve(on: transport.state(of: loop))
        } catch {
            serve(on: state)
        }
    }

    /// Waits for more of the stream, unless what it peeked at is already all it would look at, or the client has
    /// closed its side: a peek keeps returning the bytes of its cut frame and never the end of stream, so without
    /// asking for the hang-up the connection would wait for its login timeout.
    private func waitOrServe(_ count: Int) {
        // POLLRDHUP (0x2000, Linux) is not imported from Glibc.
        let readHangUp: Int16 = 0x2000
        var poll = pollfd(fd: fd, events: readHangUp, revents: 0)
        let hungUp = Glibc.poll(&poll, 1, 0) > 0 && poll.revents & (readHangUp | Int16(POLLHUP | POLLERR)) != 0
        if count >= Self.peekLimit || hungUp { serve(on: state) }
    }

    /// Stops waiting, and serves the connection on `target`'s loop.
    func serve(on target: TCPServerTransport.LoopState, timedOut: Bool = false) {
        guard let event else { return }
        event_free(event)
        self.event = nil
        transport.placed(self, on: target, timedOut: timedOut)
    }

    /// Stops waiting and closes the socket (the server is shutting down).
    func abandon() {
        guard let event else { return }
        event_free(event)
        self.event = nil
        _ = Glibc.close(fd)
    }
}

private func pendingCallback(_ fd: Int32, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    let pending = Unmanaged<PendingConnection>.fromOpaque(context!).takeUnretainedValue()
    pending.state.loop.runCallback { pending.ready(what) }
}
