public import RoomLinkEngine

/// Agora's tokens checked for a join as Agora's cloud checks them: an AccessToken2 (`007`) or the older AccessToken
/// (`006`), signed with the project's app certificate, for the app, the channel and the user, its join privilege not
/// expired. What `serve --dialect agora --app-id ID --app-certificate CERT` checks.
public struct AgoraTokenVerifier: TokenVerifier {
    public let appID: String
    public let certificate: String

    public init(appID: String, certificate: String) {
        self.appID = appID
        self.certificate = certificate
    }

    public func verify(_ token: String?, userID: String, roomID: String, unixTime: Int64) -> TokenVerdict {
        guard let token, !token.isEmpty else { return .refused(reason: "no token") }
        let now = UInt64(clamping: unixTime)
        do throws(TokenError) {
            let parsed: any AgoraJoinToken =
                token.hasPrefix(AgoraAccessToken.version) ? try AgoraAccessToken(token) : try AgoraAccessToken2(token)
            let expiry = try parsed.verify(
                certificate: certificate,
                appID: appID,
                channel: roomID,
                user: userID,
                now: now
            )
            return .accepted(expiresAt: Int64(clamping: expiry))
        } catch {
            return .refused(reason: error.description)
        }
    }
}

/// What Agora's two token formats share: a join privilege with its expiry, checked for a user joining a channel.
public protocol AgoraJoinToken: Sendable {
    /// When the join privilege expires (Unix seconds), or `nil` without one.
    var joinExpiry: UInt64? { get }

    /// Checks the token for `user` joining `channel` of app `appID` at Unix time `now`, signed with `certificate`;
    /// returns when its join privilege expires.
    func verify(
        certificate: String,
        appID: String,
        channel: String,
        user: String,
        now: UInt64
    ) throws(TokenError)
        -> UInt64
}

extension AgoraJoinToken {
    /// The join privilege's expiry, if it has one and it is after `now`.
    func unexpiredJoin(now: UInt64) throws(TokenError) -> UInt64 {
        guard let expiry = joinExpiry else { throw .noJoinPrivilege }
        guard now < expiry else { throw .expired(at: expiry) }
        return expiry
    }
}

/// ZEGO's token04 checked for a login as ZEGO's cloud checks it: sealed with the project's server secret, for the
/// app and the user, not expired, and — when its payload names a room — for the room, with the privilege to log in.
/// What `serve --dialect zego --app-id N --server-secret S` checks.
public struct ZegoTokenVerifier: TokenVerifier {
    public let appID: UInt32
    public let secret: String

    public init(appID: UInt32, secret: String) {
        self.appID = appID
        self.secret = secret
    }

    public func verify(_ token: String?, userID: String, roomID: String, unixTime: Int64) -> TokenVerdict {
        guard let token, !token.isEmpty else { return .refused(reason: "no token") }
        do throws(TokenError) {
            let expiry = try ZegoToken04(token).verify(
                secret: secret,
                appID: appID,
                user: userID,
                room: roomID,
                now: unixTime
            )
            return .accepted(expiresAt: expiry)
        } catch {
            return .refused(reason: error.description)
        }
    }
}
