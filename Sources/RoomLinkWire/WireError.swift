/// A frame one side could not accept. The receiver closes the connection that sent it (a server with a `Goodbye`
/// naming the reason), and carries on serving every other.
public enum WireError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The length prefix announces more than the protocol allows.
    case frameTooLong(length: Int, maximum: Int)
    /// The body is not a valid Protocol Buffers encoding of the expected message.
    case malformed(String)
    /// The frame holds no message this version knows (an empty frame, or a newer peer's message).
    case unknownMessage
    /// A field is missing, empty, too long or out of range; `field` is its name in `docs/roomlink.proto`.
    case invalidField(field: String, problem: String)

    public var description: String {
        switch self {
        case .frameTooLong(let length, let maximum): "frame of \(length) bytes is longer than the maximum \(maximum)"
        case .malformed(let detail): "malformed frame: \(detail)"
        case .unknownMessage: "frame holds no message this protocol version knows"
        case .invalidField(let field, let problem): "field \(field) \(problem)"
        }
    }
}
