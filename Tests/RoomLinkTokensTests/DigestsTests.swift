import Foundation
import RoomLinkTokens
import Testing

/// The digests the vendors' tokens and LiveKit's protocols use, from libcrypto, against the published test vectors:
/// FIPS 180's for SHA-1 and SHA-256, RFC 4231's for HMAC-SHA256 (a short key, and a key longer than the hash's
/// block), RFC 6455's handshake.
@Suite
struct DigestsTests {
    static func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

    @Test func sha1AndSHA256MatchFIPS180() {
        #expect(Self.hex(Digests.sha1(Data("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(
            Self.hex(Digests.sha256(Data("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        )
        #expect(
            Self.hex(Digests.sha256(Data())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "no bytes at all"
        )
    }

    @Test func hmacSHA256MatchesRFC4231() {
        let short = Digests.hmacSHA256(Data("what do ya want for nothing?".utf8), key: Data("Jefe".utf8))
        #expect(Self.hex(short) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        let long = Digests.hmacSHA256(
            Data("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
            key: Data(repeating: 0xaa, count: 131)
        )
        #expect(Self.hex(long) == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        #expect(Digests.hmacSHA256(Data(), key: Data()).count == 32, "an empty key and message are a MAC too")
    }

    @Test func aCodeIsValidOnlyWhenItIsTheMAC() {
        let data = Data("header.payload".utf8)
        let key = Data("secret".utf8)
        let code = Digests.hmacSHA256(data, key: key)
        #expect(Digests.isValidHMACSHA256(code, for: data, key: key))
        var flipped = code
        flipped[flipped.startIndex + 31] ^= 1
        #expect(!Digests.isValidHMACSHA256(flipped, for: data, key: key))
        #expect(!Digests.isValidHMACSHA256(code.prefix(16), for: data, key: key), "a truncated code")
        #expect(!Digests.isValidHMACSHA256(Data(), for: data, key: key))
        #expect(!Digests.isValidHMACSHA256(code, for: data, key: Data("other".utf8)))
    }

    /// RFC 6455 §1.3's example: the accept key a server answers `dGhlIHNhbXBsZSBub25jZQ==` with.
    @Test func theWebSocketAcceptKeyMatchesRFC6455() {
        let accept = Digests.sha1(Data(("dGhlIHNhbXBsZSBub25jZQ==" + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))
        #expect(accept.base64EncodedString() == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }
}
