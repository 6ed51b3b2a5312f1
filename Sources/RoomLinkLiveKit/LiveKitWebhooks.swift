internal import CLibevent
import Foundation
import Logging
import RoomLinkEngine
@_spi(RoomLinkInternals) import RoomLinkLibevent
import RoomLinkNetwork
import RoomLinkRuntime
import RoomLinkTokens
import SwiftProtobuf

/// LiveKit's webhooks from `roomlink serve --protocol livekit --webhook URL`: `room_started`, `participant_joined`,
/// `participant_left` and `room_finished`, each a `WebhookEvent` in protojson posted as `application/webhook+json`
/// with an `Authorization` JWT whose `sha256` claim is the body's hash — what `livekit-api`'s `WebhookReceiver`
/// checks.
///
/// It hears the rooms' membership (``RoomMembershipObserver``), so every way a participant goes — a leave, a kick, a
/// duplicate identity, the ping timeout — is an event. Delivery runs on one loop over a few keep-alive connections
/// per URL (libevent's HTTP client), and is bounded: past ``Configuration/queueCapacity`` events in flight, a new
/// one is dropped and counted (a reconnect storm is a webhook storm; `roomlink_webhooks_total{outcome="dropped"}`).
final class LiveKitWebhooks: RoomMembershipObserver, @unchecked Sendable {
    // Safe: `rooms` and `statistics` are behind their locks; the connections and `inFlight` are touched on `loop`'s
    // thread only (deliveries hop there; libevent's callbacks run there). The `let`s are immutable and Sendable.

    /// Where and how events are posted.
    struct Configuration: Sendable {
        var urls: [WebhookURL]
        /// The API key whose secret signs the events (its name is the token's `iss`).
        var apiKey: String
        var secret: String
        /// Events in flight at most, over every URL; more are dropped and counted.
        var queueCapacity = 10_000
        /// Keep-alive connections per URL.
        var connectionsPerURL = 4
        /// How long a request may take (real time).
        var timeout = 10
        /// The TLS context of `https://` URLs, when there are some.
        var tls: TLSContext?
    }

    let configuration: Configuration
    fileprivate let loop: LibeventLoop
    private let logger: Logger
    private let statistics = LockedBox<NetworkServerStatistics?>(nil)
    /// Each room's participants of this node, for `room_started` and `room_finished`.
    private let rooms = LockedBox<[String: Int]>([:])
    private var connections: [[OpaquePointer]] = []
    private var next = 0
    private var inFlight = 0
    private let eventCount = LockedBox<UInt64>(0)

    init(configuration: Configuration, loop: LibeventLoop, logger: Logger) {
        self.configuration = configuration
        self.loop = loop
        self.logger = logger
    }

    /// Counts deliveries in `statistics` (the server's, made after this).
    func count(in statistics: NetworkServerStatistics) {
        self.statistics.withLock { $0 = statistics }
    }

    // MARK: - Events

    func membershipChanged(
        _ change: MembershipChange,
        inRoom roomID: String,
        roomSessionID: String,
        at now: RuntimeInstant
    ) {
        let room = Livekit_Room.with {
            $0.sid = "RM_\(roomSessionID)"
            $0.name = roomID
        }
        var events: [Livekit_WebhookEvent] = []
        switch change {
        case .joined(let identity, let session):
            let first = rooms.withLock { rooms in
                rooms[roomID, default: 0] += 1
                return rooms[roomID] == 1
            }
            if first { events.append(event("room_started", room: room)) }
            events.append(event("participant_joined", room: room, participant: participant(identity, session, .active)))
        case .left(let identity, let session, let reason, let kicked):
            let last = rooms.withLock { rooms in
                rooms[roomID, default: 1] -= 1
                guard rooms[roomID]! <= 0 else { return false }
                rooms[roomID] = nil
                return true
            }
            var info = participant(identity, session, .disconnected)
            info.disconnectReason =
                switch (reason, kicked) {
                case (.quit, _): .clientInitiated
                case (_, .duplicateLogin): .duplicateIdentity
                case (_, .admin): .participantRemoved
                default: .unknownReason
                }
            events.append(event("participant_left", room: room, participant: info))
            if last { events.append(event("room_finished", room: room)) }
        }
        let bodies = events.compactMap { try? $0.jsonUTF8Data() }
        loop.execute { [self] in
            for body in bodies { deliver(body) }
        }
    }

    private func participant(
        _ identity: String,
        _ session: SessionID,
        _ state: Livekit_ParticipantInfo.State
    ) -> Livekit_ParticipantInfo {
        .with {
            $0.identity = identity
            $0.sid = LiveKitSignalState.sid(of: session)
            $0.state = state
        }
    }

    private func event(
        _ name: String,
        room: Livekit_Room,
        participant: Livekit_ParticipantInfo? = nil
    ) -> Livekit_WebhookEvent {
        let number = eventCount.withLock { count in
            count += 1
            return count
        }
        return .with {
            $0.event = name
            $0.room = room
            if let participant { $0.participant = participant }
            $0.id = "EV_\(String(number, radix: 36))_\(String(UInt32.random(in: 0...UInt32.max), radix: 36))"
            $0.createdAt = Int64(Date().timeIntervalSince1970)
        }
    }

    // MARK: - Delivery (on `loop`)

    private func deliver(_ body: Data) {
        guard inFlight < configuration.queueCapacity else {
            statistics.withLock { $0?.add(.webhooksDropped, configuration.urls.count) }
            return
        }
        if connections.isEmpty { openConnections() }
        let now = Int64(Date().timeIntervalSince1970)
        let token = LiveKitAccessToken(
            apiKey: configuration.apiKey,
            identity: "",
            notBefore: now,
            expires: now + 300,
            video: .init(),
            sha256: Digests.sha256(body).base64EncodedString()
        ).signed(with: configuration.secret)
        for (index, url) in configuration.urls.enumerated() {
            let pool = connections[index]
            guard !pool.isEmpty else {
                statistics.withLock { $0?.add(.webhooksFailed) }
                continue
            }
            next &+= 1
            let connection = pool[next % pool.count]
            let context = Unmanaged.passUnretained(self).toOpaque()
            guard let request = evhttp_request_new(webhookAnswered, context) else { continue }
            let headers = evhttp_request_get_output_headers(request)
            evhttp_add_header(headers, "Host", url.hostHeader)
            evhttp_add_header(headers, "Content-Type", "application/webhook+json")
            evhttp_add_header(headers, "Authorization", token)
            body.withUnsafeBytes {
                _ = evbuffer_add(evhttp_request_get_output_buffer(request), $0.baseAddress, $0.count)
            }
            if evhttp_make_request(connection, request, EVHTTP_REQ_POST, url.path) == 0 {
                inFlight += 1
            } else {
                statistics.withLock { $0?.add(.webhooksFailed) }
            }
        }
    }

    private func openConnections() {
        connections = configuration.urls.map { url in
            (0..<configuration.connectionsPerURL).compactMap { _ in
                let made = TLSContext.httpConnection(
                    url.isSecure ? configuration.tls : nil,
                    on: loop.eventBase,
                    host: url.host,
                    port: url.port,
                    serverName: nil
                )
                guard let connection = made else { return nil }
                evhttp_connection_set_timeout(connection, Int32(configuration.timeout))
                return connection
            }
        }
    }

    fileprivate func answered(status: Int32) {
        inFlight -= 1
        if (200..<300).contains(status) {
            statistics.withLock { $0?.add(.webhooksDelivered) }
        } else {
            statistics.withLock { $0?.add(.webhooksFailed) }
            logger.debug("a webhook was not delivered", metadata: ["status": "\(status)"])
        }
    }
}

/// A webhook's `http://` or `https://HOST[:PORT]/PATH`.
public struct WebhookURL: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: UInt16
    public var path: String
    /// Whether it is `https://`: posted over TLS, the receiver's certificate verified
    /// (``LiveKitWebhookSettings/tls``).
    public var isSecure: Bool

    /// Reads `http://` or `https://HOST[:PORT][/PATH]`.
    public init(parsing text: String) throws(LiveKitKeysError) {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https",
            let host = components.host, !host.isEmpty,
            let port = UInt16(exactly: components.port ?? (scheme == "https" ? 443 : 80)), port > 0
        else { throw .notAURL(text) }
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        self.port = port
        isSecure = scheme == "https"
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        self.path = path + (components.percentEncodedQuery.map { "?\($0)" } ?? "")
    }

    var hostHeader: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (isSecure ? 443 : 80) ? name : "\(name):\(port)"
    }

    public var description: String { "\(isSecure ? "https" : "http")://\(hostHeader)\(path)" }
}

private func webhookAnswered(_ request: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    let webhooks = Unmanaged<LiveKitWebhooks>.fromOpaque(context!).takeUnretainedValue()
    let status = request.map { evhttp_request_get_response_code($0) } ?? 0
    webhooks.loop.runCallback { webhooks.answered(status: status) }
}
