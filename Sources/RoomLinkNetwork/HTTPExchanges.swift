internal import CLibevent
import RoomLinkRuntime

/// Who takes libevent's answers to the HTTP requests it made (a token source's loop, a callback receiver): found by
/// number, not by pointer, so that an answer that comes after its owner has gone finds nothing and does nothing.
protocol HTTPExchangeOwner: AnyObject, Sendable {
    /// libevent's error callback for request `id`, before its answer callback.
    func failed(_ id: UInt64, error: evhttp_request_error)
    /// The answer to request `id` (nil or status 0: none came).
    func answered(_ id: UInt64, request: OpaquePointer?)
}

/// The owners of HTTP requests in flight, by number: a request's callback argument is its owner's number and its own
/// (`tag(_:_:)`), 24 and 40 bits.
enum HTTPExchanges {
    private static let table = LockedBox<(next: UInt64, entries: [UInt64: any HTTPExchangeOwner])>((1, [:]))

    /// Registers `owner`, and returns its number.
    static func register(_ owner: any HTTPExchangeOwner) -> UInt64 {
        table.withLock { table in
            defer { table.next += 1 }
            table.entries[table.next] = owner
            return table.next
        }
    }

    static func remove(_ slot: UInt64) {
        table.withLock { _ = $0.entries.removeValue(forKey: slot) }
    }

    /// The callback argument of request `id` of the owner numbered `slot`.
    static func tag(_ slot: UInt64, _ id: UInt64) -> UnsafeMutableRawPointer? {
        UnsafeMutableRawPointer(bitPattern: UInt(slot << 40 | (id & (1 << 40 - 1))))
    }

    static func find(_ tag: UnsafeMutableRawPointer?) -> (any HTTPExchangeOwner, UInt64)? {
        let bits = UInt64(UInt(bitPattern: tag))
        return table.withLock { $0.entries[bits >> 40] }.map { ($0, bits & (1 << 40 - 1)) }
    }

    /// Why a request got no answer, in libevent's words: TLS (the connection's OpenSSL errors), a timeout, a
    /// connection closed mid-answer, something that is not HTTP, an answer too long, or no connection at all.
    static func failure(
        of error: evhttp_request_error?,
        connection: OpaquePointer?,
        secure: Bool
    ) -> (cause: HTTPExchangeFailure, reason: String) {
        if secure, let connection, let bufferEvent = evhttp_connection_get_bufferevent(connection),
            let (_, reason) = TLSContext.failure(of: bufferEvent)
        {
            return (.tls, reason)
        }
        switch error {
        case EVREQ_HTTP_TIMEOUT: return (.timeout, "libevent's connection timeout")
        case EVREQ_HTTP_EOF: return (.closed, "the connection closed before the answer was whole")
        case EVREQ_HTTP_INVALID_HEADER, EVREQ_HTTP_BUFFER_ERROR: return (.malformed, "not an HTTP answer")
        case EVREQ_HTTP_DATA_TOO_LONG: return (.tooLong, "an answer over 64 KiB")
        default:
            return secure ? (.tls, "no TLS session with the server") : (.refused, "could not connect")
        }
    }

    /// The body of an answer.
    static func body(of request: OpaquePointer?) -> [UInt8] {
        guard let request, let input = evhttp_request_get_input_buffer(request) else { return [] }
        let length = evbuffer_get_length(input)
        guard length > 0, let bytes = evbuffer_pullup(input, length) else { return [] }
        return Array(UnsafeBufferPointer(start: bytes, count: length))
    }
}

/// Why an HTTP request got no answer (``HTTPExchanges/failure(of:connection:secure:)``).
enum HTTPExchangeFailure {
    case timeout, closed, malformed, tooLong, tls, refused
}

/// libevent's answer callback of every request made with an ``HTTPExchanges/tag(_:_:)``.
func httpExchangeAnswered(_ request: OpaquePointer?, _ tag: UnsafeMutableRawPointer?) {
    guard let (owner, id) = HTTPExchanges.find(tag) else { return }
    owner.answered(id, request: request)
}

/// libevent's error callback of every request made with an ``HTTPExchanges/tag(_:_:)``.
func httpExchangeFailed(_ error: evhttp_request_error, _ tag: UnsafeMutableRawPointer?) {
    guard let (owner, id) = HTTPExchanges.find(tag) else { return }
    owner.failed(id, error: error)
}
