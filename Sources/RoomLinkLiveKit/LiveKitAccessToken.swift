import Foundation
import RoomLinkTokens

/// A LiveKit access token: a JWT (RFC 7519) signed with HMAC-SHA256 by the secret of an API key, whose claims say
/// who may do what — `iss` the API key, `sub` the participant's identity, `nbf` and `exp` its validity in UNIX
/// seconds, and `video` the grants (join which room, list or administer rooms). LiveKit's server SDKs mint them
/// (`livekit-api`'s `AccessToken`); ``LiveKitKeys/verify(_:at:)`` checks one as LiveKit's server does.
public struct LiveKitAccessToken: Sendable, Equatable {
    /// The API key that signed it (`iss`).
    public var apiKey: String
    /// The participant's identity (`sub`): two connections with one identity in a room are one participant.
    public var identity: String
    /// The participant's display name (`name`), if given.
    public var name: String?
    /// Not valid before this UNIX time (`nbf`), if given.
    public var notBefore: Int64?
    /// Not valid from this UNIX time on (`exp`).
    public var expires: Int64
    /// What the bearer may do with rooms (`video`).
    public var video: VideoGrant
    /// For a webhook's token: the SHA-256 of the request's body, base64 (`sha256`).
    public var sha256: String?

    /// LiveKit's room grants (the `video` claim), the ones RoomLink acts on; the others are ignored, as a server
    /// without the feature ignores them.
    public struct VideoGrant: Sendable, Equatable, Codable {
        /// May join `room`.
        public var roomJoin: Bool?
        /// The room `roomJoin` and `roomAdmin` apply to.
        public var room: String?
        /// May list rooms (the room service's `ListRooms`).
        public var roomList: Bool?
        /// May administer `room` (list, remove participants; the room service).
        public var roomAdmin: Bool?
        /// May create and delete rooms.
        public var roomCreate: Bool?
        /// Invisible to the other participants.
        public var hidden: Bool?

        public init(
            roomJoin: Bool? = nil,
            room: String? = nil,
            roomList: Bool? = nil,
            roomAdmin: Bool? = nil,
            roomCreate: Bool? = nil,
            hidden: Bool? = nil
        ) {
            self.roomJoin = roomJoin
            self.room = room
            self.roomList = roomList
            self.roomAdmin = roomAdmin
            self.roomCreate = roomCreate
            self.hidden = hidden
        }
    }

    public init(
        apiKey: String,
        identity: String,
        name: String? = nil,
        notBefore: Int64? = nil,
        expires: Int64,
        video: VideoGrant,
        sha256: String? = nil
    ) {
        self.apiKey = apiKey
        self.identity = identity
        self.name = name
        self.notBefore = notBefore
        self.expires = expires
        self.video = video
        self.sha256 = sha256
    }

    /// The token as a JWT signed by `secret` (HS256), as `livekit-api` mints it.
    public func signed(with secret: String) -> String {
        let header = Self.base64URL(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // Encoding plain strings, integers and booleans cannot fail.
        let payload = Self.base64URL(try! encoder.encode(Claims(self)))
        let input = "\(header).\(payload)"
        let signature = Digests.hmacSHA256(Data(input.utf8), key: Data(secret.utf8))
        return "\(input).\(Self.base64URL(Data(signature)))"
    }

    /// The claims on the wire.
    struct Claims: Codable {
        var iss: String?
        var sub: String?
        var name: String?
        var nbf: Int64?
        var exp: Int64?
        var video: VideoGrant?
        var sha256: String?

        init(_ token: LiveKitAccessToken) {
            iss = token.apiKey
            sub = token.identity
            name = token.name
            nbf = token.notBefore
            exp = token.expires
            video = token.video
            sha256 = token.sha256
        }
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func data(base64URL text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}

/// Why a LiveKit access token was refused.
public enum LiveKitTokenError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not three base64url parts of JSON, or claims of the wrong type.
    case malformed(String)
    /// Signed with another algorithm than HS256 (LiveKit's keys are shared secrets).
    case unsupportedAlgorithm(String)
    /// `iss` names no API key the server has.
    case unknownKey(String)
    /// The signature is not the key's secret's.
    case invalidSignature
    /// Used before its `nbf`.
    case notYetValid
    /// Used at or after its `exp`.
    case expired
    /// No identity (`sub`) where one is needed.
    case noIdentity
    /// Its grants do not allow what was asked (join this room, list rooms, administer this room).
    case notPermitted(String)

    public var description: String {
        switch self {
        case .malformed(let detail): "malformed token: \(detail)"
        case .unsupportedAlgorithm(let name): "unsupported signing algorithm \(name)"
        case .unknownKey(let key): "unknown API key '\(key)'"
        case .invalidSignature: "invalid token signature"
        case .notYetValid: "token is not valid yet"
        case .expired: "token is expired"
        case .noIdentity: "token has no identity"
        case .notPermitted(let what): "permissions denied: \(what)"
        }
    }
}
