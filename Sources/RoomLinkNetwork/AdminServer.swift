internal import CLibevent
import Foundation
import Logging
import RoomLinkEngine
@_spi(RoomLinkInternals) import RoomLinkLibevent
import RoomLinkRuntime

#if canImport(Glibc)
import Glibc
#endif

/// The business server's side of `roomlink serve`, on HTTP (libevent's `evhttp`, on the server's first loop): kick
/// users, expire tokens, ask members to reconnect, list a room's members, `/healthz`, and `/metrics` in Prometheus's
/// text format. Every path but `/healthz` needs `Authorization: Bearer <token>` when the server has a token; a server
/// without one listens on loopback only.
///
/// | Method and path | Body | Answer |
/// | --- | --- | --- |
/// | `GET /healthz` | | `ok` |
/// | `GET /metrics` | | Prometheus text |
/// | `GET /rooms` | | `{"rooms": [{"room": "r", "members": 2}, …]}` |
/// | `GET /rooms/{room}/members` | | `{"room": "r", "members": ["a", "b"]}` (in join order) |
/// | `POST /rooms/{room}/kick` | `{"users": ["a"]}` | `{"room": "r", "kicked": ["a"]}` (those who were in) |
/// | `POST /rooms/{room}/reconnect` | `{"users": ["a"]}` | `{"room": "r", "asked": ["a"]}` |
/// | `POST /users/{user}/expire-token` | `{"rooms": ["r"]}` or nothing (every room) | `{"user": "a"}` |
///
/// Errors answer a JSON `{"error": "…"}` naming what was wrong: 400 (bad body), 401 (no token), 403 (wrong token),
/// 404 (no such path or room), 405 (a method the path does not take, with `Allow`). evhttp refuses on its own, with its
/// HTML page, what never reaches `handle`: 400 (not HTTP), 413 (headers or body too large), 501 (a method HTTP does
/// not define). docs/protocol.md says the same.
final class AdminServer: @unchecked Sendable {
    // Safe: `http` and the bound socket are created, used and freed on `loop`'s thread only (evhttp's callbacks run
    // there; work on rooms hops to their loops and back before it answers).

    let loop: LibeventLoop
    private let server: NetworkServer
    private let token: String?
    private let metrics: ServerMetrics
    private var http: OpaquePointer?
    /// evhttp's listener, paused while the process is out of descriptors.
    private var listener: OpaquePointer?
    private var resumeTimer: TimerHandle?
    /// Accepting failed and the log said so; cleared (and said) when a request arrives again.
    private var isStarved = false
    private let logger: Logger

    /// The admin server of each evhttp listener: evhttp gives its listener's error callback evhttp's own context,
    /// so the callback finds its server here.
    fileprivate static let byListener = LockedBox<[UInt: AdminServer]>([:])

    private init(loop: LibeventLoop, server: NetworkServer, token: String?, metrics: ServerMetrics) {
        self.loop = loop
        self.server = server
        self.token = token
        self.metrics = metrics
        self.logger = server.configuration.logger
    }

    /// Opens the admin API on `address`, on `loop`.
    static func start(
        on loop: LibeventLoop,
        at address: SocketAddress,
        token: String?,
        server: NetworkServer,
        metrics: ServerMetrics
    ) async throws(NetworkError) -> (AdminServer, SocketAddress) {
        guard token != nil || address.isLoopback else {
            throw .misuse("the admin API needs a token (--admin-token) to listen beyond loopback, on \(address)")
        }
        if let token, token.isEmpty { throw .misuse("the admin token is empty") }
        let admin = AdminServer(loop: loop, server: server, token: token, metrics: metrics)
        let result: Result<SocketAddress, NetworkError> = await withCheckedContinuation { continuation in
            loop.execute { continuation.resume(returning: admin.open(address)) }
        }
        return (admin, try result.get())
    }

    private func open(_ address: SocketAddress) -> Result<SocketAddress, NetworkError> {
        guard let http = evhttp_new(loop.eventBase) else {
            return .failure(.cannotListen(address: "\(address)", reason: "evhttp_new failed"))
        }
        // Every method reaches `handle`, which answers 405 for a wrong one (evhttp itself would answer 501).
        let methods = [
            EVHTTP_REQ_GET, EVHTTP_REQ_POST, EVHTTP_REQ_HEAD, EVHTTP_REQ_PUT, EVHTTP_REQ_DELETE, EVHTTP_REQ_OPTIONS,
            EVHTTP_REQ_TRACE, EVHTTP_REQ_CONNECT, EVHTTP_REQ_PATCH,
        ]
        evhttp_set_allowed_methods(http, UInt16(methods.reduce(0) { $0 | $1.rawValue }))
        evhttp_set_max_body_size(http, 64 * 1024)
        evhttp_set_max_headers_size(http, 16 * 1024)
        evhttp_set_timeout(http, 30)
        evhttp_set_gencb(http, adminRequestCallback, Unmanaged.passUnretained(self).toOpaque())
        // Over TLS when the server's listeners are (`serve --tls-cert`): its context outlives this API, which the
        // server closes before it goes.
        server.transport.tls?.serveHTTPS(http)
        guard let bound = evhttp_bind_socket_with_handle(http, address.host, address.port) else {
            let reason = Sockets.errorText(errno)
            evhttp_free(http)
            return .failure(.cannotListen(address: "\(address)", reason: reason))
        }
        self.http = http
        if let listener = evhttp_bound_socket_get_listener(bound) {
            self.listener = listener
            AdminServer.byListener.withLock { $0[UInt(bitPattern: listener)] = self }
            evconnlistener_set_error_cb(listener, adminListenerErrorCallback)
        }
        let local = ResolvedAddress.local(of: evhttp_bound_socket_get_fd(bound)) ?? address
        return .success(local)
    }

    /// Closes the admin API (on its loop).
    func stop() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute { [self] in
                if let listener {
                    _ = AdminServer.byListener.withLock { $0.removeValue(forKey: UInt(bitPattern: listener)) }
                }
                resumeTimer.map { _ = loop.cancel($0) }
                resumeTimer = nil
                listener = nil
                if let http { evhttp_free(http) }
                http = nil
                continuation.resume()
            }
        }
    }

    // MARK: - Requests

    /// evhttp's accept failed (out of descriptors, most likely): accepting again at once would spin on the
    /// connection left in the backlog, so pause for 100 ms, and say so once. The server keeps descriptors in reserve
    /// (``OpenFileLimit/serverReserve``), so this happens only when something else took them.
    fileprivate func acceptFailed() {
        if !isStarved {
            isStarved = true
            logger.warning("admin API: accept failed: \(Sockets.errorText(errno)); retrying every 100 ms")
        }
        guard let listener, resumeTimer == nil else { return }
        evconnlistener_disable(listener)
        resumeTimer = try? loop.schedule(after: .milliseconds(100)) { [self] in
            resumeTimer = nil
            if let listener = self.listener { evconnlistener_enable(listener) }
        }
    }

    fileprivate func handle(_ request: OpaquePointer) {
        if isStarved {
            isStarved = false
            logger.notice("admin API: accepting again")
        }
        let reply = Reply(request: request, loop: loop)
        let method = evhttp_request_get_command(request)
        let rawPath = evhttp_request_get_evhttp_uri(request).flatMap { evhttp_uri_get_path($0) }.map {
            String(cString: $0)
        }
        guard let rawPath else { return reply.error(400, "no path") }
        let parts = rawPath.split(separator: "/", omittingEmptySubsequences: true).map { part -> String in
            guard let decoded = evhttp_uridecode(String(part), 0, nil) else { return String(part) }
            defer { Glibc.free(decoded) }
            return String(cString: decoded)
        }
        let verb: String? =
            switch method {
            case EVHTTP_REQ_GET: "GET"
            case EVHTTP_REQ_POST: "POST"
            default: nil
            }
        // The one method each path takes; a path with none is no path of the API's.
        let allowed: String? =
            switch (parts.count, parts.first) {
            case (1, "metrics"), (1, "rooms"): "GET"
            case (3, "rooms") where parts[2] == "members": "GET"
            case (3, "rooms") where parts[2] == "kick" || parts[2] == "reconnect": "POST"
            case (3, "users") where parts[2] == "expire-token": "POST"
            default: nil
            }
        if parts == ["healthz"] {
            guard verb == "GET" else { return reply.error(405, "\(rawPath) takes GET only", allow: "GET") }
            return reply.send(200, "ok\n", type: "text/plain")
        }
        if let token {
            let headers = evhttp_request_get_input_headers(request)
            guard let value = evhttp_find_header(headers, "Authorization").map({ String(cString: $0) }) else {
                return reply.error(401, "an Authorization: Bearer token is required")
            }
            guard value == "Bearer \(token)" else { return reply.error(403, "wrong token") }
        }
        guard let allowed else { return reply.error(404, "no such path: \(rawPath)") }
        guard verb == allowed else {
            return reply.error(405, "\(rawPath) takes \(allowed) only", allow: allowed)
        }
        let body = Self.body(of: request)
        switch (verb, parts.count, parts.first) {
        case ("GET", 1, "metrics"):
            reply.send(200, metrics.render(), type: "text/plain; version=0.0.4")
        case ("GET", 1, "rooms"):
            listRooms(reply)
        case ("GET", 3, "rooms") where parts[2] == "members":
            withRoom(parts[1], reply) { room in
                reply.json(["room": room.roomID, "members": room.memberIDs])
            }
        case ("POST", 3, "rooms") where parts[2] == "kick" || parts[2] == "reconnect":
            guard let users = Self.strings("users", in: body, required: true) else {
                return reply.error(400, "expected a JSON body {\"users\": [\"user ID\", …]}")
            }
            let kick = parts[2] == "kick"
            withRoom(parts[1], reply) { room in
                let present = users.filter { room.memberIDs.contains($0) }
                for user in present {
                    if kick { room.kick(user, reason: .admin) } else { room.requestReconnect(user) }
                }
                reply.json(["room": room.roomID, kick ? "kicked" : "asked": present])
            }
        case ("POST", 3, "users") where parts[2] == "expire-token":
            guard body.isEmpty || Self.strings("rooms", in: body, required: false) != nil else {
                return reply.error(400, "expected no body, or a JSON body {\"rooms\": [\"room ID\", …]}")
            }
            let rooms = body.isEmpty ? nil : Self.strings("rooms", in: body, required: false)
            // A node of a cluster expires it on every node: the cluster is a clustered server's administration.
            let administration: any RoomAdministration = server.rooms.cluster ?? server.rooms
            administration.expireToken(
                userID: parts[1],
                inRooms: rooms?.filter { server.rooms.existingRoom($0) != nil }
            )
            reply.json(["user": parts[1]])
        default:
            // Every path and method `allowed` names is handled above.
            preconditionFailure("admin API: \(verb ?? "?") \(rawPath) has no handler")
        }
        logger.debug("admin request", metadata: ["path": "\(rawPath)"])
    }

    private func listRooms(_ reply: Reply) {
        let rooms = server.rooms.roomIDs.compactMap(server.rooms.existingRoom)
        guard !rooms.isEmpty else { return reply.json(["rooms": [[String: Any]]()]) }
        let counts = LockedBox<[(String, Int)]>([])
        let remaining = LockedBox(rooms.count)
        for room in rooms {
            onRoomLoop(room) { room in
                counts.withLock { $0.append((room.roomID, room.memberIDs.count)) }
                guard
                    remaining.withLock({ count in
                        count -= 1
                        return count == 0
                    })
                else { return }
                let sorted = counts.withLock { $0 }.sorted { $0.0 < $1.0 }
                reply.json(["rooms": sorted.map { ["room": $0.0, "members": $0.1] as [String: Any] }])
            }
        }
    }

    /// Runs `body` on the loop of `roomID`'s room, isolated to it; answers 404 when there is no such room.
    private func withRoom(_ roomID: String, _ reply: Reply, _ body: @escaping @Sendable (isolated ServerRoom) -> Void) {
        guard let room = server.rooms.existingRoom(roomID) else { return reply.error(404, "no room '\(roomID)'") }
        onRoomLoop(room, body)
    }

    private func onRoomLoop(_ room: ServerRoom, _ body: @escaping @Sendable (isolated ServerRoom) -> Void) {
        room.loop.runSoon { room.assumeIsolated { body($0) } }
    }

    private static func body(of request: OpaquePointer) -> Data {
        guard let buffer = evhttp_request_get_input_buffer(request) else { return Data() }
        let length = evbuffer_get_length(buffer)
        guard length > 0, let bytes = evbuffer_pullup(buffer, length) else { return Data() }
        return Data(bytes: bytes, count: length)
    }

    /// The array of strings under `key` in a JSON object body; `nil` when the body is not one. Read strictly (RFC
    /// 8259, no key twice): a body with a trailing comma is a mistake to report, not a request to carry out.
    private static func strings(_ key: String, in body: Data, required: Bool) -> [String]? {
        guard case .object(let object)? = try? JSONValue.parse(body, what: "body"),
            case .array(let items)? = object[key]
        else { return nil }
        var values: [String] = []
        for item in items {
            guard case .string(let value) = item else { return nil }
            values.append(value)
        }
        guard !values.isEmpty || !required else { return nil }
        return values
    }

    /// One request's answer, sent on the admin loop whatever thread makes it.
    struct Reply: @unchecked Sendable {
        // Safe: `request` is touched on `loop`'s thread only — `send` hops there first. libevent keeps a request
        // whose connection closed before the answer until the answer frees it.
        let request: OpaquePointer
        let loop: LibeventLoop

        func json(_ object: [String: Any], status: Int32 = 200) {
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            send(status, String(decoding: data, as: UTF8.self) + "\n", type: "application/json")
        }

        /// An error as `{"error": message}`; a 405 names the method the path takes in its `Allow` header, as
        /// HTTP requires (RFC 9110 §15.5.6).
        func error(_ status: Int32, _ message: String, allow: String? = nil) {
            let data =
                (try? JSONSerialization.data(withJSONObject: ["error": message], options: [.sortedKeys])) ?? Data()
            send(status, String(decoding: data, as: UTF8.self) + "\n", type: "application/json", allow: allow)
        }

        func send(_ status: Int32, _ text: String, type: String, allow: String? = nil) {
            let reply = self
            let body = Array(text.utf8)
            let write: @Sendable () -> Void = {
                let headers = evhttp_request_get_output_headers(reply.request)
                evhttp_add_header(headers, "Content-Type", type)
                if let allow { evhttp_add_header(headers, "Allow", allow) }
                let buffer = evbuffer_new()
                body.withUnsafeBytes { _ = evbuffer_add(buffer, $0.baseAddress, $0.count) }
                evhttp_send_reply(reply.request, status, Self.reason(status), buffer)
                evbuffer_free(buffer)
            }
            loop.runSoon(write)
        }

        static func reason(_ status: Int32) -> String { HTTPStatus.reason(Int(status)) }
    }
}

private func adminListenerErrorCallback(_ listener: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    guard let listener, let admin = AdminServer.byListener.withLock({ $0[UInt(bitPattern: listener)] }) else { return }
    admin.loop.runCallback { admin.acceptFailed() }
}

private func adminRequestCallback(_ request: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    guard let request else { return }
    let admin = Unmanaged<AdminServer>.fromOpaque(context!).takeUnretainedValue()
    admin.loop.runCallback { admin.handle(request) }
}
