import Foundation

/// Why a token could not be read, or did not verify: each case names what was wrong, for the refusal's message.
public enum TokenError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The token does not start with its format's version (`007`, `006`, `04`).
    case wrongVersion(expected: String)
    /// The token is not what its format packs: not base64, not a zlib stream, truncated, a length past the end,
    /// bytes left over, a field out of range. The text says which.
    case malformed(String)
    /// The token is longer than any its format makes (`limit` characters).
    case oversized(limit: Int)
    /// The signature (Agora) or the seal (ZEGO) does not verify under the app's certificate or secret: signed with
    /// another key, or altered.
    case badSignature
    /// The token is another app's.
    case wrongApp(String)
    /// The token is for another channel or room.
    case wrongRoom(String)
    /// The token is for another user.
    case wrongUser(String)
    /// The token carries no privilege to join.
    case noJoinPrivilege
    /// The token, or its privilege to join, expired at `expiry` (seconds since 1970).
    case expired(at: UInt64)

    public var description: String {
        switch self {
        case .wrongVersion(let expected): "not a version \(expected) token"
        case .malformed(let what): "malformed token: \(what)"
        case .oversized(let limit): "token longer than \(limit) characters"
        case .badSignature: "token signature does not verify"
        case .wrongApp(let app): "token is for another app (\(app))"
        case .wrongRoom(let room): "token is for another room (\(room))"
        case .wrongUser(let user): "token is for another user (\(user))"
        case .noJoinPrivilege: "token carries no privilege to join"
        case .expired(let expiry): "token expired at \(expiry) (Unix seconds)"
        }
    }
}

/// The longest token any format here reads: far above what a vendor makes (a few hundred characters), and a bound on
/// what a hostile client can make the server decode.
let maximumTokenCharacters = 4_096

/// Bytes read in order, each read refusing to run past the end with the field's name.
struct TokenReader {
    private let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: some Sequence<UInt8>) { self.bytes = Array(bytes) }

    var isAtEnd: Bool { offset == bytes.count }

    mutating func bytes(_ count: Int, _ field: String) throws(TokenError) -> [UInt8] {
        guard count >= 0, bytes.count - offset >= count else { throw .malformed("\(field) runs past the end") }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    mutating func littleEndian<T: FixedWidthInteger>(_: T.Type, _ field: String) throws(TokenError) -> T {
        let raw = try bytes(MemoryLayout<T>.size, field)
        return raw.reversed().reduce(T.zero) { $0 << 8 | T(truncatingIfNeeded: $1) }
    }

    mutating func bigEndian<T: FixedWidthInteger>(_: T.Type, _ field: String) throws(TokenError) -> T {
        let raw = try bytes(MemoryLayout<T>.size, field)
        return raw.reduce(T.zero) { $0 << 8 | T(truncatingIfNeeded: $1) }
    }

    /// Agora's string: a little-endian 16-bit length, then the bytes.
    mutating func agoraString(_ field: String) throws(TokenError) -> [UInt8] {
        try bytes(Int(littleEndian(UInt16.self, field)), field)
    }

    /// Agora's map of privileges: a little-endian 16-bit count, then each key (16 bits) and value (32 bits).
    mutating func agoraPrivileges(_ field: String) throws(TokenError) -> [UInt16: UInt32] {
        let count = try littleEndian(UInt16.self, field)
        var privileges: [UInt16: UInt32] = [:]
        for _ in 0..<count {
            let key = try littleEndian(UInt16.self, field)
            privileges[key] = try littleEndian(UInt32.self, field)
        }
        return privileges
    }

    func requireEnd(_ what: String) throws(TokenError) {
        guard isAtEnd else { throw .malformed("\(bytes.count - offset) bytes after \(what)") }
    }
}

/// Bytes written in order, as `TokenReader` reads them.
struct TokenWriter {
    private(set) var bytes: [UInt8] = []

    mutating func append(_ data: some Sequence<UInt8>) { bytes.append(contentsOf: data) }

    mutating func littleEndian<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func bigEndian<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func agoraString(_ data: some Collection<UInt8>) {
        littleEndian(UInt16(data.count))
        append(data)
    }

    /// Privileges in key order, as Agora's builders pack them.
    mutating func agoraPrivileges(_ privileges: [UInt16: UInt32]) {
        littleEndian(UInt16(privileges.count))
        for key in privileges.keys.sorted() {
            littleEndian(key)
            littleEndian(privileges[key]!)
        }
    }
}

/// Standard base64 as the vendors write it, refusing anything else by name.
func decodeBase64(_ text: Substring, _ what: String) throws(TokenError) -> Data {
    guard let data = Data(base64Encoded: String(text)) else { throw .malformed("\(what) is not base64") }
    return data
}
