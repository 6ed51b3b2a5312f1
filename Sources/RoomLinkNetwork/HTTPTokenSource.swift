internal import CLibevent
import Foundation
public import RoomLinkEngine
@_spi(RoomLinkInternals) public import RoomLinkLibevent
import RoomLinkRuntime

#if canImport(Glibc)
import Glibc
#endif

/// Clients that fetch their tokens from the app's own token server (`run|load --token-url URL`), as apps do: a GET
/// of the URL with `{user}`, `{room}` and `{dialect}` filled in (percent-encoded), over `http://` or `https://` (the
/// server's certificate verified, ``TLSClientConfiguration``).
///
/// The answer is a 200 whose body is either JSON with the token in `"token"` (`{"token": "007eJx…"}`) or the token
/// itself as plain text (one line; surrounding whitespace is ignored). Anything else is a failed fetch, by cause
/// (`TokenFetchFailure.Cause`): no answer within ``timeout`` (counted on the client's clock), a refused connection,
/// TLS, another status, a body without a token, a connection closed mid-answer.
///
/// Each loop keeps a few kept-alive connections to the server and sends each fetch on the least busy; every
/// connection, request and timer of a loop is made and used on that loop's thread.
public final class HTTPTokenSource: TokenSource {
    /// A token server's URL template: where to connect, and the path with its placeholders.
    public struct Endpoint: Sendable, Hashable, CustomStringConvertible {
        public var host: String
        public var port: UInt16
        /// The path and query, with `{user}`, `{room}` and `{dialect}` as written.
        public var pathTemplate: String
        public var isSecure: Bool

        /// Reads `http://` or `https://HOST[:PORT][/PATH][?QUERY]`, placeholders anywhere in the path or query.
        ///
        /// - Throws: `RoomLinkError` naming `flag` (the option the URL came from) and what is wrong.
        public init(parsing text: String, flag: String = "--token-url") throws(RoomLinkError) {
            func invalid(_ message: String) -> RoomLinkError {
                RoomLinkError(code: .invalidInput, field: flag, message: "\(flag): \(message)")
            }
            guard let separator = text.range(of: "://") else {
                throw invalid("'\(text)' is not an http:// or https:// URL")
            }
            let scheme = text[..<separator.lowerBound].lowercased()
            guard scheme == "http" || scheme == "https" else {
                throw invalid("the scheme is http or https, not '\(scheme)'")
            }
            isSecure = scheme == "https"
            let rest = text[separator.upperBound...]
            let end = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
            var authority = String(rest[..<end])
            let path = String(rest[end...])
            pathTemplate = path.isEmpty ? "/" : (path.hasPrefix("?") ? "/" + path : path)
            guard !authority.contains("@") else { throw invalid("credentials in the URL are not supported") }
            var portText: String?
            if authority.hasPrefix("[") {
                guard let close = authority.firstIndex(of: "]") else { throw invalid("unclosed '[' in '\(text)'") }
                let after = authority[authority.index(after: close)...]
                if after.hasPrefix(":") {
                    portText = String(after.dropFirst())
                } else if !after.isEmpty {
                    throw invalid("'\(authority)' is not HOST[:PORT]")
                }
                authority = String(authority[authority.index(after: authority.startIndex)..<close])
            } else if let colon = authority.lastIndex(of: ":") {
                portText = String(authority[authority.index(after: colon)...])
                authority = String(authority[..<colon])
            }
            guard !authority.isEmpty else { throw invalid("no host in '\(text)'") }
            host = authority
            if let portText {
                guard let port = UInt16(portText), port > 0 else {
                    throw invalid("the port is 1–65535, not '\(portText)'")
                }
                self.port = port
            } else {
                port = isSecure ? 443 : 80
            }
            guard pathTemplate.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
                throw invalid("the path has spaces or characters outside ASCII: percent-encode them")
            }
        }

        /// The path for `request`, its placeholders filled in and percent-encoded.
        public func path(for request: TokenRequest) -> String {
            pathTemplate
                .replacingOccurrences(of: "{user}", with: Self.encode(request.userID))
                .replacingOccurrences(of: "{room}", with: Self.encode(request.roomID))
                .replacingOccurrences(of: "{dialect}", with: request.dialect.rawValue)
        }

        /// The Host header's value.
        var hostHeader: String {
            let name = host.contains(":") ? "[\(host)]" : host
            return port == (isSecure ? 443 : 80) ? name : "\(name):\(port)"
        }

        public var description: String { "\(isSecure ? "https" : "http")://\(hostHeader)\(pathTemplate)" }

        /// `text` percent-encoded for a path segment or query value: RFC 3986's unreserved characters stay.
        static func encode(_ text: String) -> String {
            var unreserved = CharacterSet.alphanumerics.intersection(.init(charactersIn: Unicode.Scalar(0)..<"\u{80}"))
            unreserved.insert(charactersIn: "-._~")
            return text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
        }
    }

    public let endpoint: Endpoint
    /// How long a client waits for a token.
    public let timeout: Duration
    /// Kept-alive connections per loop.
    public let connectionsPerLoop: Int
    private let tls: TLSContext?
    private let serverName: String?
    /// Each loop's connections and fetches in flight, by the loop's identity.
    private let loops = LockedBox<[ObjectIdentifier: LoopFetches]>([:])

    /// A source fetching from `endpoint`, waiting `timeout` for each answer, over `connectionsPerLoop` connections on
    /// each loop; `tls` says whom an `https://` server's certificate must chain to.
    ///
    /// - Throws: ``NetworkError/tls(_:)`` when TLS cannot be set up (its authorities unreadable).
    public init(
        endpoint: Endpoint,
        timeout: Duration = .seconds(5),
        connectionsPerLoop: Int = 8,
        tls: TLSClientConfiguration = TLSClientConfiguration()
    ) throws(NetworkError) {
        self.endpoint = endpoint
        self.timeout = timeout
        self.connectionsPerLoop = max(1, connectionsPerLoop)
        if endpoint.isSecure {
            do {
                self.tls = try TLSContext(client: tls)
            } catch {
                throw .tls(error)
            }
            serverName = tls.serverName ?? endpoint.host
        } else {
            self.tls = nil
            serverName = nil
        }
    }

    deinit {
        for (_, fetches) in loops.withLock({ $0 }) { fetches.close() }
    }

    public func fetchToken(
        for request: TokenRequest,
        on loop: any RuntimeLoop,
        completion: @escaping @Sendable (Result<String, TokenFetchFailure>) -> Void
    ) {
        guard let loop = loop as? LibeventLoop else {
            return completion(
                .failure(TokenFetchFailure(.unavailable, "a token server is fetched from libevent loops"))
            )
        }
        let fetches = loops.withLock { loops in
            if let fetches = loops[ObjectIdentifier(loop)] { return fetches }
            let fetches = LoopFetches(source: self, loop: loop)
            loops[ObjectIdentifier(loop)] = fetches
            return fetches
        }
        let path = endpoint.path(for: request)
        // The source lives until the fetch has started: its loop's table reads it unowned, and closes once it goes.
        loop.runSoon { [self] in withExtendedLifetime(self) { fetches.start(path: path, completion: completion) } }
    }

    /// Fetches a token for a probe user at start (`roomlink run|load` before its clients start): whether the server
    /// answers at all. Any HTTP answer will do; a refused connection, TLS failure or timeout is the error.
    public func probe(on loop: LibeventLoop, dialect: DialectName) async -> TokenFetchFailure? {
        let request = TokenRequest(userID: "roomlink-probe", roomID: "roomlink-probe", dialect: dialect)
        let result = await withCheckedContinuation { continuation in
            fetchToken(for: request, on: loop) { continuation.resume(returning: $0) }
        }
        switch result {
        case .success: return nil
        case .failure(let failure):
            switch failure.cause {
            case .httpStatus, .badBody: return nil
            case .timeout, .refused, .tls, .closed, .unavailable: return failure
            }
        }
    }

    fileprivate func makeConnection(on loop: LibeventLoop) -> OpaquePointer? {
        guard
            let connection = TLSContext.httpConnection(
                tls,
                on: loop.eventBase,
                host: endpoint.host,
                port: endpoint.port,
                serverName: serverName
            )
        else { return nil }
        // libevent's own limits, behind the client's timeout: a body no token needs, and a connection that hangs
        // is given up on by the client first.
        evhttp_connection_set_max_body_size(connection, 65_536)
        evhttp_connection_set_max_headers_size(connection, 65_536)
        evhttp_connection_set_timeout(connection, Int32(clamping: max(1, timeout.components.seconds * 2 + 1)))
        evhttp_connection_set_retries(connection, 0)
        return connection
    }

    fileprivate var tlsContext: TLSContext? { tls }
    fileprivate var hostHeader: String { endpoint.hostHeader }
}

/// One loop's connections to the token server and its fetches in flight: made, used and freed on the loop's thread.
private final class LoopFetches: HTTPExchangeOwner, @unchecked Sendable {
    // Safe: every method runs on `loop`'s thread (`fetchToken` hops there, and so does `close()`'s work).
    // The registry below holds the object, so that a libevent callback finds it by number, never by a pointer that
    // may have gone.
    unowned let source: HTTPTokenSource
    let loop: LibeventLoop
    /// The registry's number of this object.
    private(set) var slot: UInt64
    private var connections: [OpaquePointer?]
    /// Fetches waiting on each connection.
    private var busy: [Int]
    private var nextID: UInt64 = 0
    private var pending: [UInt64: Pending] = [:]

    struct Pending {
        let completion: @Sendable (Result<String, TokenFetchFailure>) -> Void
        let connection: Int
        /// What libevent's error callback said, before the request's own callback.
        var error: evhttp_request_error?
    }

    init(source: HTTPTokenSource, loop: LibeventLoop) {
        self.source = source
        self.loop = loop
        connections = Array(repeating: nil, count: source.connectionsPerLoop)
        busy = Array(repeating: 0, count: source.connectionsPerLoop)
        slot = 0
        slot = HTTPExchanges.register(self)
    }

    /// Frees the connections on the loop (their requests' callbacks find no fetch, and do nothing).
    func close() {
        HTTPExchanges.remove(slot)
        // On the loop, where the connections and fetches are only ever touched: a fetch still waiting fails now, and
        // its timer, firing later, finds nothing to free.
        loop.execute { [self] in
            for connection in connections { if let connection { evhttp_connection_free(connection) } }
            connections = connections.map { _ in nil }
            let waiting = pending.values
            pending.removeAll()
            for fetch in waiting { fetch.completion(.failure(TokenFetchFailure(.unavailable, "the source closed"))) }
        }
    }

    func start(path: String, completion: @escaping @Sendable (Result<String, TokenFetchFailure>) -> Void) {
        let index = busy.indices.min { busy[$0] < busy[$1] } ?? 0
        if connections[index] == nil { connections[index] = source.makeConnection(on: loop) }
        guard let connection = connections[index] else {
            return completion(.failure(TokenFetchFailure(.unavailable, "libevent could not make a connection")))
        }
        nextID += 1
        let id = nextID
        // The callbacks' argument is a number (this loop's slot and the fetch's), not an object: a fetch that timed
        // out is forgotten, and whatever libevent calls back later finds nothing to do.
        guard let request = evhttp_request_new(httpExchangeAnswered, HTTPExchanges.tag(slot, id)) else {
            return completion(.failure(TokenFetchFailure(.unavailable, "libevent could not make a request")))
        }
        evhttp_request_set_error_cb(request, httpExchangeFailed)
        let headers = evhttp_request_get_output_headers(request)
        evhttp_add_header(headers, "Host", source.hostHeader)
        evhttp_add_header(headers, "Accept", "application/json, text/plain")
        pending[id] = Pending(completion: completion, connection: index)
        busy[index] += 1
        let timeout = source.timeout
        _ = try? loop.schedule(after: timeout) { [self] in
            guard let fetch = pending.removeValue(forKey: id) else { return }
            busy[fetch.connection] -= 1
            // The connection is given up on with its fetch, as an HTTP client does: the next fetch must not queue
            // behind an answer that may never come. Fetches still queued on it time out by their own timers (the
            // callbacks of freed requests find no fetch).
            if let connection = connections[fetch.connection] {
                evhttp_connection_free(connection)
                connections[fetch.connection] = nil
            }
            fetch.completion(.failure(TokenFetchFailure(.timeout, "no answer within \(timeout)")))
        }
        // On failure libevent has freed the request and called back (with no answer).
        _ = evhttp_make_request(connection, request, EVHTTP_REQ_GET, path)
    }

    func failed(_ id: UInt64, error: evhttp_request_error) {
        pending[id]?.error = error
    }

    func answered(_ id: UInt64, request: OpaquePointer?) {
        guard let fetch = pending.removeValue(forKey: id) else { return }
        busy[fetch.connection] -= 1
        let status = request.map { Int(evhttp_request_get_response_code($0)) } ?? 0
        guard status != 0 else { return fetch.completion(.failure(failure(of: fetch))) }
        guard status == 200 else {
            return fetch.completion(.failure(TokenFetchFailure(.httpStatus, "\(status)")))
        }
        let body = HTTPExchanges.body(of: request)
        fetch.completion(Self.token(in: body))
    }

    /// Why a fetch got no answer: TLS (the connection's OpenSSL errors), libevent's word for it, or a connection
    /// that never opened.
    private func failure(of fetch: Pending) -> TokenFetchFailure {
        let (cause, reason) = HTTPExchanges.failure(
            of: fetch.error,
            connection: connections[fetch.connection],
            secure: source.tlsContext != nil
        )
        return switch cause {
        case .tls: TokenFetchFailure(.tls, reason)
        case .timeout: TokenFetchFailure(.timeout, reason)
        case .closed: TokenFetchFailure(.closed, reason)
        case .malformed, .tooLong: TokenFetchFailure(.badBody, reason)
        case .refused: TokenFetchFailure(.refused, reason)
        }
    }

    /// The token in a 200's body: `{"token": "…"}`, or one line of text.
    static func token(in body: [UInt8]) -> Result<String, TokenFetchFailure> {
        guard let text = String(validating: body, as: UTF8.self) else {
            return .failure(TokenFetchFailure(.badBody, "the body is not UTF-8"))
        }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("{") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(trimmed.utf8)) as? [String: Any] else {
                return .failure(TokenFetchFailure(.badBody, "the body is not a JSON object"))
            }
            guard let token = object["token"] as? String, !token.isEmpty else {
                return .failure(TokenFetchFailure(.badBody, #"the JSON has no "token" string"#))
            }
            return .success(token)
        }
        guard !trimmed.isEmpty, !trimmed.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 32 } == true })
        else {
            return .failure(TokenFetchFailure(.badBody, trimmed.isEmpty ? "an empty body" : "more than one token"))
        }
        return .success(trimmed)
    }
}
