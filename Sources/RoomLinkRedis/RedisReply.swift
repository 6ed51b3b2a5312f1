import CHiredis

/// A reply of Redis, copied out of hiredis's reply (which hiredis frees when its callback returns).
enum RedisReply: Sendable, Equatable {
    case string(String)
    case integer(Int64)
    case array([RedisReply])
    case null
    case status(String)
    case error(String)

    init(_ reply: UnsafePointer<redisReply>) {
        let value = reply.pointee
        switch value.type {
        case REDIS_REPLY_STRING: self = .string(Self.text(value))
        case REDIS_REPLY_STATUS: self = .status(Self.text(value))
        case REDIS_REPLY_ERROR: self = .error(Self.text(value))
        case REDIS_REPLY_INTEGER: self = .integer(Int64(value.integer))
        case REDIS_REPLY_ARRAY:
            var elements: [RedisReply] = []
            elements.reserveCapacity(value.elements)
            for index in 0..<value.elements {
                if let element = value.element[index] { elements.append(RedisReply(element)) }
            }
            self = .array(elements)
        default: self = .null
        }
    }

    private static func text(_ reply: redisReply) -> String {
        guard let bytes = reply.str else { return "" }
        return String(
            decoding: UnsafeRawBufferPointer(start: bytes, count: reply.len),
            as: UTF8.self
        )
    }

    /// The reply as text: a bulk string, a status or an integer.
    var text: String? {
        switch self {
        case .string(let text), .status(let text): text
        case .integer(let value): String(value)
        default: nil
        }
    }

    /// The reply as an integer: an integer, or a bulk string holding one.
    var integer: Int64? {
        switch self {
        case .integer(let value): value
        case .string(let text): Int64(text)
        default: nil
        }
    }

    var elements: [RedisReply]? {
        if case .array(let elements) = self { elements } else { nil }
    }
}
