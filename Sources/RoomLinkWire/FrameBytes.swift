import SwiftProtobuf

/// A whole frame as SwiftProtobuf encodes its body into it: the length prefix's four bytes first, then the body,
/// encoded in place. SwiftProtobuf sizes the message, asks its bytes type for that many bytes and encodes into them;
/// this type allocates the prefix with them and shows SwiftProtobuf only the body's part — so a frame is one
/// allocation and one pass, not a body encoded and then copied behind its prefix into a second array.
struct FrameBytes: SwiftProtobufContiguousBytes {
    /// The frame: prefix and body.
    private(set) var bytes: [UInt8]

    /// A frame whose body is `count` bytes of `repeating`, its prefix already announcing them.
    init(repeating: UInt8, count: Int) {
        bytes = [UInt8](repeating: repeating, count: WireProtocol.headerLength + count)
        Self.writePrefix(count, into: &bytes)
    }

    /// A frame whose body is `sequence`.
    init<S: Sequence>(_ sequence: S) where S.Element == UInt8 {
        bytes = [UInt8](repeating: 0, count: WireProtocol.headerLength)
        bytes.append(contentsOf: sequence)
        Self.writePrefix(bytes.count - WireProtocol.headerLength, into: &bytes)
    }

    /// The body's length (what SwiftProtobuf sees).
    var count: Int { bytes.count - WireProtocol.headerLength }

    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[WireProtocol.headerLength...])) }
    }

    mutating func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeMutableBytes {
            try body(UnsafeMutableRawBufferPointer(rebasing: $0[WireProtocol.headerLength...]))
        }
    }

    /// The 4-byte big-endian prefix of a body `length` bytes long.
    private static func writePrefix(_ length: Int, into bytes: inout [UInt8]) {
        let value = UInt32(length)
        bytes[0] = UInt8(truncatingIfNeeded: value >> 24)
        bytes[1] = UInt8(truncatingIfNeeded: value >> 16)
        bytes[2] = UInt8(truncatingIfNeeded: value >> 8)
        bytes[3] = UInt8(truncatingIfNeeded: value)
    }
}

extension SwiftProtobuf.Message {
    /// The message as one frame, its length prefix first.
    var framed: [UInt8] {
        // Encoding a message built from valid Swift values cannot fail (no required fields, no Any); an empty body
        // stands in should it ever.
        ((try? serializedBytes() as FrameBytes) ?? FrameBytes(repeating: 0, count: 0)).bytes
    }
}
