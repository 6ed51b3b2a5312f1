import Foundation

/// Agora's AccessToken2 (`007…`), the token Agora's token builders make today: read, checked against an app's
/// certificate, and made.
///
/// The format, from Agora's own builders (AgoraIO/Tools, `DynamicKey/AgoraDynamicKey`, `AccessToken2`): `007`, then
/// the base64 of a zlib stream holding the signature (an Agora string: a little-endian 16-bit length, then bytes)
/// followed by what it signs — the app ID, the issue time, the token's lifetime in seconds, a salt, and the services
/// (RTC's: its privileges with their lifetimes in seconds, the channel, and the user as a decimal uid or an account;
/// an empty user is any uid). The signature is HMAC-SHA256 of those bytes under a key derived from the certificate:
/// `HMAC(salt, HMAC(issueTime, certificate))`, each 32-bit number little-endian.
///
/// ```swift
/// let token = try AgoraAccessToken2.make(
///     appID: appID, certificate: certificate, channel: "room-1", user: "alice",
///     issuedAt: now, lifetime: 3_600, privileges: [.joinChannel: 3_600])
/// let read = try AgoraAccessToken2(token)
/// try read.verify(certificate: certificate, appID: appID, channel: "room-1", user: "alice", now: now)
/// ```
public struct AgoraAccessToken2: AgoraJoinToken, Sendable, Hashable {
    /// An RTC privilege's number in the token.
    public enum Privilege: UInt16, Sendable, CaseIterable {
        case joinChannel = 1
        case publishAudioStream = 2
        case publishVideoStream = 3
        case publishDataStream = 4
    }

    /// One service the token grants.
    public struct Service: Sendable, Hashable {
        /// The service's type: 1 RTC, 2 RTM, 3 streaming, 4 FPA, 5 chat, 7 education.
        public var type: UInt16
        /// Each privilege's lifetime in seconds after the issue time, by its number.
        public var privileges: [UInt16: UInt32]
        /// For RTC and streaming, the channel; for RTM and chat, the user; for education, the room.
        public var name: String
        /// For RTC and streaming, the user (a decimal uid or an account; empty for any uid); for education, the
        /// user's UUID.
        public var user: String
    }

    /// The version prefix.
    public static let version = "007"
    /// The longest a zlib stream of a token may grow when read: a token with every service Agora defines is well
    /// under a kilobyte.
    static let inflatedLimit = 16_384

    public var appID: String
    /// When the token was made, in seconds since 1970.
    public var issuedAt: UInt32
    /// How long the whole token lives, in seconds after ``issuedAt``.
    public var lifetime: UInt32
    public var salt: UInt32
    public var services: [Service]
    /// The signature the token carries, and the bytes it signs (as read, or as made).
    let signature: Data
    let signed: Data

    /// Reads `token`, checking its form only (``verify(certificate:appID:channel:user:now:)`` checks the rest).
    public init(_ token: String) throws(TokenError) {
        guard token.utf8.count <= maximumTokenCharacters else { throw .oversized(limit: maximumTokenCharacters) }
        guard token.hasPrefix(Self.version) else { throw .wrongVersion(expected: Self.version) }
        let compressed = try decodeBase64(token.dropFirst(Self.version.count), "the body")
        guard let body = Ciphers.inflate(compressed, limit: Self.inflatedLimit) else {
            throw .malformed("the body is not a zlib stream of at most \(Self.inflatedLimit) bytes")
        }
        var reader = TokenReader(body)
        signature = Data(try reader.agoraString("the signature"))
        signed = Data(body.suffix(from: body.startIndex + reader.offset))
        appID = try Self.text(reader.agoraString("the app ID"), "the app ID")
        issuedAt = try reader.littleEndian(UInt32.self, "the issue time")
        lifetime = try reader.littleEndian(UInt32.self, "the lifetime")
        salt = try reader.littleEndian(UInt32.self, "the salt")
        let count = try reader.littleEndian(UInt16.self, "the service count")
        services = []
        for _ in 0..<count {
            services.append(try Self.readService(&reader))
        }
        try reader.requireEnd("the services")
    }

    /// The RTC service, if the token has one.
    public var rtc: Service? { services.first { $0.type == 1 } }

    /// When the right to be in `channel` ends, in seconds since 1970: the join privilege's lifetime bounded by the
    /// token's (Agora: a privilege is "limited by the token expiration time"; a privilege of 0 seconds is read as the
    /// token's own lifetime, as its builders' default). `nil` without an RTC join privilege.
    public var joinExpiry: UInt64? {
        guard let join = rtc?.privileges[Privilege.joinChannel.rawValue] else { return nil }
        let token = UInt64(issuedAt) + UInt64(lifetime)
        return join == 0 ? token : min(token, UInt64(issuedAt) + UInt64(join))
    }

    /// Checks the token as Agora's servers do for a join: signed under `certificate`, for `appID`, for `channel`,
    /// for `user` (or for any uid), with a join privilege that has not expired at `now` (seconds since 1970).
    /// Returns when the join privilege ends.
    @discardableResult
    public func verify(
        certificate: String,
        appID: String,
        channel: String,
        user: String,
        now: UInt64
    ) throws(TokenError) -> UInt64 {
        guard isSigned(withCertificate: certificate) else { throw .badSignature }
        guard self.appID == appID else { throw .wrongApp(self.appID) }
        guard let rtc else { throw .noJoinPrivilege }
        guard rtc.name == channel else { throw .wrongRoom(rtc.name) }
        guard rtc.user.isEmpty || rtc.user == "0" || rtc.user == user else { throw .wrongUser(rtc.user) }
        return try unexpiredJoin(now: now)
    }

    /// Whether the signature is the one `certificate` makes over the token's bytes (compared in constant time).
    public func isSigned(withCertificate certificate: String) -> Bool {
        let key = Self.signingKey(certificate: certificate, issuedAt: issuedAt, salt: salt)
        return Digests.isValidHMACSHA256(signature, for: signed, key: key)
    }

    /// A token for `user` in `channel`, as Agora's `RtcTokenBuilder2` makes it: an RTC service with `privileges`
    /// (lifetimes in seconds after `issuedAt`), signed under `certificate`. `user` is a decimal uid or an account;
    /// "" or "0" lets any uid join.
    public static func make(
        appID: String,
        certificate: String,
        channel: String,
        user: String,
        issuedAt: UInt32,
        lifetime: UInt32,
        privileges: [Privilege: UInt32],
        salt: UInt32 = UInt32.random(in: 1...99_999_999)
    ) throws(TokenError) -> String {
        for (field, value) in [("app ID", appID), ("channel", channel), ("user", user)] where value.utf8.count > 0xFFFF
        {
            throw .malformed("the \(field) is longer than 65,535 bytes")
        }
        var body = TokenWriter()
        body.agoraString(Array(appID.utf8))
        body.littleEndian(issuedAt)
        body.littleEndian(lifetime)
        body.littleEndian(salt)
        body.littleEndian(UInt16(1))
        body.littleEndian(UInt16(1))  // RTC
        body.agoraPrivileges(Dictionary(uniqueKeysWithValues: privileges.map { ($0.key.rawValue, $0.value) }))
        body.agoraString(Array(channel.utf8))
        body.agoraString(user == "0" ? [] : Array(user.utf8))
        let key = signingKey(certificate: certificate, issuedAt: issuedAt, salt: salt)
        let signature = Digests.hmacSHA256(Data(body.bytes), key: key)
        var packed = TokenWriter()
        packed.agoraString(Array(signature))
        packed.append(body.bytes)
        return version + Ciphers.deflate(Data(packed.bytes)).base64EncodedString()
    }

    static func signingKey(certificate: String, issuedAt: UInt32, salt: UInt32) -> Data {
        func packed(_ value: UInt32) -> Data { withUnsafeBytes(of: value.littleEndian) { Data($0) } }
        let first = Digests.hmacSHA256(Data(certificate.utf8), key: packed(issuedAt))
        return Digests.hmacSHA256(first, key: packed(salt))
    }

    static func readService(_ reader: inout TokenReader) throws(TokenError) -> Service {
        let type = try reader.littleEndian(UInt16.self, "a service's type")
        let privileges = try reader.agoraPrivileges("service \(type)'s privileges")
        var service = Service(type: type, privileges: privileges, name: "", user: "")
        switch type {
        case 1, 3:  // RTC, streaming: channel, user
            service.name = try text(reader.agoraString("service \(type)'s channel"), "a channel")
            service.user = try text(reader.agoraString("service \(type)'s user"), "a user")
        case 2, 5:  // RTM, chat: user
            service.name = try text(reader.agoraString("service \(type)'s user"), "a user")
        case 4:  // FPA: privileges only
            break
        case 7:  // education: room, user, role
            service.name = try text(reader.agoraString("service 7's room"), "a room")
            service.user = try text(reader.agoraString("service 7's user"), "a user")
            _ = try reader.littleEndian(Int16.self, "service 7's role")
        default:
            throw .malformed("unknown service type \(type)")
        }
        return service
    }

    static func text(_ bytes: [UInt8], _ what: String) throws(TokenError) -> String {
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .malformed("\(what) is not UTF-8") }
        return text
    }
}
