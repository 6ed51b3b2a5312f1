/// Splits a byte stream into frame bodies: feed it what a socket read, take the complete frames out.
///
/// It checks each length prefix as soon as its 4 bytes arrive, so a frame over ``WireProtocol/maximumFrameLength``
/// fails before its body is buffered; it never holds more than one incomplete frame. (The libevent transport reads
/// frames straight from its input buffer instead, with the same checks.)
public struct FrameReader: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0

    public init() {}

    /// Bytes received and not yet taken as frames.
    public var bufferedCount: Int { buffer.count - start }

    /// Appends bytes read from the stream.
    public mutating func append(_ bytes: some Sequence<UInt8>) {
        if start > 0, start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete frame's body, or `nil` until one has fully arrived.
    ///
    /// - Throws: ``WireError/frameTooLong(length:maximum:)`` as soon as a prefix announces too long a body; the
    ///   stream cannot be trusted after it.
    public mutating func next() throws(WireError) -> [UInt8]? {
        guard bufferedCount >= WireProtocol.headerLength else { return nil }
        let length = try WireProtocol.bodyLength(
            prefix: buffer[start],
            buffer[start + 1],
            buffer[start + 2],
            buffer[start + 3]
        )
        guard bufferedCount >= WireProtocol.headerLength + length else { return nil }
        let bodyStart = start + WireProtocol.headerLength
        let body = Array(buffer[bodyStart..<bodyStart + length])
        start = bodyStart + length
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 4096, start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        return body
    }
}
