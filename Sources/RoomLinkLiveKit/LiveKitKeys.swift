import Foundation
public import RoomLinkNetwork
import RoomLinkTokens

/// The API keys a LiveKit-protocol server accepts, each with its secret (`roomlink serve --keys KEY:SECRET`, several
/// allowed, as livekit-server's `keys:`): an access token is valid when signed by the secret of the key it names.
public struct LiveKitKeys: Sendable, Equatable {
    /// Each API key's secret.
    public let secrets: [String: String]

    /// How far a token's `nbf` and `exp` may be off the server's clock: one minute, the leeway of LiveKit's token
    /// verifiers (go-jose's default, and `livekit-api`'s `TokenVerifier`).
    public static let leeway: Int64 = 60

    public init(_ secrets: [String: String]) {
        self.secrets = secrets
    }

    /// Reads `KEY:SECRET` pairs.
    ///
    /// - Throws: ``LiveKitKeysError`` naming the pair without a colon, with an empty key or secret, or with a key
    ///   given twice.
    public init(parsing pairs: [String]) throws(LiveKitKeysError) {
        var secrets: [String: String] = [:]
        for pair in pairs {
            guard let colon = pair.firstIndex(of: ":") else { throw .notAPair(pair) }
            let key = String(pair[..<colon])
            let secret = String(pair[pair.index(after: colon)...])
            guard !key.isEmpty, !secret.isEmpty else { throw .notAPair(pair) }
            guard secrets[key] == nil else { throw .duplicateKey(key) }
            secrets[key] = secret
        }
        guard !secrets.isEmpty else { throw .none }
        self.secrets = secrets
    }

    /// Checks `token` at UNIX time `now`: its form, algorithm (HS256), key, signature and validity (with
    /// ``leeway``). What it grants is the caller's to check.
    public func verify(_ token: String, at now: Int64) throws(LiveKitTokenError) -> LiveKitAccessToken {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("\(parts.count) parts, not 3") }
        guard let headerData = LiveKitAccessToken.data(base64URL: parts[0]),
            let header = try? JSONDecoder().decode(Header.self, from: headerData)
        else { throw .malformed("the header is not base64url JSON") }
        guard header.alg == "HS256" else { throw .unsupportedAlgorithm(header.alg ?? "none") }
        guard let payload = LiveKitAccessToken.data(base64URL: parts[1]) else {
            throw .malformed("the claims are not base64url")
        }
        let claims: LiveKitAccessToken.Claims
        do {
            claims = try JSONDecoder().decode(LiveKitAccessToken.Claims.self, from: payload)
        } catch {
            throw .malformed("the claims are not LiveKit's")
        }
        guard let key = claims.iss, !key.isEmpty else { throw .malformed("no issuer (API key)") }
        guard let secret = secrets[key] else { throw .unknownKey(key) }
        guard let signature = LiveKitAccessToken.data(base64URL: parts[2]),
            Digests.isValidHMACSHA256(
                signature,
                for: Data("\(parts[0]).\(parts[1])".utf8),
                key: Data(secret.utf8)
            )
        else { throw .invalidSignature }
        guard let expires = claims.exp else { throw .malformed("no expiry (exp)") }
        guard now < expires + Self.leeway else { throw .expired }
        if let notBefore = claims.nbf, now + Self.leeway < notBefore { throw .notYetValid }
        return LiveKitAccessToken(
            apiKey: key,
            identity: claims.sub ?? "",
            name: claims.name,
            notBefore: claims.nbf,
            expires: expires,
            video: claims.video ?? .init(),
            sha256: claims.sha256
        )
    }

    private struct Header: Decodable {
        var alg: String?
    }
}

/// A `--keys` value RoomLink cannot use.
public enum LiveKitKeysError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not `KEY:SECRET`, or an empty key or secret.
    case notAPair(String)
    /// A key given twice.
    case duplicateKey(String)
    /// No key at all.
    case none
    /// A webhook URL that is not `http://` or `https://HOST[:PORT][/PATH]`.
    case notAURL(String)
    /// A key named to sign with that is not one of the keys.
    case unknownKey(String)
    /// TLS for `https://` webhooks could not be set up (the authorities' file unreadable).
    case webhookTLS(TLSError)

    public var description: String {
        switch self {
        case .notAPair(let pair): "'\(pair)' is not KEY:SECRET"
        case .duplicateKey(let key): "API key '\(key)' is given twice"
        case .none: "no API key"
        case .notAURL(let text): "'\(text)' is not an http:// or https://HOST[:PORT][/PATH] URL"
        case .unknownKey(let key): "API key '\(key)' is not one of --keys"
        case .webhookTLS(let error): "the webhooks' TLS: \(error)"
        }
    }
}
