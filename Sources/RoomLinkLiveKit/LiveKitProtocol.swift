import Foundation
public import RoomLinkEngine
@_spi(RoomLinkInternals) public import RoomLinkLibevent
public import RoomLinkNetwork
import RoomLinkRuntime

/// LiveKit's protocols on `roomlink serve`'s port: what each accepted socket becomes (a ``LiveKitConnection``), the
/// access tokens it accepts, and the sids of the participants of each room.
final class LiveKitProtocol: ServedProtocol {
    let keys: LiveKitKeys
    /// Each room's participants' sids by identity: the sid a participant was given at its join is the one the others
    /// see in their updates (a room's members are known to it by identity alone).
    private let sids = LockedBox<[String: [String: String]]>([:])
    private let roomServer = LockedBox<RoomServer?>(nil)

    /// The server's rooms, for the room service (set once the server is made).
    var rooms: RoomServer? {
        get { roomServer.withLock { $0 } }
        set { roomServer.withLock { $0 = newValue } }
    }

    /// The peer helper that answers the SDKs' offers, if serve has one.
    let peers: LiveKitPeerHelper?

    /// The ping timeout the join response tells clients (their side's: the server removes a silent participant
    /// after its own `heartbeatTimeout`).
    let pingTimeout: Duration

    /// How often a participant in its room is sent a refreshed token (`refresh_token`); zero: never.
    let tokenRefresh: Duration

    init(
        keys: LiveKitKeys,
        pingTimeout: Duration = .seconds(15),
        tokenRefresh: Duration = .seconds(300),
        peers: LiveKitPeerHelper? = nil
    ) {
        self.keys = keys
        self.pingTimeout = pingTimeout
        self.tokenRefresh = tokenRefresh
        self.peers = peers
    }

    func connection(
        id: UInt64,
        fd: Int32,
        peer: String,
        loop: LibeventLoop,
        server: TCPServerTransport
    ) -> any ServedConnection {
        LiveKitConnection(id: id, fd: fd, peer: peer, loop: loop, server: server, service: self)
    }

    /// The join a `GET /rtc` (or `/rtc/validate`) asks for by its query and `Authorization` header, checked now; a new
    /// session for a join.
    func join(_ query: [String: String], authorization: String?) throws(LiveKitJoin.Refusal) -> LiveKitJoin {
        try LiveKitJoin.parse(
            query,
            authorization: authorization,
            keys: keys,
            now: Int64(Date().timeIntervalSince1970),
            session: SessionID(rawValue: UInt64.random(in: 1...UInt64.max))
        )
    }

    /// The sid of `identity` in `room`; one made of the identity for a participant this server has not seen join
    /// (another node's).
    func sid(of identity: String, in room: String) -> String {
        sids.withLock { $0[room]?[identity] } ?? "PA_\(identity)"
    }

    func joined(_ identity: String, sid: String, in room: String) {
        sids.withLock { $0[room, default: [:]][identity] = sid }
    }

    /// The participant left for good (a leave, a kick): its sid is forgotten, unless it joined again since.
    func left(_ identity: String, sid: String, in room: String) {
        sids.withLock { sids in
            guard sids[room]?[identity] == sid else { return }
            sids[room]?[identity] = nil
            if sids[room]?.isEmpty == true { sids[room] = nil }
        }
    }
}

/// Where `roomlink serve --protocol livekit` posts its webhooks, and which API key signs them.
public struct LiveKitWebhookSettings: Sendable, Equatable {
    public var urls: [WebhookURL]
    /// The key whose secret signs each event (LiveKit's `webhook.api_key`).
    public var apiKey: String
    /// Events in flight at most; more are dropped and counted (`roomlink_webhooks_total{outcome="dropped"}`).
    public var queueCapacity: Int
    /// How an `https://` receiver's certificate is verified: the system's authorities, or a file's (`serve --ca`).
    public var tls: TLSClientConfiguration

    public init(
        urls: [WebhookURL],
        apiKey: String,
        queueCapacity: Int = 10_000,
        tls: TLSClientConfiguration = .init()
    ) {
        self.urls = urls
        self.apiKey = apiKey
        self.queueCapacity = queueCapacity
        self.tls = tls
    }
}

extension NetworkServer {
    /// A server of LiveKit's protocols (docs/livekit.md): signalling on `GET /rtc` (protobuf over WebSocket) and
    /// `/rtc/validate`, the room service (Twirp), with access tokens signed by one of `keys`, in front of the same
    /// rooms as RoomLink's own protocol, and `webhooks` when given (or `callbacks`, made with a
    /// ``LiveKitCallbackFormat``, which then take their place). With a `peerHelper` (`scripts/livekit-peer`),
    /// the SDKs' offers are answered, so that their peer connections — and their rooms — connect. The join response
    /// tells clients the configuration's heartbeat interval and `pingTimeout` (the client's side; the server removes
    /// a silent participant after its own heartbeat timeout); every `tokenRefresh` (scenario time, as the timings;
    /// zero: never) a participant in its room is sent a refreshed token, as livekit-server does every five minutes.
    /// The configuration's dialect must be LiveKit's.
    ///
    /// - Throws: ``LiveKitKeysError/unknownKey(_:)`` when the webhooks' key is not one of `keys`.
    public static func liveKit(
        group: LibeventLoopGroup,
        configuration: Configuration,
        keys: LiveKitKeys,
        webhooks: LiveKitWebhookSettings? = nil,
        callbacks: RoomCallbacks? = nil,
        peerHelper: SocketAddress? = nil,
        pingTimeout: Duration = LiveKitTimings.default.pingTimeout,
        tokenRefresh: Duration = .seconds(300)
    ) throws(LiveKitKeysError) -> NetworkServer {
        precondition(configuration.dialect == .livekit, "LiveKit's protocol serves the livekit dialect")
        let peers = peerHelper.map {
            LiveKitPeerHelper(address: $0, loop: group.eventLoops[0], logger: configuration.logger)
        }
        let served = LiveKitProtocol(keys: keys, pingTimeout: pingTimeout, tokenRefresh: tokenRefresh, peers: peers)
        var observer = callbacks
        if observer == nil, let webhooks {
            guard let secret = keys.secrets[webhooks.apiKey] else { throw .unknownKey(webhooks.apiKey) }
            var urls: [HTTPTokenSource.Endpoint] = []
            for url in webhooks.urls {
                do {
                    urls.append(try HTTPTokenSource.Endpoint(parsing: url.description, flag: "--webhook"))
                } catch {
                    throw .notAURL(url.description)
                }
            }
            do {
                observer = try RoomCallbacks(
                    settings: CallbackSettings(
                        urls: urls,
                        rules: .vendor(.livekit, capacity: webhooks.queueCapacity),
                        tls: webhooks.tls
                    ),
                    format: LiveKitCallbackFormat(apiKey: webhooks.apiKey, secret: secret),
                    loop: group.eventLoops[0]
                )
            } catch {
                guard case .tls(let error) = error else { throw .notAURL(webhooks.urls.map(\.description).joined()) }
                throw .webhookTLS(error)
            }
        }
        let server = NetworkServer(
            group: group,
            configuration: configuration,
            served: served,
            membershipObserver: observer
        )
        observer?.countWebhooks(in: server.statistics)
        served.rooms = server.rooms
        return server
    }
}
