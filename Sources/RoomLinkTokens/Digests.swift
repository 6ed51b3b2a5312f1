internal import CLibcrypto
package import Foundation

/// The digests the vendors' tokens and protocols use, from the system's libcrypto (OpenSSL): HMAC-SHA256 signs and
/// checks LiveKit's access tokens and Agora's (and, with HMAC-SHA1, Agora's notifications), SHA-256 names a webhook's body, SHA-1 answers a WebSocket handshake
/// (RFC 6455 §4.2.2).
///
/// libcrypto rather than swift-crypto: on Linux swift-crypto compiles its own copy of BoringSSL into every build —
/// about a minute of two cores for each of CI's three builds (debug, ThreadSanitizer, CMake), for a few functions
/// the system library has.
package enum Digests {
    /// SHA-1 of `data` (20 bytes).
    package static func sha1(_ data: Data) -> Data {
        digest(data, EVP_sha1())
    }

    /// SHA-256 of `data` (32 bytes).
    package static func sha256(_ data: Data) -> Data {
        digest(data, EVP_sha256())
    }

    /// HMAC-SHA256 of `data` under `key` (32 bytes).
    package static func hmacSHA256(_ data: Data, key: Data) -> Data {
        hmac(data, key: key, EVP_sha256())
    }

    /// HMAC-SHA1 of `data` under `key` (20 bytes): Agora's `Agora-Signature` on a notification's body.
    package static func hmacSHA1(_ data: Data, key: Data) -> Data {
        hmac(data, key: key, EVP_sha1())
    }

    /// `data` as lowercase hexadecimal.
    package static func hex(_ data: Data) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(data.count * 2)
        for byte in data {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static func hmac(_ data: Data, key: Data, _ type: OpaquePointer?) -> Data {
        var code = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let done = withBytes(of: key) { key, keyCount in
            withBytes(of: data) { data, dataCount in
                // A key's length beyond Int32 is not a secret anyone types; HMAC takes an int.
                HMAC(type, key, Int32(clamping: keyCount), data, dataCount, &code, &length)
            }
        }
        // HMAC fails only when out of memory or given an unknown digest: neither is a caller's input.
        precondition(done != nil, "libcrypto's HMAC failed")
        return Data(code[..<Int(length)])
    }

    /// Whether `code` is the HMAC-SHA256 of `data` under `key`, compared in constant time (a forger learns nothing
    /// from how long a wrong code took to refuse).
    package static func isValidHMACSHA256(_ code: Data, for data: Data, key: Data) -> Bool {
        constantTimeEqual(code, hmacSHA256(data, key: key))
    }

    /// Whether `a` and `b` hold the same bytes, compared in constant time once their lengths agree.
    package static func constantTimeEqual(_ a: Data, _ b: Data) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { a in
            b.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 }
        }
    }

    /// Calls `body` with `data`'s bytes and their count: never a null pointer, even for no bytes (libcrypto's
    /// functions are not all documented to take one with a zero length).
    static func withBytes<R>(of data: Data, _ body: (UnsafePointer<UInt8>, Int) -> R) -> R {
        if data.isEmpty {
            var none: UInt8 = 0
            return body(&none, 0)
        }
        return data.withUnsafeBytes { body($0.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.count) }
    }

    private static func digest(_ data: Data, _ type: OpaquePointer?) -> Data {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let done = withBytes(of: data) { data, count in
            EVP_Digest(data, count, &digest, &length, type, nil)
        }
        precondition(done == 1, "libcrypto's digest failed")
        return Data(digest[..<Int(length)])
    }
}
