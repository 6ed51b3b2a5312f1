internal import CLibevent
package import Logging
package import RoomLinkEngine
@_spi(RoomLinkInternals) package import RoomLinkLibevent
import RoomLinkRuntime
package import RoomLinkWire
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The server's side of RoomLink over TCP: listeners on the loops, a ``ServerConnection`` per client (or another wire
/// protocol's connection, ``ServedProtocol``), and the rooms' answers written back to the connection they came from.
package final class TCPServerTransport: ServerTransport, @unchecked Sendable {
    // Safe: `perLoop[i]`'s contents are touched on loop i's thread only; `directory` is behind its lock; the rest is
    // immutable or atomic.

    package let group: LibeventLoopGroup
    package let configuration: NetworkServer.Configuration
    package let statistics = NetworkServerStatistics()
    package let logger: Logger
    package let hello: ServerHello
    /// The wire protocol clients speak when it is not RoomLink's own.
    private let served: (any ServedProtocol)?
    private let directory = LockedBox<(any RoomDirectory)?>(nil)
    private let nextID = Atomic<UInt64>(1)
    private let handOffs = Atomic<Int>(0)
    private let perLoop: [LoopState]
    /// What each connection is allowed (its state's limits).
    let connectionLimits: ServerConnectionState.Limits
    /// The TLS context of every connection accepted (``NetworkServer/Configuration/tls``); `nil` for plain TCP.
    package let tls: TLSContext?
    /// Why TLS could not be set up, which ``listen(on:)`` throws.
    package let tlsError: TLSError?

    /// What one loop holds: its listener and its connections.
    final class LoopState: @unchecked Sendable {
        // Safe: touched on its loop's thread only (see the transport).
        let loop: LibeventLoop
        /// The transport, while a listener is open: the listener's callbacks reach it through here.
        var transport: TCPServerTransport?
        var listener: OpaquePointer?
        var connections: [UInt64: any ServedConnection] = [:]
        /// Connections accepted here and waiting for their first login, to be served on their room's loop.
        var pending: [ObjectIdentifier: PendingConnection] = [:]
        /// Called when the last connection is gone, during a shutdown.
        var whenEmpty: (() -> Void)?
        /// Resumes an accept paused after a failure (out of file descriptors).
        var resumeTimer: TimerHandle?
        /// Accepting is paused for want of descriptors, and the log has said so (once per episode).
        var isStarved = false
        /// Checks the connections' media every media interval (a dialect whose media flows continuously).
        var mediaTimer: TimerHandle?

        init(loop: LibeventLoop) {
            self.loop = loop
        }
    }

    init(
        group: LibeventLoopGroup,
        configuration: NetworkServer.Configuration,
        hello: ServerHello,
        served: (any ServedProtocol)? = nil
    ) {
        self.group = group
        self.served = served
        self.configuration = configuration
        self.logger = configuration.logger
        self.hello = hello
        self.perLoop = group.eventLoops.map { LoopState(loop: $0) }
        self.connectionLimits = .init(
            dialect: configuration.dialect,
            maximumRoomsPerConnection: configuration.maximumRoomsPerConnection,
            maximumOutputBuffer: configuration.maximumOutputBuffer,
            mediaInterval: configuration.mediaInterval
        )
        do {
            tls = try configuration.tls.map { configuration throws(TLSError) in try TLSContext(server: configuration) }
            tlsError = nil
        } catch {
            tls = nil
            tlsError = error
        }
    }

    /// A bufferevent for the accepted socket `fd` on `loop`: TLS's, answering the handshake, when the server has a
    /// certificate; the socket's own otherwise. `nil` when none can be made (out of memory); `fd` is then still the
    /// caller's.
    package func bufferEvent(fd: Int32, on loop: LibeventLoop) -> OpaquePointer? {
        if let tls { return tls.bufferEvent(fd: fd, on: loop.eventBase, connecting: false, serverName: nil) }
        return bufferevent_socket_new(loop.eventBase, fd, Sockets.bufferEventOptions)
    }

    /// Whether `what`, a connection's event, is TLS's failure (a handshake that did not complete, a peer that spoke
    /// no TLS): counts it and logs OpenSSL's reason.
    package func noteTLSFailure(_ what: Int16, of bufferEvent: OpaquePointer?, peer: String) {
        guard tls != nil, what & Sockets.error != 0, let bufferEvent,
            let (_, reason) = TLSContext.failure(of: bufferEvent)
        else { return }
        statistics.add(.tlsHandshakesFailed)
        logger.debug("TLS failed", metadata: ["peer": "\(peer)", "reason": "\(reason)"])
    }

    // MARK: - ServerTransport

    package func serve(_ rooms: any RoomDirectory) {
        directory.withLock { $0 = rooms }
    }

    /// Counts what a room answers (its connection, of whichever protocol, sends it).
    package func count(_ message: ServerMessage) {
        switch message {
        case .loginAccepted: statistics.add(.loginsAccepted)
        case .loginRejected: statistics.add(.loginsRejected)
        case .busy: statistics.add(.loginsBusy)
        case .userUpdate: statistics.add(.presenceChangesSent)
        default: break
        }
    }

    package func room(_ roomID: String) -> any RoomEndpoint {
        guard let directory = directory.withLock({ $0 }) else {
            preconditionFailure("a TCP server transport received a login before a RoomServer served it")
        }
        return directory.room(roomID)
    }

    // MARK: - Listening

    /// Opens the listeners: one per loop on one port (`SO_REUSEPORT`: the kernel spreads connections), or one on
    /// the first loop that hands connections to the loops in turn. Returns the address bound (its port, when 0 was
    /// asked for). Called once.
    func listen(on address: SocketAddress) async throws(NetworkError) -> SocketAddress {
        if let tlsError { throw .tls(tlsError) }
        var resolved = try address.resolved()
        let loops = configuration.acceptMode == .reusePort ? perLoop : [perLoop[0]]
        var bound: SocketAddress?
        for state in loops {
            let target = resolved
            let result = await onLoop(state.loop) { [self] in openListener(state, at: target, named: "\(address)") }
            switch result {
            case .failure(let error):
                await close(listenersOnly: true)
                throw error
            case .success(let local):
                if bound == nil, address.port == 0 {
                    // The other loops' listeners share the port the first one got.
                    resolved = try SocketAddress(host: address.host, port: local.port).resolved()
                }
                bound = bound ?? local
            }
        }
        return bound!
    }

    private func openListener(
        _ state: LoopState,
        at address: ResolvedAddress,
        named name: String
    ) -> Result<SocketAddress, NetworkError> {
        var flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC
        if configuration.acceptMode == .reusePort { flags |= LEV_OPT_REUSEABLE_PORT }
        let context = Unmanaged.passUnretained(state).toOpaque()
        let listener = address.withSockaddr { sockaddr, length in
            evconnlistener_new_bind(
                state.loop.eventBase,
                listenerCallback,
                context,
                UInt32(flags),
                configuration.backlog,
                sockaddr,
                length
            )
        }
        guard let listener else {
            return .failure(.cannotListen(address: name, reason: Sockets.errorText(errno)))
        }
        evconnlistener_set_error_cb(listener, listenerErrorCallback)
        state.listener = listener
        startMediaChecks(on: state)
        // A cycle while the listener is open, broken in `close`.
        state.transport = self
        guard let local = ResolvedAddress.local(of: evconnlistener_get_fd(listener)) else {
            return .failure(.cannotListen(address: name, reason: "getsockname failed"))
        }
        return .success(local)
    }

    fileprivate func accepted(fd: Int32, peer: SocketAddress?, on state: LoopState) {
        // The system hands out the lowest free descriptor, so one this high means fewer than `descriptorReserve` are
        // left: refuse the client (it sees the connection closed and retries later) rather than take the ones the
        // admin API, Redis and the logs need to go on answering.
        if Int(fd) >= descriptorCeiling {
            _ = Glibc.close(fd)
            pauseAccepting(on: state, because: "\(Self.descriptorReserve) descriptors are kept for the admin API")
            return
        }
        if state.isStarved {
            state.isStarved = false
            logger.notice("accepting connections again")
        }
        statistics.add(.connectionsAccepted)
        let peer = peer.map(\.description) ?? "?"
        // Peeking for the first login reads RoomLink's frames: another protocol's connection is served where it
        // arrives, and its frames hop to their room's loop.
        // (Not under TLS: the stream is encrypted, and its session belongs to the bufferevent that shakes hands.)
        if configuration.servesOnRoomLoop, served == nil, tls == nil, perLoop.count > 1 {
            let pending = PendingConnection(
                fd: fd,
                peer: peer,
                state: state,
                transport: self,
                timeout: configuration.loginTimeout
            )
            // It may have been served at once (its event could not be added).
            if pending.isWaiting { state.pending[ObjectIdentifier(pending)] = pending }
            return
        }
        if configuration.acceptMode == .handOff, perLoop.count > 1 {
            let target = perLoop[handOffs.add(1, ordering: .relaxed).newValue % perLoop.count]
            if target !== state {
                let scheduled = try? target.loop.schedule(after: .zero) { [self] in adopt(fd, peer: peer, on: target) }
                if scheduled == nil { _ = Glibc.close(fd) }
                return
            }
        }
        adopt(fd, peer: peer, on: state)
    }

    /// A pending connection found its loop: it is served there from now on.
    func placed(_ pending: PendingConnection, on target: LoopState, timedOut: Bool = false) {
        pending.state.pending[ObjectIdentifier(pending)] = nil
        let (fd, peer, client) = (pending.fd, pending.peer, pending.greetedClient)
        guard target !== pending.state else {
            return adopt(fd, peer: peer, on: target, greeted: client, loginTimedOut: timedOut)
        }
        let scheduled = try? target.loop.schedule(after: .zero) { [self] in
            adopt(fd, peer: peer, on: target, greeted: client)
        }
        if scheduled == nil { _ = Glibc.close(fd) }
    }

    /// The state of `loop`.
    func state(of loop: LibeventLoop) -> LoopState {
        perLoop[loop.index]
    }

    private func adopt(
        _ fd: Int32,
        peer: String,
        on state: LoopState,
        greeted client: String? = nil,
        loginTimedOut: Bool = false
    ) {
        let id = nextID.add(1, ordering: .relaxed).oldValue
        let connection: any ServedConnection =
            if let served {
                served.connection(id: id, fd: fd, peer: peer, loop: state.loop, server: self)
            } else {
                ServerConnection(id: id, fd: fd, peer: peer, loop: state.loop, server: self, greeted: client)
            }
        guard connection.isOpen else { return statistics.count(.peerClosed) }
        state.connections[id] = connection
        // Its login timeout already ran while it waited to be placed.
        if loginTimedOut {
            connection.loginTimedOut()
        }
    }

    fileprivate func acceptFailed(on state: LoopState) {
        pauseAccepting(on: state, because: "accept failed: \(Sockets.errorText(errno))")
    }

    /// Descriptors a server never spends on clients: the admin API's connections, Redis, log files.
    static var descriptorReserve: Int { OpenFileLimit.serverReserve }
    /// The lowest descriptor number a client's connection may not have (see ``accepted(fd:peer:on:)``).
    private let descriptorCeiling = max(
        TCPServerTransport.descriptorReserve,
        OpenFileLimit.current - TCPServerTransport.descriptorReserve
    )

    /// Stops this loop's listener for 100 ms: out of descriptors, accepting again at once would spin (the pending
    /// connection stays in the backlog, and the listener is readable again straight away). Said once per episode.
    private func pauseAccepting(on state: LoopState, because reason: String) {
        statistics.add(.acceptFailures)
        if !state.isStarved {
            state.isStarved = true
            logger.warning("\(reason); not accepting connections until descriptors free up (retrying every 100 ms)")
        }
        guard let listener = state.listener, state.resumeTimer == nil else { return }
        evconnlistener_disable(listener)
        state.resumeTimer = try? state.loop.schedule(after: .milliseconds(100)) {
            state.resumeTimer = nil
            if let listener = state.listener { evconnlistener_enable(listener) }
        }
    }

    /// Every media interval, each connection of the loop checks its members' media (see
    /// ``ServerConnection/checkMedia(now:)``). One timer per loop, not per connection.
    private func startMediaChecks(on state: LoopState) {
        guard let interval = connectionLimits.mediaInterval, state.mediaTimer == nil else { return }
        state.mediaTimer = try? state.loop.schedulePeriodic(every: interval, handler: MediaCheck(state: state))
    }

    /// The periodic media check of one loop.
    private struct MediaCheck: TimerHandler {
        let state: LoopState

        func timerFired(_ timer: TimerHandle) {
            let now = state.loop.now
            for connection in state.connections.values { connection.checkMedia(now: now) }
        }
    }

    /// A connection freed itself.
    package func forget(_ connection: any ServedConnection) {
        let state = perLoop[connection.loop.index]
        state.connections[connection.id] = nil
        if state.connections.isEmpty, let whenEmpty = state.whenEmpty {
            state.whenEmpty = nil
            whenEmpty()
        }
    }

    // MARK: - Shutting down

    /// Stops accepting; unless `listenersOnly`, says goodbye to every connection and waits until each is written
    /// out or the close grace has passed, then frees what is left.
    func close(listenersOnly: Bool = false, abandoning: Bool = false) async {
        // Every listener first: a client told goodbye reconnects at once, and must not find another loop's listener
        // of this server still open.
        for state in perLoop {
            await onLoop(state.loop) {
                if let listener = state.listener { evconnlistener_free(listener) }
                state.listener = nil
                // A connection that has not logged in yet is a connection too: served here now, it is told goodbye
                // with the others below (or keeps being served, when only the listeners close). A killed server
                // closes it unannounced.
                for pending in Array(state.pending.values) {
                    if abandoning { pending.abandon() } else { pending.serve(on: state) }
                }
                state.pending.removeAll()
                state.transport = nil
                if let resumeTimer = state.resumeTimer { state.loop.cancel(resumeTimer) }
                state.resumeTimer = nil
                if let mediaTimer = state.mediaTimer { state.loop.cancel(mediaTimer) }
                state.mediaTimer = nil
            }
        }
        guard !listenersOnly else { return }
        for state in perLoop {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                let resumed = LockedBox(false)
                let finish: @Sendable () -> Void = {
                    if resumed.withLock({ old in
                        defer { old = true }
                        return !old
                    }) {
                        done.resume()
                    }
                }
                let scheduled = try? state.loop.schedule(after: .zero) { [self] in
                    if abandoning {
                        // As a killed process: every socket closes at once, and nobody is told why.
                        for connection in Array(state.connections.values) { connection.free() }
                        return finish()
                    }
                    for connection in Array(state.connections.values) { connection.shutDown() }
                    if state.connections.isEmpty {
                        finish()
                    } else {
                        state.whenEmpty = finish
                        // Whatever is still writing after the grace is freed (its timers fire then too).
                        _ = try? state.loop.schedule(after: configuration.closeGrace) {
                            for connection in Array(state.connections.values) { connection.free() }
                            finish()
                        }
                    }
                }
                if scheduled == nil { finish() }
            }
        }
    }

    private func onLoop<T: Sendable>(_ loop: LibeventLoop, _ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            loop.execute { continuation.resume(returning: body()) }
        }
    }
}

// Capture-free C callbacks; the context is the loop's state, unretained: the transport holds it, and frees the
// listener (on the loop's thread) before it can go.

private func listenerCallback(
    _ listener: OpaquePointer?,
    _ fd: Int32,
    _ address: UnsafeMutablePointer<sockaddr>?,
    _ length: Int32,
    _ context: UnsafeMutableRawPointer?
) {
    let state = Unmanaged<TCPServerTransport.LoopState>.fromOpaque(context!).takeUnretainedValue()
    guard let transport = state.transport else {
        _ = close(fd)
        return
    }
    let peer = address.map { raw in
        raw.withMemoryRebound(to: sockaddr_storage.self, capacity: 1) { ResolvedAddress.describe($0) }
    }
    state.loop.runCallback { transport.accepted(fd: fd, peer: peer ?? nil, on: state) }
}

private func listenerErrorCallback(_ listener: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    let state = Unmanaged<TCPServerTransport.LoopState>.fromOpaque(context!).takeUnretainedValue()
    guard let transport = state.transport else { return }
    state.loop.runCallback { transport.acceptFailed(on: state) }
}
