internal import CLibevent
import Foundation
public import RoomLinkEngine
@_spi(RoomLinkInternals) public import RoomLinkLibevent

#if canImport(Glibc)
import Glibc
#endif

/// A client of `roomlink serve`'s admin API (``NetworkServer/startAdmin(on:token:)``), over one kept-alive HTTP
/// connection on a libevent loop: what `roomlink run --server` uses for a scenario's kicks, reconnect requests and
/// token expiries, and what tests use to read a room's members.
public final class AdminClient: RoomAdministration, @unchecked Sendable {
    // Safe: `connection` is created, used and freed on `loop`'s thread only; every request hops there.

    public let address: SocketAddress
    private let token: String?
    private let loop: LibeventLoop
    private var connection: OpaquePointer?
    /// TLS's context, for an admin API on HTTPS (`serve --tls-cert`).
    private let tls: TLSContext?
    private let serverName: String?

    /// A client of the admin API at `address`, with its bearer token if it has one, on `loop`.
    public init(address: SocketAddress, token: String?, loop: LibeventLoop) {
        self.address = address
        self.token = token
        self.loop = loop
        tls = nil
        serverName = nil
    }

    /// A client of the admin API on HTTPS at `address` (`roomlink serve --tls-cert`), verifying its certificate as
    /// `tls` says.
    ///
    /// - Throws: ``NetworkError/tls(_:)`` when TLS cannot be set up (its authorities unreadable).
    public init(
        address: SocketAddress,
        token: String?,
        loop: LibeventLoop,
        tls: TLSClientConfiguration
    ) throws(NetworkError) {
        self.address = address
        self.token = token
        self.loop = loop
        do {
            self.tls = try TLSContext(client: tls)
        } catch {
            throw .tls(error)
        }
        serverName = tls.serverName
    }

    deinit {
        // The last reference may go on any thread; the connection is freed on its loop.
        if let connection {
            let box = UnsafeTransfer(connection)
            loop.execute { evhttp_connection_free(box.value) }
        }
    }

    /// An answer of the admin API.
    public struct Response: Sendable {
        /// The HTTP status; 0 when there was no answer (the connection failed).
        public var status: Int
        public var body: String

        /// The body as a JSON object, if it is one.
        public var object: [String: Any]? {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
        }
    }

    // MARK: - RoomAdministration

    public func kickOut(roomID: String, userIDs: [String]) {
        send("POST", "/rooms/\(Self.encode(roomID))/kick", body: ["users": userIDs]) { _ in }
    }

    public func requestReconnect(roomID: String, userIDs: [String]) {
        send("POST", "/rooms/\(Self.encode(roomID))/reconnect", body: ["users": userIDs]) { _ in }
    }

    public func expireToken(userID: String, inRooms roomIDs: [String]?) {
        send("POST", "/users/\(Self.encode(userID))/expire-token", body: roomIDs.map { ["rooms": $0] }) { _ in }
    }

    // MARK: - Requests

    /// The members of `roomID`, in the order they joined; `nil` when there is no such room or no answer.
    public func members(of roomID: String) async -> [String]? {
        let response = await request("GET", "/rooms/\(Self.encode(roomID))/members")
        return response.status == 200 ? response.object?["members"] as? [String] : nil
    }

    /// Sends a request and waits for its answer.
    public func request(_ method: String, _ path: String, body: [String: Any]? = nil) async -> Response {
        let data = body.flatMap { try? JSONSerialization.data(withJSONObject: $0) }
        return await withCheckedContinuation { continuation in
            send(method, path, data: data) { continuation.resume(returning: $0) }
        }
    }

    /// Sends `data` as the body, as it is (for requests no JSON encoder would write); the answer, or status 0 when
    /// none came or `method` is not one of GET, POST, PUT, DELETE, PATCH and OPTIONS.
    public func request(_ method: String, _ path: String, bytes: [UInt8]) async -> Response {
        await withCheckedContinuation { continuation in
            send(method, path, data: Data(bytes)) { continuation.resume(returning: $0) }
        }
    }

    private func send(
        _ method: String,
        _ path: String,
        body: [String: Any]?,
        completion: @escaping @Sendable (Response) -> Void
    ) {
        send(
            method,
            path,
            data: body.flatMap { try? JSONSerialization.data(withJSONObject: $0) },
            completion: completion
        )
    }

    private func send(
        _ method: String,
        _ path: String,
        data: Data?,
        completion: @escaping @Sendable (Response) -> Void
    ) {
        let work: @Sendable () -> Void = { [self] in
            if connection == nil {
                connection = TLSContext.httpConnection(
                    tls,
                    on: loop.eventBase,
                    host: address.host,
                    port: address.port,
                    serverName: serverName
                )
                if let connection { evhttp_connection_set_timeout(connection, 30) }
            }
            let context = Unmanaged.passRetained(Completion(completion)).toOpaque()
            guard let connection, let request = evhttp_request_new(adminResponseCallback, context) else {
                Unmanaged<Completion>.fromOpaque(context).release()
                return completion(Response(status: 0, body: ""))
            }
            let headers = evhttp_request_get_output_headers(request)
            evhttp_add_header(headers, "Host", address.description)
            if let token { evhttp_add_header(headers, "Authorization", "Bearer \(token)") }
            if let data {
                evhttp_add_header(headers, "Content-Type", "application/json")
                let output = evhttp_request_get_output_buffer(request)
                data.withUnsafeBytes { _ = evbuffer_add(output, $0.baseAddress, $0.count) }
            }
            let commands = [
                "GET": EVHTTP_REQ_GET, "POST": EVHTTP_REQ_POST, "PUT": EVHTTP_REQ_PUT, "DELETE": EVHTTP_REQ_DELETE,
                "PATCH": EVHTTP_REQ_PATCH, "OPTIONS": EVHTTP_REQ_OPTIONS,
            ]
            guard let command = commands[method] else {
                evhttp_request_free(request)
                Unmanaged<Completion>.fromOpaque(context).release()
                return completion(Response(status: 0, body: ""))
            }
            // On failure libevent has freed the request and called back (with no answer).
            _ = evhttp_make_request(connection, request, command, path)
        }
        loop.runSoon(work)
    }

    /// `text` escaped for a path segment.
    private static func encode(_ text: String) -> String {
        guard let encoded = evhttp_uriencode(text, -1, 0) else { return text }
        defer { Glibc.free(encoded) }
        return String(cString: encoded)
    }

    /// A request's completion, carried through libevent.
    final class Completion {
        let body: @Sendable (Response) -> Void
        init(_ body: @escaping @Sendable (Response) -> Void) { self.body = body }
    }
}

/// A value handed to another thread that will be its only user.
private struct UnsafeTransfer<Value>: @unchecked Sendable {
    // Safe: the sender never touches `value` again.
    let value: Value
    init(_ value: Value) { self.value = value }
}

private func adminResponseCallback(_ request: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    let completion = Unmanaged<AdminClient.Completion>.fromOpaque(context!).takeRetainedValue()
    guard let request else { return completion.body(.init(status: 0, body: "")) }
    let status = Int(evhttp_request_get_response_code(request))
    var body = ""
    if let input = evhttp_request_get_input_buffer(request) {
        let length = evbuffer_get_length(input)
        if length > 0, let bytes = evbuffer_pullup(input, length) {
            body = String(decoding: UnsafeBufferPointer(start: bytes, count: length), as: UTF8.self)
        }
    }
    completion.body(.init(status: status, body: body))
}
