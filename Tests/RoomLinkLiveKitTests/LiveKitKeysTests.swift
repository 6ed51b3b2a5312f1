import Foundation
import Testing

@testable import RoomLinkLiveKit

/// LiveKit's access tokens, as its server checks them: HS256 by the secret of the key named in `iss`, within
/// `nbf`/`exp` give or take a minute. (`Tests/python/test_livekit.py` checks the tokens `livekit-api` mints.)
@Suite
struct LiveKitKeysTests {
    static let keys = LiveKitKeys(["devkey": "a-secret-long-enough-for-hmac-sha256", "other": "another-secret"])
    static let now: Int64 = 1_800_000_000

    static func token(
        key: String = "devkey",
        secret: String = "a-secret-long-enough-for-hmac-sha256",
        notBefore: Int64? = now - 10,
        expires: Int64 = now + 3_600,
        room: String? = "r1"
    ) -> String {
        LiveKitAccessToken(
            apiKey: key,
            identity: "alice",
            name: "Alice",
            notBefore: notBefore,
            expires: expires,
            video: .init(roomJoin: true, room: room)
        ).signed(with: secret)
    }

    @Test func aTokenSignedByAKeysSecretIsAccepted() throws {
        let token = try Self.keys.verify(Self.token(), at: Self.now)
        #expect(token.identity == "alice")
        #expect(token.name == "Alice")
        #expect(token.video == .init(roomJoin: true, room: "r1"))
        // Any of several keys.
        #expect(throws: Never.self) {
            try Self.keys.verify(Self.token(key: "other", secret: "another-secret"), at: Self.now)
        }
    }

    @Test func aWrongSecretAnUnknownKeyOrATamperedTokenIsRefused() {
        #expect(throws: LiveKitTokenError.invalidSignature) {
            try Self.keys.verify(Self.token(secret: "wrong"), at: Self.now)
        }
        #expect(throws: LiveKitTokenError.unknownKey("nobody")) {
            try Self.keys.verify(Self.token(key: "nobody"), at: Self.now)
        }
        // The claims changed after signing (another room): the signature no longer matches.
        let parts = Self.token().split(separator: ".")
        let other = Self.token(room: "r2").split(separator: ".")
        #expect(throws: LiveKitTokenError.invalidSignature) {
            try Self.keys.verify("\(parts[0]).\(other[1]).\(parts[2])", at: Self.now)
        }
    }

    @Test func validityHasAMinutesLeewayEachWay() {
        let expiring = Self.token(expires: Self.now)
        #expect(throws: Never.self) { try Self.keys.verify(expiring, at: Self.now + 59) }
        #expect(throws: LiveKitTokenError.expired) { try Self.keys.verify(expiring, at: Self.now + 60) }
        let early = Self.token(notBefore: Self.now + 100)
        #expect(throws: LiveKitTokenError.notYetValid) { try Self.keys.verify(early, at: Self.now) }
        #expect(throws: Never.self) { try Self.keys.verify(early, at: Self.now + 40) }
    }

    @Test func malformedTokensAndOtherAlgorithmsAreRefusedByName() {
        for text in ["", "a.b", "a.b.c.d", "!!.??.**"] {
            #expect(throws: LiveKitTokenError.self) { try Self.keys.verify(text, at: Self.now) }
        }
        // "none": an unsigned token must never pass.
        let header = LiveKitAccessToken.base64URL(Data(#"{"alg":"none","typ":"JWT"}"#.utf8))
        let claims = Self.token().split(separator: ".")[1]
        #expect(throws: LiveKitTokenError.unsupportedAlgorithm("none")) {
            try Self.keys.verify("\(header).\(claims).", at: Self.now)
        }
    }

    @Test func keysAreReadFromPairsAndBadPairsAreNamed() throws {
        #expect(try LiveKitKeys(parsing: ["k:s:with:colons"]).secrets == ["k": "s:with:colons"])
        #expect(throws: LiveKitKeysError.notAPair("k")) { try LiveKitKeys(parsing: ["k"]) }
        #expect(throws: LiveKitKeysError.notAPair(":s")) { try LiveKitKeys(parsing: [":s"]) }
        #expect(throws: LiveKitKeysError.duplicateKey("k")) { try LiveKitKeys(parsing: ["k:a", "k:b"]) }
        #expect(throws: LiveKitKeysError.none) { try LiveKitKeys(parsing: []) }
    }

    @Test func webhookURLsAreReadAndBadOnesNamedNeverTrapped() throws {
        let url = try WebhookURL(parsing: "http://127.0.0.1:8080/hook?x=1")
        #expect(url.host == "127.0.0.1" && url.port == 8080 && url.path == "/hook?x=1")
        #expect(try WebhookURL(parsing: "http://example.com").port == 80)
        // HTTPS: port 443 by default, and the Host header leaves it out as it leaves 80 out of http://.
        let secure = try WebhookURL(parsing: "https://hooks.example.com/lk")
        #expect(secure.isSecure && secure.port == 443 && secure.path == "/lk")
        #expect(secure.description == "https://hooks.example.com/lk")
        #expect(try WebhookURL(parsing: "HTTPS://[::1]:8443/").description == "https://[::1]:8443/")
        #expect(try !WebhookURL(parsing: "http://h:443/x").isSecure)
        for bad in ["ftp://h/x", "wss://h/x", "h:80", "http://:80/x", "https://h:99999/x", "http://h:0/x", ""] {
            #expect(throws: LiveKitKeysError.notAURL(bad)) { try WebhookURL(parsing: bad) }
        }
    }
}
