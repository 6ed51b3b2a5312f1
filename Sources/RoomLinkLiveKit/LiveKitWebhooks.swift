import Foundation
public import RoomLinkNetwork
import RoomLinkTokens
import SwiftProtobuf

/// LiveKit's webhooks, worded for `roomlink serve --protocol livekit --webhook URL` (or `--callback URL`):
/// `room_started`, `participant_joined`, `participant_left` and `room_finished`, each a `WebhookEvent` in protojson
/// posted as `application/webhook+json` with an `Authorization` JWT whose `sha256` claim is the body's hash — what
/// `livekit-api`'s `WebhookReceiver` checks. `RoomCallbacks` delivers them as livekit-server does: one ordered queue
/// per room per URL, retries after 1, 2, 4 and 8 s.
public struct LiveKitCallbackFormat: CallbackFormat {
    /// The API key whose secret signs the events (its name is the token's `iss`).
    public let apiKey: String
    let secret: String
    public var vendor: CallbackVendor { .livekit }

    public init(apiKey: String, secret: String) {
        self.apiKey = apiKey
        self.secret = secret
    }

    /// Every event but a role change (LiveKit's webhooks have none).
    public func sends(_ event: RoomCallback.Event) -> Bool { event != .roleChanged }

    public func request(for callback: RoomCallback, attempt: Int, sentAtMs: Int64) -> CallbackRequest {
        let room = Livekit_Room.with {
            $0.sid = "RM_\(callback.roomSession)"
            $0.name = callback.roomID
        }
        let event = Livekit_WebhookEvent.with {
            $0.room = room
            // The same ID on every retry: what a receiver that de-duplicates keys on.
            $0.id = "EV_\(callback.roomSession)_\(String(callback.id, radix: 36))"
            $0.createdAt = callback.atMs / 1000
            switch callback.event {
            case .roomCreated: $0.event = "room_started"
            case .roomDestroyed: $0.event = "room_finished"
            case .roleChanged: $0.event = "participant_updated"
            case .joined:
                $0.event = "participant_joined"
                $0.participant = participant(callback, .active)
            case .left:
                $0.event = "participant_left"
                var info = participant(callback, .disconnected)
                info.disconnectReason =
                    switch callback.reason {
                    case .quit: .clientInitiated
                    case .replaced: .duplicateIdentity
                    case .kicked: .participantRemoved
                    default: .unknownReason
                    }
                $0.participant = info
            }
        }
        let body = Array((try? event.jsonUTF8Data()) ?? Data())
        let now = sentAtMs / 1000
        let token = LiveKitAccessToken(
            apiKey: apiKey,
            identity: "",
            notBefore: now,
            expires: now + 300,
            video: .init(),
            sha256: Digests.sha256(Data(body)).base64EncodedString()
        ).signed(with: secret)
        return CallbackRequest(
            body: body,
            contentType: "application/webhook+json",
            headers: [.init("Authorization", token)]
        )
    }

    private func participant(
        _ callback: RoomCallback,
        _ state: Livekit_ParticipantInfo.State
    )
        -> Livekit_ParticipantInfo
    {
        .with {
            $0.identity = callback.userID
            $0.sid = "PA_\(callback.session)"
            $0.state = state
            $0.joinedAt = callback.joinedAtMs / 1000
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

    /// Reads `http://` or `https://HOST[:PORT][/PATH]` (as `HTTPTokenSource.Endpoint` reads any URL serve calls).
    public init(parsing text: String) throws(LiveKitKeysError) {
        guard let endpoint = try? HTTPTokenSource.Endpoint(parsing: text, flag: "--webhook") else {
            throw .notAURL(text)
        }
        host = endpoint.host
        port = endpoint.port
        isSecure = endpoint.isSecure
        path = endpoint.pathTemplate
    }

    var hostHeader: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (isSecure ? 443 : 80) ? name : "\(name):\(port)"
    }

    public var description: String { "\(isSecure ? "https" : "http")://\(hostHeader)\(path)" }
}
