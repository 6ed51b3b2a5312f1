import Foundation
public import RoomLinkEngine

/// Makes a vendor's tokens as an app's token server does: Agora's AccessToken2 (or the older AccessToken) with the
/// join privilege, or ZEGO's `token04` naming the room. What `roomlink token make` prints, and what clients mint for
/// themselves with `run|load --app-id`.
public struct VendorTokenMinter: Sendable, Hashable {
    /// A vendor's app and its secret.
    public enum Key: Sendable, Hashable {
        /// Agora: the app ID and the app certificate; `legacy` makes AccessToken (`006`) instead of AccessToken2.
        case agora(appID: String, certificate: String, legacy: Bool = false)
        /// ZEGO: the numeric app ID and the 32-character server secret.
        case zego(appID: UInt32, secret: String)
    }

    public var key: Key

    public init(_ key: Key) {
        self.key = key
    }

    /// A token for `user` in `room`, made at `issuedAt` (Unix seconds) and good for `lifetime` seconds; for Agora
    /// the join privilege lasts `privilegeLifetime` (default: the token's lifetime). A ZEGO token without a room only
    /// authenticates the user.
    ///
    /// - Throws: ``TokenError`` when a field cannot go into the token (longer than the format holds).
    public func token(
        user: String,
        room: String?,
        issuedAt: UInt32,
        lifetime: UInt32,
        privilegeLifetime: UInt32? = nil
    ) throws(TokenError) -> String {
        switch key {
        case .agora(let appID, let certificate, let legacy):
            let channel = room ?? ""
            let privilege = privilegeLifetime ?? lifetime
            if legacy {
                return try AgoraAccessToken.make(
                    appID: appID,
                    certificate: certificate,
                    channel: channel,
                    user: user,
                    timestamp: issuedAt &+ lifetime,
                    privileges: [.joinChannel: issuedAt &+ privilege]
                )
            }
            return try AgoraAccessToken2.make(
                appID: appID,
                certificate: certificate,
                channel: channel,
                user: user,
                issuedAt: issuedAt,
                lifetime: lifetime,
                privileges: [.joinChannel: privilege]
            )
        case .zego(let appID, let secret):
            let claims = ZegoToken04.Claims(
                appID: appID,
                userID: user,
                nonce: Int64(Int32.random(in: .min ... .max)),
                created: Int64(issuedAt),
                expire: Int64(issuedAt) + Int64(lifetime),
                payload: room.map { ZegoToken04.roomPayload($0) } ?? ""
            )
            return try ZegoToken04.make(claims: claims, secret: secret)
        }
    }

    /// The verifier that checks this minter's tokens as the vendor's cloud does.
    public var verifier: any TokenVerifier {
        switch key {
        case .agora(let appID, let certificate, _): AgoraTokenVerifier(appID: appID, certificate: certificate)
        case .zego(let appID, let secret): ZegoTokenVerifier(appID: appID, secret: secret)
        }
    }
}

/// Clients that mint their own tokens with the project's keys (`run|load --app-id … --app-certificate …` or
/// `--server-secret …`): each token is made at the client's clock's Unix time and good for ``lifetime``. Answers at
/// once (on the client's loop, a step later): minting costs microseconds, and no server is asked.
public struct MintedTokenSource: TokenSource {
    public let minter: VendorTokenMinter
    /// How long each token is good for.
    public let lifetime: Duration
    /// The Unix time (seconds) at the clients' clock's zero: as the server's `VerifiedTokens.unixTimeAtZero`.
    public let unixTimeAtZero: Int64

    public init(minter: VendorTokenMinter, lifetime: Duration, unixTimeAtZero: Int64) {
        self.minter = minter
        self.lifetime = lifetime
        self.unixTimeAtZero = unixTimeAtZero
    }

    public func fetchToken(
        for request: TokenRequest,
        on loop: any RuntimeLoop,
        completion: @escaping @Sendable (Result<String, TokenFetchFailure>) -> Void
    ) {
        let now = unixTimeAtZero + loop.now.nanoseconds / 1_000_000_000
        let seconds = UInt32(clamping: max(1, lifetime.components.seconds))
        do {
            let token = try minter.token(
                user: request.userID,
                room: request.roomID,
                issuedAt: UInt32(clamping: now),
                lifetime: seconds
            )
            completion(.success(token))
        } catch {
            completion(.failure(TokenFetchFailure(.unavailable, error.description)))
        }
    }
}
