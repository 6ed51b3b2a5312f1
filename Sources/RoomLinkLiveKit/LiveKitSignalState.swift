import RoomLinkEngine
import SwiftProtobuf

/// A participant's request to join, as `GET /rtc` carries it: the access token's identity and room, and for a
/// resume (`reconnect=1&sid=…`) the participant it resumes.
struct LiveKitJoin: Sendable, Equatable {
    /// The API key that signed the token (`iss`): the one its refreshed tokens are signed with.
    var apiKey = ""
    var identity: String
    var name: String
    var room: String
    /// The session the participant's sid names: new for a join, the sid's for a resume.
    var session: SessionID
    var isResume: Bool
    var hidden: Bool
    /// When it joined, in UNIX seconds.
    var joinedAt: Int64

    /// Why a `GET /rtc` or `/rtc/validate` is refused, with the HTTP status LiveKit's server answers.
    struct Refusal: Error, Equatable {
        var status: Int
        var message: String
    }

    /// The join `query` asks for, by a token `keys` accept at UNIX time `now` that grants joining its room — the
    /// query's `access_token`, or the request's `Authorization: Bearer` (as LiveKit's SDKs send it); `session` is the
    /// new participant's, for a join.
    static func parse(
        _ query: [String: String],
        authorization: String? = nil,
        keys: LiveKitKeys,
        now: Int64,
        session: SessionID
    ) throws(Refusal) -> LiveKitJoin {
        let bearer = authorization.flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
        guard let text = query["access_token"] ?? bearer, !text.isEmpty else {
            throw Refusal(status: 401, message: "no access token")
        }
        let token: LiveKitAccessToken
        do {
            token = try keys.verify(text, at: now)
        } catch {
            throw Refusal(status: 401, message: error.description)
        }
        guard token.video.roomJoin == true, let room = token.video.room, !room.isEmpty else {
            throw Refusal(
                status: 401,
                message: LiveKitTokenError.notPermitted("the token does not grant roomJoin").description
            )
        }
        // A token for one room does not join another (a `room` parameter naming a different one).
        if let asked = query["room"], !asked.isEmpty, asked != room {
            throw Refusal(
                status: 401,
                message: LiveKitTokenError.notPermitted("the token is for room '\(room)'").description
            )
        }
        guard !token.identity.isEmpty else {
            throw Refusal(status: 401, message: LiveKitTokenError.noIdentity.description)
        }
        let isResume = query["reconnect"] == "1" || query["reconnect"] == "true"
        var resumed = session
        if isResume {
            // A sid this server did not hand out names no session it has: the room answers that it does not know it.
            resumed = query["sid"].flatMap(LiveKitSignalState.session(ofParticipant:)) ?? SessionID(rawValue: 0)
        }
        return LiveKitJoin(
            apiKey: token.apiKey,
            identity: token.identity,
            name: token.name ?? "",
            room: room,
            session: resumed,
            isResume: isResume,
            hidden: token.video.hidden ?? false,
            joinedAt: now
        )
    }
}

/// The rules of one participant's LiveKit signalling connection, as a value: what its requests ask of the room, and
/// what the room's answers become on the wire (`SignalResponse`s). The socket code (``LiveKitConnection``) reads
/// and writes the WebSocket and carries its actions out; tests drive it alone.
///
/// The mapping (docs/livekit.md): the join is a login with user-status notification (the `JoinResponse` lists the
/// others; `ParticipantUpdate`s follow), a resume a login of kind `resume` (`ReconnectResponse` and an update of everyone present, or
/// `leave{STATE_MISMATCH, RECONNECT}` when the room no longer has the session), `ping_req` a heartbeat answered by
/// `pong_resp`, `leave` a logout; a kick is `leave{DISCONNECT}` with the kick's reason, a reconnect request
/// `leave{RECONNECT}`.
struct LiveKitSignalState: Sendable {
    let join: LiveKitJoin
    /// The ping interval and timeout the join response tells the client, in seconds.
    let pingInterval: Int32
    let pingTimeout: Int32
    /// Where the connection stands.
    private(set) var phase = Phase.joining
    /// The timestamp of each ping not answered yet, oldest first (`ping_req` carries one; the legacy `ping` is one).
    private var pings: [(timestamp: Int64, legacy: Bool)] = []

    enum Phase: Sendable, Equatable {
        /// The login is on its way to the room.
        case joining
        /// In the room.
        case joined
        /// Done: nothing more is sent to the room.
        case closed
    }

    /// What to do.
    enum Action: Sendable {
        /// Hand a message to the room.
        case deliver(ClientMessage)
        /// Write a response.
        case respond(Livekit_SignalResponse)
        /// Close the connection (after the responses before it are written).
        case close(String)
        /// Answer the participant's offer for its peer connection `peer` (the peer helper's).
        case negotiate(peer: String, offer: Livekit_SessionDescription)
        /// A candidate the participant trickled for its peer connection `peer` (JSON, as the SDK sent it).
        case candidate(peer: String, json: String)
    }

    /// The id of the participant's peer connection `target` (the publisher or the subscriber) at the peer helper.
    func peer(_ target: Livekit_SignalTarget) -> String {
        "\(participantSID)/\(target == .subscriber ? "subscriber" : "publisher")"
    }

    /// Every peer connection the participant may have at the peer helper.
    var peers: [String] { [peer(.publisher), peer(.subscriber)] }

    /// A participant's connection; the join response tells it `pingInterval` and `pingTimeout`, rounded to whole
    /// seconds (the protocol's unit), at least one.
    init(join: LiveKitJoin, pingInterval: Duration, pingTimeout: Duration) {
        self.join = join
        self.pingInterval = Self.seconds(pingInterval)
        self.pingTimeout = Self.seconds(pingTimeout)
    }

    private static func seconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        return Int32(min(Double(Int32.max), max(1, (Double(seconds) + Double(attoseconds) / 1e18).rounded())))
    }

    /// The participant's sid: its session, so that a resume's `sid` names the session it resumes.
    var participantSID: String { Self.sid(of: join.session) }

    static func sid(of session: SessionID) -> String { "PA_\(String(session.rawValue, radix: 16))" }

    static func session(ofParticipant sid: String) -> SessionID? {
        guard sid.hasPrefix("PA_"), let value = UInt64(sid.dropFirst(3), radix: 16) else { return nil }
        return SessionID(rawValue: value)
    }

    /// The login that joins (or resumes) the room.
    func login() -> ClientMessage {
        .login(
            LoginRequest(
                userID: join.identity,
                session: join.session,
                userStatusNotify: true,
                kind: join.isResume ? .resume : .join,
                hidden: join.hidden
            )
        )
    }

    // MARK: - The client's requests

    /// `request` arrived.
    mutating func received(_ request: Livekit_SignalRequest) -> [Action] {
        guard phase == .joined, let message = request.message else { return [] }
        switch message {
        case .pingReq(let ping):
            pings.append((ping.timestamp, false))
            return [.deliver(.heartbeat(userID: join.identity, session: join.session))]
        case .ping(let timestamp):
            pings.append((timestamp, true))
            return [.deliver(.heartbeat(userID: join.identity, session: join.session))]
        case .leave:
            phase = .closed
            return [.deliver(.logout(userID: join.identity, session: join.session)), .close("the participant left")]
        case .offer(let offer):
            // The SDK's publisher offers (its data channels, no media): the peer helper answers.
            return [.negotiate(peer: peer(.publisher), offer: offer)]
        case .trickle(let trickle):
            return trickle.candidateInit.isEmpty
                ? [] : [.candidate(peer: peer(trickle.target), json: trickle.candidateInit)]
        default:
            // Answers (RoomLink never offers: no media to send) and track requests: no media flows through RoomLink.
            return []
        }
    }

    // MARK: - The room's answers

    /// The room answered `message` at `wallMillis` (UNIX milliseconds, which a pong carries); `roomSID` makes the
    /// room's sid of its life's ID, and `sid` finds the sid of another participant of the room by identity.
    mutating func answer(
        _ message: ServerMessage,
        at wallMillis: Int64,
        room roomSID: (String) -> String,
        sid: (String) -> String
    ) -> [Action] {
        guard phase != .closed else { return [] }
        switch message {
        case .loginAccepted(let session, _, let roomSessionID, let present) where session == join.session:
            let wasJoining = phase == .joining
            phase = .joined
            guard wasJoining else { return [] }
            if join.isResume {
                var reconnect = Livekit_ReconnectResponse()
                reconnect.serverInfo = Self.serverInfo
                // Then everyone present, the participant among them, as livekit-server's `ResumeParticipant` sends
                // them: who joined or left while it was away.
                let update = Livekit_ParticipantUpdate.with {
                    $0.participants =
                        [participant(join.identity, sid: participantSID, state: .active, name: join.name)]
                        + present.map { participant($0, sid: sid($0), state: .active) }
                }
                return [.respond(.with { $0.reconnect = reconnect }), .respond(.with { $0.update = update })]
            }
            var response = Livekit_JoinResponse()
            response.room = .with {
                $0.sid = roomSID(roomSessionID)
                $0.name = join.room
                $0.numParticipants = UInt32(present.count + 1)
            }
            response.participant = participant(join.identity, sid: participantSID, state: .joined, name: join.name)
            response.otherParticipants = present.map { participant($0, sid: sid($0), state: .active) }
            response.serverVersion = Self.serverInfo.version
            response.serverInfo = Self.serverInfo
            response.pingInterval = pingInterval
            response.pingTimeout = pingTimeout
            return [.respond(.with { $0.join = response })]
        case .loginRejected(let session, _, let reason) where session == join.session:
            return leave(reason == .memberCapReached ? .joinFailure : .userRejected, action: .disconnect)
        case .busy(let session, _, _) where session == join.session:
            // LiveKit has no admission control; a client told to come back reconnects in full.
            return leave(.joinFailure, action: .reconnect)
        case .heartbeatAck(let session) where session == join.session:
            guard !pings.isEmpty else { return [] }
            let ping = pings.removeFirst()
            if ping.legacy { return [.respond(.with { $0.pong = ping.timestamp })] }
            let pong = Livekit_Pong.with {
                $0.lastPingTimestamp = ping.timestamp
                $0.timestamp = wallMillis
            }
            return [.respond(.with { $0.pongResp = pong })]
        case .sessionUnknown(let session) where session == join.session:
            return leave(.stateMismatch, action: .reconnect)
        case .userUpdate(let change, let users, let reason):
            guard phase == .joined else { return [] }
            let update = Livekit_ParticipantUpdate.with { update in
                update.participants = users.map { user in
                    var info = participant(user, sid: sid(user), state: change == .add ? .active : .disconnected)
                    if change == .delete {
                        info.disconnectReason = reason == .quit ? .clientInitiated : .unknownReason
                    }
                    return info
                }
            }
            return [.respond(.with { $0.update = update })]
        case .kicked(let session, let reason) where session == join.session:
            let why: Livekit_DisconnectReason =
                switch reason {
                case .duplicateLogin: .duplicateIdentity
                case .admin: .participantRemoved
                case .tokenExpired: .userRejected
                }
            return leave(why, action: .disconnect)
        case .reconnectRequested(let session) where session == join.session:
            return leave(.migration, action: .reconnect)
        default:
            return []
        }
    }

    /// A refreshed access token for the participant, as livekit-server sends one every five minutes
    /// (`refresh_token`): the same identity, name and room, valid from `now` (UNIX seconds) for `lifetime` seconds
    /// (LiveKit's ten minutes), signed by `secret` — the secret of the key that signed the join's token. The SDKs
    /// use the latest one when they reconnect. Nothing while not in the room.
    func refreshedToken(secret: String, now: Int64, lifetime: Int64 = 600) -> [Action] {
        guard phase == .joined else { return [] }
        let token = LiveKitAccessToken(
            apiKey: join.apiKey,
            identity: join.identity,
            name: join.name.isEmpty ? nil : join.name,
            notBefore: now,
            expires: now + lifetime,
            video: .init(roomJoin: true, room: join.room, hidden: join.hidden ? true : nil)
        )
        return [.respond(.with { $0.refreshToken = token.signed(with: secret) })]
    }

    /// The server shuts down: the participant is told to reconnect (to another node, for a LiveKit cluster).
    mutating func shutDown() -> [Action] {
        guard phase != .closed else { return [] }
        return leave(.serverShutdown, action: .reconnect)
    }

    /// The room was deleted (the room service's `DeleteRoom`).
    mutating func roomDeleted() -> [Action] {
        guard phase != .closed else { return [] }
        return leave(.roomDeleted, action: .disconnect)
    }

    /// A `leave` with `reason` and `action`, then the close.
    private mutating func leave(_ reason: Livekit_DisconnectReason, action: Livekit_LeaveRequest.Action) -> [Action] {
        phase = .closed
        let leave = Livekit_LeaveRequest.with {
            $0.reason = reason
            $0.action = action
            $0.canReconnect = action != .disconnect
        }
        return [.respond(.with { $0.leave = leave }), .close("leave: \(reason), \(action)")]
    }

    /// Whether the room still counts the participant in (so that a connection lost under it must be told).
    var isInRoom: Bool { phase == .joined }

    private func participant(
        _ identity: String,
        sid: String,
        state: Livekit_ParticipantInfo.State,
        name: String = ""
    ) -> Livekit_ParticipantInfo {
        .with {
            $0.sid = sid
            $0.identity = identity
            $0.name = name
            $0.state = state
            $0.permission = .with {
                $0.canSubscribe = true
                $0.canPublish = true
                $0.canPublishData = true
            }
            if identity == join.identity { $0.joinedAt = join.joinedAt }
        }
    }

    /// What the server says it is: a LiveKit server of this protocol's generation.
    static let serverInfo = Livekit_ServerInfo.with {
        $0.edition = .standard
        $0.version = "1.9.0"
        $0.protocol = 16
        $0.nodeID = "roomlink"
    }
}
