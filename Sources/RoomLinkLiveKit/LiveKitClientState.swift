import Foundation
import RoomLinkEngine
import SwiftProtobuf

/// The rules of one RoomLink client's signalling to a LiveKit server for one room, as a value: what the room's
/// messages become on LiveKit's wire (the dial of `GET /rtc`, `SignalRequest`s), and what the server's answers
/// (`SignalResponse`s, an HTTP refusal) mean to the room's client. ``LiveKitClientConnection`` carries it out;
/// tests drive it alone.
///
/// It is the inverse of ``LiveKitSignalState`` (docs/livekit.md): a login is a dial — a join, or for a login of kind
/// `resume` a `reconnect=1&sid=…` that names the participant the last join made — answered by `JoinResponse` or
/// `ReconnectResponse`; a heartbeat is `ping_req`, answered by `pong_resp`; a logout is `leave`. A `leave` from the
/// server is a kick, a reconnect request, an unknown session or a refused join, by its action and reason.
///
/// It outlives each connection: the participant's sid and the others present carry over to the next dial.
struct LiveKitClientState: Sendable {
    /// The client's user: the participant's identity.
    let identity: String
    /// The room: the token's grant.
    let room: String
    /// The login the current connection carries, until it is answered.
    private(set) var login: LoginRequest?
    /// The session of the client's room now (the last login's): every answer names it.
    private(set) var session: SessionID?
    /// The participant's sid from the last join, which a resume names.
    private(set) var participantSID: String?
    /// The room's sid from the last join.
    private(set) var roomSID = ""
    /// The other participants present, by identity, as the last join and updates left them.
    private(set) var peers: Set<String> = []
    /// Whether the connection's answer came (the participant is in the room on this connection).
    private(set) var isJoined = false
    /// After a resume's answer, the next update lists everyone present (livekit-server's `ResumeParticipant` sends
    /// one): who is missing from it left while the participant was away.
    private var resyncing = false
    /// The round trip of the last ping, in milliseconds, which the next `ping_req` reports (as the SDKs do).
    private var lastRTT: Int64 = 0

    /// What the server's words mean to the client.
    enum Output: Sendable, Equatable {
        /// Hand the room's client this message.
        case deliver(ServerMessage)
        /// The server ends the connection: the client hears it closed for this cause (`nil`: it heard what it needs
        /// already — a kick, a refusal — and hears nothing more).
        case close(ConnectionCloseCause?)
    }

    init(identity: String, room: String) {
        self.identity = identity
        self.room = room
    }

    // MARK: - The client's messages

    /// `login` dials a new connection: the request target of its `GET`, with `token` (the access token). A resume
    /// names the participant the last join made; without one (it never joined) it joins.
    mutating func dial(_ login: LoginRequest, token: String) -> String {
        self.login = login
        session = login.session
        isJoined = false
        resyncing = false
        var query = [
            ("access_token", token), ("auto_subscribe", "1"), ("sdk", "roomlink"), ("protocol", "16"),
        ]
        if login.kind == .resume, let participantSID {
            query += [("reconnect", "1"), ("sid", participantSID)]
        }
        return "/rtc?" + query.map { "\($0)=\(Self.percentEncoded($1))" }.joined(separator: "&")
    }

    /// Whether a login dials as a resume.
    var resumes: Bool { login?.kind == .resume && participantSID != nil }

    /// The request `message` makes on an open connection at `wallMillis` (UNIX milliseconds), if it makes one: a
    /// heartbeat is a `ping_req`, a logout a `leave`. Renewals, hidden changes and the ZEGO dialect's resumes have
    /// no LiveKit request: the server renews tokens itself (`refresh_token`).
    func request(for message: ClientMessage, at wallMillis: Int64) -> Livekit_SignalRequest? {
        switch message {
        case .heartbeat(_, let session) where session == self.session:
            let ping = Livekit_Ping.with {
                $0.timestamp = wallMillis
                $0.rtt = lastRTT
            }
            return .with { $0.pingReq = ping }
        case .logout(_, let session) where session == self.session:
            let leave = Livekit_LeaveRequest.with {
                $0.reason = .clientInitiated
                $0.action = .disconnect
            }
            return .with { $0.leave = leave }
        default:
            return nil
        }
    }

    // MARK: - The server's answers

    /// The server answered the dial with HTTP `status` instead of a WebSocket: a refused token (401, 403) refuses
    /// the login; anything else is a refused attempt (`nil`), which the client retries by its policy.
    mutating func refused(status: Int) -> ServerMessage? {
        guard let login else { return nil }
        self.login = nil
        guard status == 401 || status == 403 else { return nil }
        return .loginRejected(session: login.session, attempt: login.attempt, reason: .tokenInvalid)
    }

    /// `response` arrived at `wallMillis`.
    mutating func received(_ response: Livekit_SignalResponse, at wallMillis: Int64) -> [Output] {
        guard let message = response.message, let session else { return [] }
        switch message {
        case .join(let join):
            guard let login, !isJoined else { return [] }
            self.login = nil
            isJoined = true
            participantSID = join.participant.sid
            roomSID = join.room.sid
            let present = join.otherParticipants.filter { $0.state != .disconnected && $0.identity != identity }
                .map(\.identity)
            peers = Set(present)
            return [
                .deliver(
                    .loginAccepted(
                        session: session,
                        attempt: login.attempt,
                        roomSessionID: roomSID,
                        present: present.sorted()
                    )
                )
            ]
        case .reconnect:
            guard let login, !isJoined else { return [] }
            self.login = nil
            isJoined = true
            resyncing = true
            return [
                .deliver(
                    .loginAccepted(
                        session: session,
                        attempt: login.attempt,
                        roomSessionID: roomSID,
                        present: peers.sorted()
                    )
                )
            ]
        case .update(let update):
            guard isJoined else { return [] }
            return self.update(update.participants)
        case .pongResp(let pong):
            guard isJoined else { return [] }
            lastRTT = max(0, wallMillis - pong.lastPingTimestamp)
            return [.deliver(.heartbeatAck(session: session))]
        case .pong:
            guard isJoined else { return [] }
            return [.deliver(.heartbeatAck(session: session))]
        case .leave(let leave):
            return self.leave(leave, session: session)
        default:
            // Offers, trickles, track and speaker news, token refreshes: about media, which a signalling client
            // has none of.
            return []
        }
    }

    /// Participants joined, left or changed; the first update after a resume lists everyone present.
    private mutating func update(_ participants: [Livekit_ParticipantInfo]) -> [Output] {
        let others = participants.filter { $0.identity != identity }
        var added: [String] = []
        var quit: [String] = []
        var dropped: [String] = []
        if resyncing {
            resyncing = false
            let present = Set(others.filter { $0.state != .disconnected }.map(\.identity))
            dropped = peers.subtracting(present).sorted()
            added = present.subtracting(peers).sorted()
            peers = present
        } else {
            for participant in others {
                if participant.state == .disconnected {
                    guard peers.remove(participant.identity) != nil else { continue }
                    if participant.disconnectReason == .clientInitiated {
                        quit.append(participant.identity)
                    } else {
                        dropped.append(participant.identity)
                    }
                } else if peers.insert(participant.identity).inserted {
                    added.append(participant.identity)
                }
            }
        }
        var outputs: [Output] = []
        if !quit.isEmpty { outputs.append(.deliver(.userUpdate(.delete, users: quit, reason: .quit))) }
        if !dropped.isEmpty { outputs.append(.deliver(.userUpdate(.delete, users: dropped, reason: .dropped))) }
        if !added.isEmpty { outputs.append(.deliver(.userUpdate(.add, users: added, reason: nil))) }
        return outputs
    }

    /// The server's `leave`: what its action and reason tell the client, then the end of the connection.
    private mutating func leave(_ leave: Livekit_LeaveRequest, session: SessionID) -> [Output] {
        let joining = login
        login = nil
        isJoined = false
        // A server of the protocol before `action` says only whether the client may reconnect.
        let action: Livekit_LeaveRequest.Action =
            leave.action == .disconnect && leave.canReconnect ? .reconnect : leave.action
        switch (action, leave.reason) {
        case (.resume, _):
            // Told to resume: as a connection that dropped.
            return [.close(.endOfStream)]
        case (.reconnect, .stateMismatch):
            return [.deliver(.sessionUnknown(session: session)), .close(nil)]
        case (.reconnect, .serverShutdown):
            return [.close(.serverShutdown)]
        case (.reconnect, _):
            if let joining {
                // A join the server could not take now: the attempt failed, and the next follows the policy.
                return [.deliver(.busy(session: session, attempt: joining.attempt, retryAfter: .zero)), .close(nil)]
            }
            return [.deliver(.reconnectRequested(session: session)), .close(nil)]
        case (_, .duplicateIdentity):
            return [.deliver(.kicked(session: session, reason: .duplicateLogin)), .close(nil)]
        case (_, .userRejected), (_, .joinFailure):
            if let joining {
                let reason: LoginRejection = leave.reason == .joinFailure ? .memberCapReached : .tokenInvalid
                return [
                    .deliver(.loginRejected(session: session, attempt: joining.attempt, reason: reason)), .close(nil),
                ]
            }
            // Refused in the room: a revoked token, or a real server's join timeout for a participant whose peer
            // connection never connected (docs/livekit.md).
            let reason: KickReason = leave.reason == .userRejected ? .tokenExpired : .admin
            return [.deliver(.kicked(session: session, reason: reason)), .close(nil)]
        default:
            // Removed by the server (the room service, a deleted room): a kick.
            return [.deliver(.kicked(session: session, reason: .admin)), .close(nil)]
        }
    }

    /// The connection ended: nothing it carried is waiting any more.
    mutating func closed() {
        login = nil
        isJoined = false
    }

    private static func percentEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
    )
}
