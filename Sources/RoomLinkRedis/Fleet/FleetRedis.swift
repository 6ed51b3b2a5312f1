@_spi(RoomLinkInternals) import RoomLinkLibevent
import RoomLinkRuntime

/// A fleet's one connection to Redis, on a libevent loop of its own (its own thread): commands are awaited from any
/// task, and the run's loops never wait on Redis.
///
/// Once the connection drops, every command answers `nil` and ``lostReason`` says why; ``reconnect()`` tries again.
final class FleetRedis: @unchecked Sendable {
    // Safe: `connection` and `lost` are read and written on `loop`'s thread only (every access hops there first).

    let endpoint: RedisEndpoint
    private let group: LibeventLoopGroup
    private let loop: LibeventLoop
    private var connection: RedisConnection?
    private var lost: String?

    private init(endpoint: RedisEndpoint, group: LibeventLoopGroup) {
        self.endpoint = endpoint
        self.group = group
        self.loop = group.eventLoops[0]
    }

    /// Connects to `endpoint`, within `timeout`.
    ///
    /// - Throws: ``FleetError/unreachable(_:reason:)`` naming the address and why.
    static func connect(
        _ endpoint: RedisEndpoint,
        timeout: Duration = .seconds(5)
    ) async throws(FleetError)
        -> FleetRedis
    {
        let group: LibeventLoopGroup
        do {
            group = try LibeventLoopGroup(configuration: .init(loopCount: 1))
        } catch {
            throw .unreachable(endpoint.description, reason: error.description)
        }
        let redis = FleetRedis(endpoint: endpoint, group: group)
        if let reason = await redis.open(timeout: timeout) {
            group.shutdown()
            throw .unreachable(endpoint.description, reason: reason)
        }
        return redis
    }

    /// Opens the connection; `nil` when it is up, otherwise why not.
    private func open(timeout: Duration) async -> String? {
        await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            loop.execute { [self] in
                let attempt = Attempt(RedisConnection(loop: loop, endpoint: endpoint), continuation)
                let connection = attempt.connection
                connection.onConnect = { [self] in
                    self.connection = connection
                    lost = nil
                    attempt.answer(nil)
                }
                connection.onDisconnect = { [self] reason in
                    if self.connection === connection {
                        self.connection = nil
                        lost = reason
                    }
                    attempt.answer(reason)
                }
                guard connection.connect() else { return attempt.answer("hiredis could not start a connection") }
                _ = try? loop.schedule(after: timeout) { [self] in
                    guard !attempt.answered else { return }
                    attempt.answer("no answer within \(timeout)")
                    if self.connection !== attempt.connection { attempt.connection.close() }
                }
            }
        }
    }

    /// One attempt to connect: answered once, by the connection's callbacks or its timeout.
    private final class Attempt: @unchecked Sendable {
        // Safe: made and used on the loop's thread only — the connection's callbacks and the timeout's timer run
        // there.
        let connection: RedisConnection
        private let continuation: CheckedContinuation<String?, Never>
        private(set) var answered = false

        init(_ connection: RedisConnection, _ continuation: CheckedContinuation<String?, Never>) {
            self.connection = connection
            self.continuation = continuation
        }

        func answer(_ reason: String?) {
            guard !answered else { return }
            answered = true
            continuation.resume(returning: reason)
        }
    }

    /// Tries to connect again after the connection dropped; `nil` when it is up.
    func reconnect(timeout: Duration = .seconds(2)) async -> String? {
        let up = await onLoop { self.connection != nil }
        return up ? nil : await open(timeout: timeout)
    }

    /// Why the connection dropped, if it did.
    var lostReason: String? {
        get async { await onLoop { self.connection == nil ? (self.lost ?? "not connected") : nil } }
    }

    /// Sends a command and waits for its reply: `nil` when the connection is down or drops first.
    func command(_ arguments: [String]) async -> RedisReply? {
        await withCheckedContinuation { (continuation: CheckedContinuation<RedisReply?, Never>) in
            loop.execute { [self] in
                guard let connection else { return continuation.resume(returning: nil) }
                connection.send(arguments) { continuation.resume(returning: $0) }
            }
        }
    }

    /// Closes the connection and its thread.
    func close() async {
        await onLoop {
            self.connection?.close()
            self.connection = nil
        }
        group.shutdown()
    }

    private func onLoop<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            loop.execute { continuation.resume(returning: body()) }
        }
    }
}
