import Foundation
import RoomLink
import RoomLinkNetwork
import RoomLinkTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `--token-url`'s fetches (``HTTPTokenSource``) against a canned HTTP server on loopback: a token in JSON or as text
/// arrives; a 500, a body without a token, an answer cut short, a server that never answers and one that is not there
/// each fail by their own cause. Causes and counts only.
@Suite(.hangLimit(minutes: 5))
struct HTTPTokenSourceTests {
    /// A blocking HTTP/1.1 server on 127.0.0.1, one thread a connection: the first path segment says how it answers
    /// (`json`, `text`, `500`, `garbage`, `cut`, `hang`).
    final class CannedServer: Sendable {
        let port: UInt16
        private let listener: Int32
        let requests = Atomic<Int>(0)
        /// Hung connections the client closed.
        let abandoned = Atomic<Int>(0)
        /// Each request's path, headers and body, in arrival order (room callbacks post bodies).
        let received = LockedBox<[(path: String, head: String, body: [UInt8])]>([])

        init() throws {
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            self.listener = listener
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) }
            }
            guard bound == 0, listen(listener, 64) == 0 else { throw POSIXError(.EADDRINUSE) }
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
            }
            port = UInt16(bigEndian: address.sin_port)
            Thread.detachNewThread { [self] in
                while true {
                    let connection = accept(listener, nil, nil)
                    guard connection >= 0 else { return }
                    Thread.detachNewThread { [self] in serve(connection) }
                }
            }
        }

        func stop() {
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }

        private func serve(_ connection: Int32) {
            defer { close(connection) }
            var pending = [UInt8]()
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                while !String(decoding: pending, as: UTF8.self).contains("\r\n\r\n") {
                    let count = recv(connection, &buffer, buffer.count, 0)
                    guard count > 0 else { return }
                    pending += buffer[0..<count]
                }
                let text = String(decoding: pending, as: UTF8.self)
                let head = text.components(separatedBy: "\r\n\r\n")[0]
                pending = Array(pending.dropFirst(head.utf8.count + 4))
                // A body, when the head gives its length.
                let length =
                    head.split(separator: "\r\n").lazy
                    .compactMap { line -> Int? in
                        let parts = line.split(separator: ":", maxSplits: 1)
                        guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                        return Int(parts[1].trimmingCharacters(in: .whitespaces))
                    }.first ?? 0
                while pending.count < length {
                    let count = recv(connection, &buffer, buffer.count, 0)
                    guard count > 0 else { return }
                    pending += buffer[0..<count]
                }
                let body = Array(pending.prefix(length))
                pending = Array(pending.dropFirst(length))
                requests.add(1, ordering: .relaxed)
                let path = head.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
                received.withLock { $0.append((path, head, body)) }
                let mode = path.split(separator: "/").first.map(String.init) ?? ""
                func write(_ string: String) { _ = string.withCString { send(connection, $0, strlen($0), 0) } }
                func answer(_ status: String, _ body: String) {
                    write("HTTP/1.1 \(status)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
                }
                switch mode {
                case "json", "roomlink-probe": answer("200 OK", #"{"token": "tok-json"}"#)
                case "text": answer("200 OK", "tok-text\n")
                case "500": answer("500 Internal Server Error", "down")
                case "garbage": answer("200 OK", "{not json")
                case "cut":
                    write("HTTP/1.1 200 OK\r\nContent-Length: 400\r\n\r\n{\"token\": \"tok")
                    return
                default:  // hang (and anything else): read until the client gives up and closes
                    while recv(connection, &buffer, buffer.count, 0) > 0 {}
                    abandoned.add(1, ordering: .relaxed)
                    return
                }
            }
        }
    }

    static func fetch(
        _ source: HTTPTokenSource,
        user: String,
        on loop: LibeventLoop
    ) async -> Result<String, TokenFetchFailure> {
        await withCheckedContinuation { continuation in
            source.fetchToken(for: TokenRequest(userID: user, roomID: "r 1", dialect: .zego), on: loop) {
                continuation.resume(returning: $0)
            }
        }
    }

    @Test func eachAnswerIsATokenOrAFailureByItsCause() async throws {
        let server = try CannedServer()
        defer { server.stop() }
        try await NetworkTest.withGroup { group in
            let endpoint = try HTTPTokenSource.Endpoint(parsing: "http://127.0.0.1:\(server.port)/{user}/{room}")
            // Answered fetches wait as long as a loaded machine may take; the hung one gives up soon.
            let source = try HTTPTokenSource(endpoint: endpoint, timeout: .seconds(60), connectionsPerLoop: 2)
            let impatient = try HTTPTokenSource(endpoint: endpoint, timeout: .milliseconds(400), connectionsPerLoop: 1)
            let loop = group.eventLoops[0]
            #expect(try await Self.fetch(source, user: "json", on: loop).get() == "tok-json")
            #expect(try await Self.fetch(source, user: "text", on: loop).get() == "tok-text")
            var causes: [String: TokenFetchFailure.Cause] = [:]
            for user in ["500", "garbage", "cut", "hang"] {
                if case .failure(let failure) = await Self.fetch(
                    user == "hang" ? impatient : source,
                    user: user,
                    on: loop
                ) {
                    causes[user] = failure.cause
                }
            }
            #expect(causes == ["500": .httpStatus, "garbage": .badBody, "cut": .closed, "hang": .timeout])
            // The connection the hung fetch was on was given up with it: the client closed it.
            try await NetworkTest.until("the hung connection is closed") {
                server.abandoned.load(ordering: .relaxed) == 1
            }
            #expect(try await Self.fetch(source, user: "text", on: loop).get() == "tok-text")
            #expect(server.requests.load(ordering: .relaxed) == 7)
            // A source that goes while a fetch waits fails the fetch at once.
            var doomed: HTTPTokenSource? = try HTTPTokenSource(endpoint: endpoint, timeout: .seconds(600))
            let answer = LockedBox<Result<String, TokenFetchFailure>?>(nil)
            let request = TokenRequest(userID: "hang", roomID: "r", dialect: .zego)
            doomed?.fetchToken(for: request, on: loop) { result in answer.withLock { $0 = result } }
            try await NetworkTest.until("the fetch is on its way") { server.requests.load(ordering: .relaxed) == 8 }
            doomed = nil
            try await NetworkTest.until("the dropped source fails its fetch") { answer.withLock { $0 != nil } }
            if case .failure(let failure) = answer.withLock({ $0 }) {
                #expect(failure.cause == .unavailable)
            } else {
                Issue.record("a dropped source's fetch got a token")
            }
            // A server that is not there: refused, and the probe says so.
            let closed = try HTTPTokenSource(endpoint: HTTPTokenSource.Endpoint(parsing: "http://127.0.0.1:1/t"))
            #expect(await closed.probe(on: loop, dialect: .zego)?.cause == .refused)
            #expect(await source.probe(on: loop, dialect: .zego) == nil)
        }
    }

    @Test func urlsAndPlaceholders() throws {
        let endpoint = try HTTPTokenSource.Endpoint(
            parsing: "https://tokens.example:8443/v1/token?user={user}&room={room}&vendor={dialect}"
        )
        #expect(endpoint.isSecure && endpoint.host == "tokens.example" && endpoint.port == 8443)
        let path = endpoint.path(for: TokenRequest(userID: "a b/é", roomID: "room#1", dialect: .agora))
        #expect(path == "/v1/token?user=a%20b%2F%C3%A9&room=room%231&vendor=agora")
        #expect(try HTTPTokenSource.Endpoint(parsing: "http://[::1]/t").host == "::1")
        #expect(try HTTPTokenSource.Endpoint(parsing: "http://h?u={user}").pathTemplate == "/?u={user}")
        for bad in [
            "ftp://h/t", "h:80/t", "http:///t", "http://h:0/t", "http://h:99999/t", "http://u@h/t", "http://h/a b",
        ] {
            #expect(throws: RoomLinkError.self, "\(bad)") { try HTTPTokenSource.Endpoint(parsing: bad) }
        }
    }
}
