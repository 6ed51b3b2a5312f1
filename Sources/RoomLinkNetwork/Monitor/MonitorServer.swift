internal import CLibevent
import Foundation
@_spi(RoomLinkInternals) import RoomLinkLibevent
import RoomLinkRuntime

#if canImport(Glibc)
import Glibc
#endif

/// A GET request to a ``MonitorServer``: its path (without the query) and what it accepts.
public struct MonitorRequest: Sendable, Equatable {
    public var path: String
    /// The `Accept` header, or empty.
    public var accept: String

    public init(path: String, accept: String = "") {
        self.path = path
        self.accept = accept
    }
}

/// A ``MonitorServer``'s answer.
public struct MonitorResponse: Sendable, Equatable {
    public var status: Int
    public var contentType: String
    public var body: [UInt8]

    public init(status: Int = 200, contentType: String, body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }

    public init(status: Int = 200, contentType: String, text: String) {
        self.init(status: status, contentType: contentType, body: Array(text.utf8))
    }

    /// An error as `{"error": message}`.
    public static func error(_ status: Int, _ message: String) -> MonitorResponse {
        struct Body: Encodable { var error: String }
        let data = (try? JSONEncoder().encode(Body(error: message))) ?? Data("{}".utf8)
        return MonitorResponse(status: status, contentType: "application/json", body: Array(data) + [0x0A])
    }
}

/// A small read-only HTTP server on a libevent loop of its own (its own thread): `roomlink load --metrics` and
/// `--dashboard` serve on it. Each request is answered by `handler`, on that thread, so a scrape or a browser left
/// open costs the run only the copies its handler makes — it never waits on the run's loops, and they never wait on
/// it. GET and HEAD only; anything else is a 405 naming them.
public final class MonitorServer: @unchecked Sendable {
    // Safe: `http` is created, used and freed on `loop`'s thread only (evhttp's callbacks run there; `stop` hops
    // there first). `handler` is Sendable. `address` is written once, in `start`, before the server is returned to
    // anyone; the loop's thread never reads it.

    /// Where the server listens (the port the system chose for port 0).
    public private(set) var address: SocketAddress
    private let group: LibeventLoopGroup
    private let loop: LibeventLoop
    private let handler: @Sendable (MonitorRequest) -> MonitorResponse
    private var http: OpaquePointer?
    /// The loop thread's CPU clock while it runs, then the CPU time it had used when the server stopped.
    private let threadCPU = LockedBox<(clock: clockid_t?, final: Double?)>((nil, nil))

    /// The CPU time, in seconds, the server's thread has used: answering requests (the handler's snapshots and pages)
    /// and its HTTP I/O — what watching a run costs the run's process. Readable from any thread; final once the
    /// server has stopped.
    public var cpuSeconds: Double {
        threadCPU.withLock { usage in
            if let final = usage.final { return final }
            guard let clock = usage.clock else { return 0 }
            return Self.seconds(of: clock) ?? 0
        }
    }

    private static func seconds(of clock: clockid_t) -> Double? {
        var time = timespec()
        guard clock_gettime(clock, &time) == 0 else { return nil }
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    private init(
        address: SocketAddress,
        group: LibeventLoopGroup,
        handler: @escaping @Sendable (MonitorRequest) -> MonitorResponse
    ) {
        self.address = address
        self.group = group
        self.loop = group.eventLoops[0]
        self.handler = handler
    }

    /// Listens on `address` on a thread of its own.
    ///
    /// - Throws: ``NetworkError/cannotListen(address:reason:)`` when the address is taken or cannot be bound.
    public static func start(
        at address: SocketAddress,
        handler: @escaping @Sendable (MonitorRequest) -> MonitorResponse
    ) async throws(NetworkError) -> MonitorServer {
        let group: LibeventLoopGroup
        do {
            group = try LibeventLoopGroup(configuration: .init(loopCount: 1))
        } catch {
            throw .cannotListen(address: "\(address)", reason: error.description)
        }
        let server = MonitorServer(address: address, group: group, handler: handler)
        let result: Result<SocketAddress, NetworkError> = await withCheckedContinuation { continuation in
            server.loop.execute { continuation.resume(returning: server.open(address)) }
        }
        switch result {
        case .success(let bound):
            server.address = bound
            return server
        case .failure(let error):
            group.shutdown()
            throw error
        }
    }

    private func open(_ address: SocketAddress) -> Result<SocketAddress, NetworkError> {
        var clock = clockid_t()
        if pthread_getcpuclockid(pthread_self(), &clock) == 0 { threadCPU.withLock { $0.clock = clock } }
        guard let http = evhttp_new(loop.eventBase) else {
            return .failure(.cannotListen(address: "\(address)", reason: "evhttp_new failed"))
        }
        let methods = [
            EVHTTP_REQ_GET, EVHTTP_REQ_POST, EVHTTP_REQ_HEAD, EVHTTP_REQ_PUT, EVHTTP_REQ_DELETE, EVHTTP_REQ_OPTIONS,
            EVHTTP_REQ_PATCH,
        ]
        evhttp_set_allowed_methods(http, UInt16(methods.reduce(0) { $0 | $1.rawValue }))
        evhttp_set_max_body_size(http, 16 * 1024)
        evhttp_set_max_headers_size(http, 16 * 1024)
        evhttp_set_timeout(http, 30)
        evhttp_set_gencb(http, monitorRequestCallback, Unmanaged.passUnretained(self).toOpaque())
        guard let bound = evhttp_bind_socket_with_handle(http, address.host, address.port) else {
            let reason = Sockets.errorText(errno)
            evhttp_free(http)
            return .failure(.cannotListen(address: "\(address)", reason: reason))
        }
        self.http = http
        return .success(ResolvedAddress.local(of: evhttp_bound_socket_get_fd(bound)) ?? address)
    }

    /// Closes the server and its thread; requests in flight are dropped.
    public func stop() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute { [self] in
                if let http { evhttp_free(http) }
                http = nil
                let final = Self.seconds(of: CLOCK_THREAD_CPUTIME_ID)
                threadCPU.withLock { $0 = (nil, final ?? 0) }
                continuation.resume()
            }
        }
        group.shutdown()
    }

    fileprivate func handle(_ request: OpaquePointer) {
        let method = evhttp_request_get_command(request)
        let uri = evhttp_request_get_uri(request).map { String(cString: $0) } ?? "/"
        let path = String(uri.prefix { $0 != "?" && $0 != "#" })
        let accept = evhttp_find_header(evhttp_request_get_input_headers(request), "Accept").map { String(cString: $0) }
        let response: MonitorResponse
        if method == EVHTTP_REQ_GET || method == EVHTTP_REQ_HEAD {
            response = handler(MonitorRequest(path: path, accept: accept ?? ""))
        } else {
            response = .error(405, "\(path) takes GET and HEAD only")
        }
        let headers = evhttp_request_get_output_headers(request)
        evhttp_add_header(headers, "Content-Type", response.contentType)
        evhttp_add_header(headers, "Cache-Control", "no-store")
        if response.status == 405 { evhttp_add_header(headers, "Allow", "GET, HEAD") }
        let buffer = evbuffer_new()
        response.body.withUnsafeBytes { _ = evbuffer_add(buffer, $0.baseAddress, $0.count) }
        evhttp_send_reply(request, Int32(response.status), HTTPStatus.reason(response.status), buffer)
        evbuffer_free(buffer)
    }
}

private func monitorRequestCallback(_ request: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    guard let request, let context else { return }
    Unmanaged<MonitorServer>.fromOpaque(context).takeUnretainedValue().handle(request)
}
