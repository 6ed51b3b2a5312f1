public import Foundation

/// ZEGO's `token04`, the token ZEGO's server assistant makes: opened with the app's server secret, checked, and made.
///
/// The format, from ZEGO's server-assistant generators (zegoim/zego_server_assistant, `token04`): `04`, then the base64
/// of the expiry (a big-endian 64-bit Unix time), the nonce (a big-endian 16-bit length, then 12 random bytes), the
/// sealed claims (a 16-bit length, then the AES-GCM ciphertext of a JSON object with its 16-byte tag) and the mode
/// (1, GCM). The key is the 32-character server secret's bytes (AES-256). The claims are `app_id`, `user_id`,
/// `nonce`, `ctime`, `expire` and `payload` — a JSON text of its own, empty for a token that only authenticates the
/// user, or with `room_id` and `privilege` (`{"1": 1}`: may log in) for one that also says which room. The older form
/// (no mode byte) sealed the claims with AES-CBC under a 16-byte IV; ZEGO calls it deprecated, and it is read too.
public struct ZegoToken04: Sendable, Hashable {
    /// What a token says, once opened.
    public struct Claims: Codable, Sendable, Hashable {
        public var appID: UInt32
        public var userID: String
        public var nonce: Int64
        /// When the token was made (Unix seconds).
        public var created: Int64
        /// When the token expires (Unix seconds).
        public var expire: Int64
        /// The payload: "" or a JSON text (`room_id`, `privilege`, `stream_id_list`).
        public var payload: String

        enum CodingKeys: String, CodingKey {
            case appID = "app_id"
            case userID = "user_id"
            case nonce
            case created = "ctime"
            case expire
            case payload
        }

        public init(appID: UInt32, userID: String, nonce: Int64, created: Int64, expire: Int64, payload: String) {
            self.appID = appID
            self.userID = userID
            self.nonce = nonce
            self.created = created
            self.expire = expire
            self.payload = payload
        }
    }

    /// A payload that names a room and what the user may do there.
    struct RoomPayload: Codable {
        var roomID: String?
        var privilege: [String: Int]?

        enum CodingKeys: String, CodingKey {
            case roomID = "room_id"
            case privilege
        }
    }

    /// How the claims are sealed.
    public enum Mode: UInt8, Sendable {
        /// AES/CBC/PKCS5Padding with a 16-byte IV: ZEGO's older form, "deprecated".
        case cbc = 0
        /// AES-GCM with a 12-byte nonce: what ZEGO's generators make today.
        case gcm = 1
    }

    /// The version prefix.
    public static let version = "04"

    /// The expiry in the clear (Unix seconds), which the claims repeat.
    public var expire: Int64
    public var mode: Mode
    let nonce: Data
    let sealed: Data

    /// Reads `token`'s form (``open(secret:)`` opens its claims).
    public init(_ token: String) throws(TokenError) {
        guard token.utf8.count <= maximumTokenCharacters else { throw .oversized(limit: maximumTokenCharacters) }
        guard token.hasPrefix(Self.version) else { throw .wrongVersion(expected: Self.version) }
        var reader = TokenReader(try decodeBase64(token.dropFirst(Self.version.count), "the body"))
        expire = try reader.bigEndian(Int64.self, "the expiry")
        nonce = Data(try reader.bytes(Int(reader.bigEndian(UInt16.self, "the nonce's length")), "the nonce"))
        sealed = Data(try reader.bytes(Int(reader.bigEndian(UInt16.self, "the claims' length")), "the claims"))
        if reader.isAtEnd {
            mode = .cbc
        } else {
            let byte = try reader.bigEndian(UInt8.self, "the mode")
            guard let mode = Mode(rawValue: byte) else { throw .malformed("unknown mode \(byte)") }
            self.mode = mode
            try reader.requireEnd("the mode")
        }
        switch mode {
        case .gcm: guard nonce.count == 12 else { throw .malformed("a GCM nonce is 12 bytes, not \(nonce.count)") }
        case .cbc: guard nonce.count == 16 else { throw .malformed("a CBC IV is 16 bytes, not \(nonce.count)") }
        }
    }

    /// The claims, opened with `secret`: `.badSignature` when the seal does not open under it (another secret, an
    /// altered byte).
    public func open(secret: String) throws(TokenError) -> Claims {
        let key = Data(secret.utf8)
        let plain: Data? =
            switch mode {
            case .gcm: Ciphers.openAESGCM(sealed, key: key, nonce: nonce)
            case .cbc: Ciphers.aesCBC(sealed, key: key, iv: nonce, encrypting: false)
            }
        guard let plain else { throw .badSignature }
        // CBC has no tag: a wrong key shows as padding that fails (above) or, rarely, as bytes that are not the claims.
        guard let claims = try? JSONDecoder().decode(Claims.self, from: plain) else {
            throw mode == .cbc ? .badSignature : .malformed("the claims are not ZEGO's JSON")
        }
        return claims
    }

    /// Checks the token as ZEGO's servers do for `user` logging in to `room`: opened with `secret`, for `appID` and
    /// that user, not expired at `now` (Unix seconds), and — when its payload names a room — for that room with the
    /// privilege to log in. Returns when it expires.
    @discardableResult
    public func verify(
        secret: String,
        appID: UInt32,
        user: String,
        room: String,
        now: Int64
    ) throws(TokenError) -> Int64 {
        let claims = try open(secret: secret)
        guard claims.expire == expire else { throw .malformed("the expiry in the clear is not the sealed one") }
        guard claims.appID == appID else { throw .wrongApp(String(claims.appID)) }
        guard claims.userID == user else { throw .wrongUser(claims.userID) }
        if !claims.payload.isEmpty {
            guard let payload = try? JSONDecoder().decode(RoomPayload.self, from: Data(claims.payload.utf8)) else {
                throw .malformed("the payload is not ZEGO's room payload")
            }
            if let roomID = payload.roomID, !roomID.isEmpty, roomID != room { throw .wrongRoom(roomID) }
            if let privilege = payload.privilege, privilege["1"] != 1 { throw .noJoinPrivilege }
        }
        guard now < claims.expire else { throw .expired(at: UInt64(clamping: claims.expire)) }
        return claims.expire
    }

    /// A token as ZEGO's `generateToken04` makes it (GCM): `claims` sealed under `secret` (16, 24 or 32 bytes).
    public static func make(claims: Claims, secret: String, nonce: Data? = nil) throws(TokenError) -> String {
        let nonce = nonce ?? Data((0..<12).map { _ in UInt8.random(in: 0...255) })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let plain = try? encoder.encode(claims) else { throw .malformed("the claims do not encode") }
        guard let sealed = Ciphers.sealAESGCM(plain, key: Data(secret.utf8), nonce: nonce) else {
            throw .malformed("a server secret is 16, 24 or 32 bytes, not \(secret.utf8.count)")
        }
        var writer = TokenWriter()
        writer.bigEndian(claims.expire)
        writer.bigEndian(UInt16(nonce.count))
        writer.append(nonce)
        writer.bigEndian(UInt16(sealed.count))
        writer.append(sealed)
        writer.bigEndian(Mode.gcm.rawValue)
        return version + Data(writer.bytes).base64EncodedString()
    }

    /// A payload naming `room` with the privilege to log in (and, with `publish`, to publish), as ZEGO's room
    /// samples write it.
    public static func roomPayload(_ room: String, publish: Bool = true) -> String {
        let payload = RoomPayload(roomID: room, privilege: ["1": 1, "2": publish ? 1 : 0])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: (try? encoder.encode(payload)) ?? Data(), as: UTF8.self)
    }
}
