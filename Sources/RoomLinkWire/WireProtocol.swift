/// RoomLink's wire protocol: what crosses a TCP connection between a client and `roomlink serve`.
///
/// Each frame is a 4-byte big-endian length and that many bytes of one Protocol Buffers message: a `ClientFrame` from
/// the client, a `ServerFrame` from the server, as `docs/roomlink.proto` defines them (the source of truth; the Swift
/// code generated from it is committed). `docs/protocol.md` tells the conversation: hello, logins, heartbeats,
/// presence, kicks and goodbyes.
public enum WireProtocol {
    /// The protocol version this build speaks, sent in both hellos.
    public static let version: UInt32 = 1
    /// The longest frame body either side accepts, in bytes: a longer length prefix closes the connection before a
    /// byte of the body is read.
    public static let maximumFrameLength = 65_536
    /// The length prefix: 4 bytes, big-endian.
    public static let headerLength = 4
    /// The longest room ID, user ID or client ID a frame may carry, in UTF-8 bytes.
    public static let maximumIdentifierLength = 256
    /// The longest token a frame may carry, in UTF-8 bytes.
    public static let maximumTokenLength = 4_096

    /// The body length a frame's 4-byte prefix announces, checked against ``maximumFrameLength``.
    ///
    /// - Throws: ``WireError/frameTooLong(length:maximum:)``.
    public static func bodyLength(prefix b0: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8) throws(WireError) -> Int {
        let length = Int(b0) << 24 | Int(b1) << 16 | Int(b2) << 8 | Int(b3)
        guard length <= maximumFrameLength else { throw .frameTooLong(length: length, maximum: maximumFrameLength) }
        return length
    }
}
