/// The LiveKit dialect (contract §4): `didUpdateConnectionState(new, old)`, `didStartReconnectWithMode` /
/// `didCompleteReconnectWithMode`, participant events and `didDisconnect(reason)`.
///
/// The engine's differences for LiveKit are switches: reconnections in modes (quick first — the same session,
/// peers see nothing; full when the server cannot resume the session and on the policy's last attempt — a new
/// session, peers see the participant leave and join), a first `connect` that makes one attempt, peers always
/// announced, and the client-sdk-js default policy (``RetryPolicy/liveKitJS``): 10 attempts, then `disconnected`.
public enum LiveKit: RoomDialect {
    public typealias Event = LiveKitEvent
    public typealias Timings = LiveKitTimings

    public static let name = DialectName.livekit
    public static var defaultRetryPolicy: RetryPolicy { .liveKitJS }
    public static let alwaysNotifiesPeers = true
    public static let firstJoinAttempts: Int? = 1
    /// HTTP 503 (Service Unavailable, with `Retry-After`): how a LiveKit server turns down the signal connection's
    /// WebSocket upgrade when it is overloaded.
    public static let busyCode: Int64 = 503
    public static let reconnectsInModes = true

    /// The connection state a room in `phase` is in.
    static func state(_ phase: RoomConnection.Phase) -> LiveKitConnectionState {
        switch phase {
        case .joining: .connecting
        case .joined: .connected
        case .reconnecting: .reconnecting
        }
    }

    public static func report(_ transition: RoomTransition, room: String, into emit: (LiveKitEvent) -> Void) {
        func state(_ new: LiveKitConnectionState, from old: LiveKitConnectionState) {
            emit(.connectionStateChanged(room: room, state: new, from: old))
        }
        func disconnect(from phase: RoomConnection.Phase, _ reason: LiveKitDisconnectReason) {
            state(.disconnected, from: Self.state(phase))
            emit(.disconnected(room: room, reason: reason))
        }
        switch transition {
        case .joining: state(.connecting, from: .disconnected)
        case .joined: state(.connected, from: .connecting)
        case .lost: state(.reconnecting, from: .connected)
        case .reconnectMode(let mode): emit(.reconnectStarted(room: room, mode: mode))
        case .peersCleared(let peers):
            for peer in peers { emit(.participantDisconnected(room: room, peer: peer)) }
        case .rejoined(let mode):
            state(.connected, from: .reconnecting)
            emit(.reconnectCompleted(room: room, mode: mode))
        case .peersChanged(.add, let users, _):
            for peer in users { emit(.participantConnected(room: room, peer: peer)) }
        case .peersChanged(.delete, let users, _):
            for peer in users { emit(.participantDisconnected(room: room, peer: peer)) }
        case .gaveUp(let phase): disconnect(from: phase, phase == .joining ? .joinFailure : .connectionTimeout)
        case .rejected(_, let phase): disconnect(from: phase, .joinFailure)
        case .kicked(.duplicateLogin, let phase): disconnect(from: phase, .duplicateIdentity)
        case .kicked(.admin, let phase), .kicked(.tokenExpired, let phase): disconnect(from: phase, .participantRemoved)
        case .left(let phase):
            state(.disconnecting, from: Self.state(phase))
            state(.disconnected, from: .disconnecting)
            emit(.disconnected(room: room, reason: .clientInitiated))
        case .stillLost, .tokenRenewedWhileReconnecting, .tokenWillExpire:
            return  // LiveKit has no callback for these
        }
    }

    public static let enginePath = EnginePath<LiveKit>.compiled

    public static func apply(_ call: AppCall, on client: isolated LiveKitClient) {
        switch call {
        case .join(let room, let options):
            // A scenario that connects a connected room asks what the SDK refuses: it throws, and nothing changes.
            try? client.connect(to: room, token: options.token)
        case .leave(let room):
            if room == nil || client.roomIDs.first == room { client.disconnect() }
        case .switchRoom(let from, let to):
            guard let current = client.rooms.first, current.roomID == from else { return }
            client.disconnect()
            try? client.connect(to: to, token: current.options.token)
        case .renewToken(let token): client.renewToken(token)
        case .vendor: return  // another vendor's call
        }
    }
}

/// One simulated LiveKit `Room` (contract §4) on RoomLink's connection engine: one room at a time.
///
/// ```swift
/// let client = LiveKitClient(id: "A", loop: group.loop(for: "A"), environment: LiveKitClient.Environment(transport: network))
/// try await client.connect(to: "r1")
/// // connectionState connecting (from disconnected), then connected (from connecting)
/// ```
public typealias LiveKitClient = RoomClient<LiveKit>

extension RoomClient where Dialect == LiveKit {
    /// `connect(url, token)`: starts connecting (one attempt); the outcome arrives as state changes.
    ///
    /// - Throws: ``LiveKitError/alreadyConnected(room:)`` when the client is not disconnected (no state changes),
    ///   ``LiveKitError/shutDown`` after ``shutdown()``.
    public func connect(to room: String, token: String? = nil) throws(LiveKitError) {
        guard !isShutDown else { throw .shutDown }
        if let current = rooms.first?.roomID { throw .alreadyConnected(room: current) }
        join(room, options: JoinOptions(token: token, notifiesPeers: true))
    }

    /// `disconnect()`: `disconnecting`, then `disconnected` with `clientInitiated`. Nothing happens when the
    /// client is already disconnected.
    public func disconnect() {
        if let room = rooms.first?.roomID { leave(room) }
    }

    /// Gives the server a new token (LiveKit refreshes tokens over the signal connection); later reconnections
    /// use it.
    public func renewToken(_ token: String) {
        if let room = rooms.first?.roomID { renew(token, roomID: room) }
    }

    /// The room's connection state.
    public var connectionState: LiveKitConnectionState {
        rooms.first.map { LiveKit.state($0.phase) } ?? .disconnected
    }
}
