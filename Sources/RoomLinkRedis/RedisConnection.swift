import CHiredis
@_spi(RoomLinkInternals) import RoomLinkLibevent
import RoomLinkRuntime

/// One asynchronous connection to Redis (hiredis's `redisAsyncContext`), attached to a libevent loop with hiredis's
/// own libevent adapter: its socket is one more event on the loop that runs the rooms, and its replies arrive there.
///
/// A connection is the loop's alone: create it, call it and let it go on the loop's thread. Commands are written in
/// the order they are sent and answered in that order (Redis's pipelining); a command sent before the connection is
/// up waits for it. When the connection fails or drops, every command waiting for an answer is answered `nil`, and
/// ``onDisconnect`` is called once.
///
/// A subscribed connection (``subscribe(_:)``) takes only (un)subscriptions; its messages go to ``onMessage``.
final class RedisConnection {
    let loop: LibeventLoop
    let endpoint: RedisEndpoint
    private var context: UnsafeMutablePointer<redisAsyncContext>?
    /// Whether the connection is up (connected, and not closing).
    private(set) var isConnected = false
    /// Called once the connection is up.
    var onConnect: (() -> Void)?
    /// Called once when the connection fails or drops, with why; the connection is finished then.
    var onDisconnect: ((String) -> Void)?
    /// A message on a channel the connection subscribed to: the channel, the payload.
    var onMessage: ((String, String) -> Void)?
    /// A subscription confirmed: the channel.
    var onSubscribed: ((String) -> Void)?
    /// An unsubscription confirmed: the channel.
    var onUnsubscribed: ((String) -> Void)?

    init(loop: LibeventLoop, endpoint: RedisEndpoint) {
        self.loop = loop
        self.endpoint = endpoint
    }

    /// Starts connecting; ``onConnect`` or ``onDisconnect`` tells how it went. Returns `false` (and calls neither) when
    /// hiredis could not even start.
    func connect() -> Bool {
        precondition(loop.isInServiceThread, "a Redis connection is used on its loop only")
        guard context == nil else { return true }
        guard let context = redisAsyncConnect(endpoint.host, Int32(endpoint.port)) else { return false }
        if context.pointee.err != 0 {
            redisAsyncFree(context)
            return false
        }
        guard CHiredis_attach(context, loop.eventBase) == REDIS_OK else {
            redisAsyncFree(context)
            return false
        }
        // The context keeps its connection alive until hiredis is done with it (`finish`).
        context.pointee.data = Unmanaged.passRetained(self).toOpaque()
        redisAsyncSetConnectCallback(context, redisConnected)
        redisAsyncSetDisconnectCallback(context, redisDisconnected)
        self.context = context
        if endpoint.database != 0 { send(["SELECT", String(endpoint.database)]) }
        return true
    }

    /// Whether ``close()`` is freeing a context that never connected: its commands are answered `nil` inside the
    /// call, in its caller's turn on the loop, not as a callback of the loop.
    fileprivate private(set) var freeing = false

    /// Closes the connection once what was sent is answered; ``onDisconnect`` follows. A connection still connecting
    /// is closed at once: its waiting commands are answered `nil` and ``onDisconnect`` is called before this returns.
    func close() {
        guard let context else { return }
        isConnected = false
        guard context.pointee.c.flags & REDIS_CONNECTED != 0 else {
            // hiredis 0.14 frees a context closed before it connected and calls neither callback (its disconnect
            // callback is for a connection that was up), so the context's reference to this connection would never
            // be let go: one connection per reconnect attempt in which the other connection failed first. The
            // context is freed here, and the connection finishes as a closed one does.
            self.context = nil
            freeing = true
            redisAsyncFree(context)
            freeing = false
            finish("closed")
            return
        }
        redisAsyncDisconnect(context)
    }

    /// Sends a command; `reply` (if any) gets its answer on the loop, or `nil` if the connection fails first.
    func send(_ arguments: [String], reply: ((RedisReply?) -> Void)? = nil) {
        precondition(loop.isInServiceThread, "a Redis connection is used on its loop only")
        guard let context else {
            reply?(nil)
            return
        }
        let box = reply.map { Unmanaged.passRetained(RedisReplyBox(self, $0)).toOpaque() }
        let status = Self.withArgv(arguments) { count, argv, lengths in
            redisAsyncCommandArgv(context, box == nil ? nil : redisReplied, box, count, argv, lengths)
        }
        if status != REDIS_OK, let box {
            Unmanaged<RedisReplyBox>.fromOpaque(box).takeRetainedValue().body(nil)
        }
    }

    /// Subscribes to `channel`: its messages go to ``onMessage``, the confirmation to ``onSubscribed``.
    func subscribe(_ channel: String) {
        guard let context else { return }
        _ = Self.withArgv(["SUBSCRIBE", channel]) { count, argv, lengths in
            redisAsyncCommandArgv(context, redisPushed, nil, count, argv, lengths)
        }
    }

    func unsubscribe(_ channel: String) {
        guard let context else { return }
        _ = Self.withArgv(["UNSUBSCRIBE", channel]) { count, argv, lengths in
            redisAsyncCommandArgv(context, redisPushed, nil, count, argv, lengths)
        }
    }

    /// Calls `body` with C's argc, argv and argument lengths for `arguments` (hiredis copies them before returning).
    private static func withArgv(
        _ arguments: [String],
        _ body: (Int32, UnsafeMutablePointer<UnsafePointer<CChar>?>, UnsafePointer<Int>) -> Int32
    ) -> Int32 {
        var bytes: [UInt8] = []
        var offsets: [Int] = []
        var lengths: [Int] = []
        for argument in arguments {
            offsets.append(bytes.count)
            bytes.append(contentsOf: argument.utf8)
            lengths.append(bytes.count - offsets.last!)
        }
        bytes.append(0)
        return bytes.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self)
            var argv: [UnsafePointer<CChar>?] = offsets.map { base + $0 }
            return argv.withUnsafeMutableBufferPointer { argv in
                lengths.withUnsafeBufferPointer { lengths in
                    body(Int32(arguments.count), argv.baseAddress!, lengths.baseAddress!)
                }
            }
        }
    }

    fileprivate func connected(status: Int32) {
        if status == REDIS_OK {
            isConnected = true
            onConnect?()
        } else {
            // hiredis frees a context whose connection failed, and calls no disconnect callback.
            let reason = context.map { Self.errorText($0) } ?? "connection failed"
            context = nil
            finish(reason)
        }
    }

    fileprivate func disconnected(status: Int32) {
        let reason = status == REDIS_OK ? "closed" : context.map { Self.errorText($0) } ?? "connection lost"
        context = nil
        finish(reason)
    }

    private func finish(_ reason: String) {
        isConnected = false
        let handler = onDisconnect
        onDisconnect = nil
        onConnect = nil
        onMessage = nil
        onSubscribed = nil
        onUnsubscribed = nil
        handler?(reason)
        // The context's reference (hiredis frees the context when this callback returns).
        Unmanaged.passUnretained(self).release()
    }

    fileprivate func pushed(_ reply: RedisReply) {
        guard let parts = reply.elements, parts.count >= 3, let kind = parts[0].text, let channel = parts[1].text
        else { return }
        switch kind {
        case "message": onMessage?(channel, parts[2].text ?? "")
        case "subscribe": onSubscribed?(channel)
        case "unsubscribe": onUnsubscribed?(channel)
        default: break
        }
    }

    private static func errorText(_ context: UnsafeMutablePointer<redisAsyncContext>) -> String {
        // `errstr` points into the context (hiredis's `char *errstr`), not an array of its own.
        context.pointee.errstr.map { String(cString: $0) } ?? "error \(context.pointee.err)"
    }

    fileprivate static func owner(_ context: UnsafePointer<redisAsyncContext>?) -> RedisConnection? {
        guard let data = context?.pointee.data else { return nil }
        return Unmanaged<RedisConnection>.fromOpaque(data).takeUnretainedValue()
    }
}

/// A command's reply handler, passed through hiredis as its private data (retained until the reply).
private final class RedisReplyBox {
    /// Its connection, kept for the loop: hiredis may answer after the context let its connection go (a failed
    /// connection answers its waiting commands `nil` as it is freed).
    let connection: RedisConnection
    let body: (RedisReply?) -> Void
    init(_ connection: RedisConnection, _ body: @escaping (RedisReply?) -> Void) {
        self.connection = connection
        self.body = body
    }
}

// hiredis's callbacks, on the connection's loop. Each runs inside the loop's `runCallback`, so that the jobs its
// body makes runnable (a room's actor, pinned to this loop) run before libevent waits again.

private func redisConnected(_ context: UnsafePointer<redisAsyncContext>?, _ status: Int32) {
    guard let connection = RedisConnection.owner(context) else { return }
    connection.loop.runCallback { connection.connected(status: status) }
}

private func redisDisconnected(_ context: UnsafePointer<redisAsyncContext>?, _ status: Int32) {
    guard let connection = RedisConnection.owner(context) else { return }
    connection.loop.runCallback { connection.disconnected(status: status) }
}

private func redisReplied(
    _ context: UnsafeMutablePointer<redisAsyncContext>?,
    _ reply: UnsafeMutableRawPointer?,
    _ box: UnsafeMutableRawPointer?
) {
    guard let privateData = box else { return }
    let box = Unmanaged<RedisReplyBox>.fromOpaque(privateData).takeRetainedValue()
    let answer = reply.map { RedisReply(UnsafePointer($0.assumingMemoryBound(to: redisReply.self))) }
    if box.connection.freeing {
        // Inside `close()`: already on the loop, in whatever its caller runs (an actor's job, maybe), where a
        // callback's turn — which runs the loop's jobs — must not begin.
        box.body(answer)
    } else {
        box.connection.loop.runCallback { box.body(answer) }
    }
}

private func redisPushed(
    _ context: UnsafeMutablePointer<redisAsyncContext>?,
    _ reply: UnsafeMutableRawPointer?,
    _ box: UnsafeMutableRawPointer?
) {
    guard let reply, let connection = RedisConnection.owner(context) else { return }
    let answer = RedisReply(UnsafePointer(reply.assumingMemoryBound(to: redisReply.self)))
    connection.loop.runCallback { connection.pushed(answer) }
}
