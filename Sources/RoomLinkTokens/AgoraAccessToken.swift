import Foundation

/// Agora's older AccessToken (`006…`), which Agora's servers still take: read, checked against an app's certificate,
/// and made.
///
/// The format, from Agora's own builders (AgoraIO/Tools, `DynamicKey/AgoraDynamicKey`, `AccessToken`): `006`, the
/// 32-character app ID, then the base64 of the signature (an Agora string), the CRC-32s of the channel and of the user,
/// and the signed message (an Agora string: a salt, a time stamp, and each privilege with the Unix time it expires
/// at, 0 for never). The signature is HMAC-SHA256, under the certificate, of the app ID, the channel, the user and
/// the message; the channel and the user are not in the token, so it is checked against the ones a join names.
public struct AgoraAccessToken: AgoraJoinToken, Sendable, Hashable {
    /// The version prefix.
    public static let version = "006"
    static let appIDCharacters = 32

    public var appID: String
    public var salt: UInt32
    /// The message's time stamp: the builders set it a day after the token is made, and Agora's servers take the
    /// token until then.
    public var timestamp: UInt32
    /// Each privilege's expiry (Unix seconds, 0 for never), by its number (1: join the channel).
    public var privileges: [UInt16: UInt32]
    let signature: Data
    let channelCRC: UInt32
    let userCRC: UInt32
    let message: Data

    /// Reads `token`, checking its form only (``verify(certificate:appID:channel:user:now:)`` checks the rest).
    public init(_ token: String) throws(TokenError) {
        guard token.utf8.count <= maximumTokenCharacters else { throw .oversized(limit: maximumTokenCharacters) }
        guard token.hasPrefix(Self.version) else { throw .wrongVersion(expected: Self.version) }
        let rest = token.dropFirst(Self.version.count)
        guard rest.count > Self.appIDCharacters else { throw .malformed("shorter than its app ID") }
        appID = String(rest.prefix(Self.appIDCharacters))
        var reader = TokenReader(try decodeBase64(rest.dropFirst(Self.appIDCharacters), "the body"))
        signature = Data(try reader.agoraString("the signature"))
        channelCRC = try reader.littleEndian(UInt32.self, "the channel's CRC")
        userCRC = try reader.littleEndian(UInt32.self, "the user's CRC")
        message = Data(try reader.agoraString("the message"))
        try reader.requireEnd("the message")
        var fields = TokenReader(message)
        salt = try fields.littleEndian(UInt32.self, "the salt")
        timestamp = try fields.littleEndian(UInt32.self, "the time stamp")
        privileges = try fields.agoraPrivileges("the privileges")
        try fields.requireEnd("the privileges")
    }

    /// When the right to join ends (Unix seconds): the join privilege's expiry, bounded by the time stamp; `nil`
    /// without a join privilege.
    public var joinExpiry: UInt64? {
        guard let join = privileges[AgoraAccessToken2.Privilege.joinChannel.rawValue] else { return nil }
        return join == 0 ? UInt64(timestamp) : min(UInt64(timestamp), UInt64(join))
    }

    /// Checks the token as Agora's servers do for a join of `user` (a decimal uid or an account) to `channel`:
    /// signed under `certificate` for `appID`, that channel and that user (or any uid, for a token made for uid 0),
    /// with a join privilege that has not expired at `now`. Returns when the join privilege ends.
    @discardableResult
    public func verify(
        certificate: String,
        appID: String,
        channel: String,
        user: String,
        now: UInt64
    ) throws(TokenError) -> UInt64 {
        guard self.appID == appID else { throw .wrongApp(self.appID) }
        guard channelCRC == Ciphers.crc32(Data(channel.utf8)) else { throw .wrongRoom(channel) }
        let tokenUser = userCRC == Ciphers.crc32(Data()) ? "" : user
        guard tokenUser.isEmpty || userCRC == Ciphers.crc32(Data(user.utf8)) else { throw .wrongUser(user) }
        let signed = Data((appID + channel + tokenUser).utf8) + message
        guard Digests.isValidHMACSHA256(signature, for: signed, key: Data(certificate.utf8)) else {
            throw .badSignature
        }
        return try unexpiredJoin(now: now)
    }

    /// A token as Agora's `RtcTokenBuilder` makes it: `privileges` each expiring at a Unix time (0 for never), the
    /// time stamp `timestamp` (the builders' is a day after now). `user` "" or "0" lets any uid join.
    public static func make(
        appID: String,
        certificate: String,
        channel: String,
        user: String,
        timestamp: UInt32,
        privileges: [AgoraAccessToken2.Privilege: UInt32],
        salt: UInt32 = UInt32.random(in: 1...99_999_999)
    ) throws(TokenError) -> String {
        guard appID.utf8.count == appIDCharacters else { throw .malformed("an app ID is 32 characters") }
        let user = user == "0" ? "" : user
        var message = TokenWriter()
        message.littleEndian(salt)
        message.littleEndian(timestamp)
        message.agoraPrivileges(Dictionary(uniqueKeysWithValues: privileges.map { ($0.key.rawValue, $0.value) }))
        let signed = Data((appID + channel + user).utf8) + Data(message.bytes)
        let signature = Digests.hmacSHA256(signed, key: Data(certificate.utf8))
        var content = TokenWriter()
        content.agoraString(Array(signature))
        content.littleEndian(Ciphers.crc32(Data(channel.utf8)))
        content.littleEndian(Ciphers.crc32(Data(user.utf8)))
        content.agoraString(message.bytes)
        return version + appID + Data(content.bytes).base64EncodedString()
    }
}
