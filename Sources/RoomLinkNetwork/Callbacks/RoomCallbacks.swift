internal import CLibevent
import Foundation
import Logging
public import RoomLinkEngine
@_spi(RoomLinkInternals) public import RoomLinkLibevent
import RoomLinkRuntime
import Synchronization

/// Where a server's room callbacks go and how (`roomlink serve --callback URL …`).
public struct CallbackSettings: Sendable {
    /// The receivers; each gets every callback, by its own queue.
    public var urls: [HTTPTokenSource.Endpoint]
    /// The vendor's delivery rules, disorder and bounds.
    public var rules: CallbackDeliveryRules
    /// Where to write the truth beside the callbacks (JSON Lines, docs/callbacks.md), if anywhere.
    public var truthPath: String?
    /// Kept-alive connections per receiver: HTTP/1.1, one request at a time on each, so also the requests in flight
    /// per receiver at most (``CallbackDeliveryRules/concurrency`` is set to it).
    public var connectionsPerURL: Int
    /// How an `https://` receiver's certificate is verified.
    public var tls: TLSClientConfiguration

    public init(
        urls: [HTTPTokenSource.Endpoint],
        rules: CallbackDeliveryRules,
        truthPath: String? = nil,
        connectionsPerURL: Int = 16,
        tls: TLSClientConfiguration = .init()
    ) {
        self.urls = urls
        self.rules = rules
        self.truthPath = truthPath
        self.connectionsPerURL = max(1, connectionsPerURL)
        self.tls = tls
    }
}

/// What a server's callbacks have come to so far: counters any thread may read while the loops run (`/metrics`,
/// `serve`'s last line).
public final class CallbackStatistics: Sendable {
    /// One counter.
    public enum Counter: String, Sendable, CaseIterable {
        /// Callbacks the rooms emitted (once each, whatever the receivers).
        case emitted
        /// Requests sent (every attempt, duplicates included), over every receiver.
        case attempts
        /// Callbacks (and duplicates) a receiver took.
        case delivered
        /// Attempts that failed and were sent again.
        case retried
        /// Callbacks (and duplicates) whose every attempt failed.
        case lost
        /// Callbacks dropped before delivery (a full queue, too old).
        case dropped
        /// Duplicates sent on purpose (the vendor's documented duplicates).
        case duplicated
        /// Callbacks held back on purpose (the vendor's documented out-of-order arrival).
        case delayed
    }

    private let counters = (0..<Counter.allCases.count).map { _ in Cell() }
    private let failures = (0..<CallbackFailureCause.allCases.count).map { _ in Cell() }
    private let losses = (0..<CallbackFailureCause.allCases.count).map { _ in Cell() }
    private let drops = (0..<CallbackDropReason.allCases.count).map { _ in Cell() }
    private let pendingNow = Atomic<Int>(0)
    private let pendingPeak = Atomic<Int>(0)

    private final class Cell: Sendable {
        let value = Atomic<Int>(0)
    }

    package init() {}

    public subscript(_ counter: Counter) -> Int {
        counters[Counter.allCases.firstIndex(of: counter)!].value.load(ordering: .relaxed)
    }

    /// Failed attempts for `cause` (each retry's and each loss's).
    public func failures(_ cause: CallbackFailureCause) -> Int {
        failures[CallbackFailureCause.allCases.firstIndex(of: cause)!].value.load(ordering: .relaxed)
    }

    /// Callbacks lost whose last attempt failed for `cause`.
    public func losses(_ cause: CallbackFailureCause) -> Int {
        losses[CallbackFailureCause.allCases.firstIndex(of: cause)!].value.load(ordering: .relaxed)
    }

    /// Callbacks dropped for `reason`.
    public func drops(_ reason: CallbackDropReason) -> Int {
        drops[CallbackDropReason.allCases.firstIndex(of: reason)!].value.load(ordering: .relaxed)
    }

    /// Callbacks pending now over every receiver (queued, in flight, waiting to be sent again).
    public var pending: Int { pendingNow.load(ordering: .relaxed) }

    /// The most ever pending at once.
    public var peakPending: Int { pendingPeak.load(ordering: .relaxed) }

    /// One line: what came of the callbacks.
    public var summary: String {
        let causes = CallbackFailureCause.allCases.filter { failures($0) > 0 }.map { "\($0.rawValue) \(failures($0))" }
        let dropped = CallbackDropReason.allCases.filter { drops($0) > 0 }.map { "\($0.rawValue) \(drops($0))" }
        return "callbacks: \(self[.emitted]) emitted, \(self[.delivered]) delivered in \(self[.attempts]) attempts, "
            + "\(self[.retried]) retried, \(self[.lost]) lost, \(self[.dropped]) dropped"
            + (dropped.isEmpty ? "" : " (\(dropped.joined(separator: ", ")))")
            + ", \(self[.duplicated]) duplicates and \(self[.delayed]) held back on purpose; "
            + "failed attempts: \(causes.isEmpty ? "none" : causes.joined(separator: ", ")); "
            + "peak queue \(peakPending)"
    }

    func add(_ counter: Counter, _ amount: Int = 1) {
        counters[Counter.allCases.firstIndex(of: counter)!].value.add(amount, ordering: .relaxed)
    }

    func failed(_ cause: CallbackFailureCause) {
        failures[CallbackFailureCause.allCases.firstIndex(of: cause)!].value.add(1, ordering: .relaxed)
    }

    func lost(_ cause: CallbackFailureCause) {
        losses[CallbackFailureCause.allCases.firstIndex(of: cause)!].value.add(1, ordering: .relaxed)
        add(.lost)
    }

    func dropped(_ reason: CallbackDropReason) {
        drops[CallbackDropReason.allCases.firstIndex(of: reason)!].value.add(1, ordering: .relaxed)
        add(.dropped)
    }

    func pendingChanged(by delta: Int) {
        let now = pendingNow.add(delta, ordering: .relaxed).newValue
        var peak = pendingPeak.load(ordering: .relaxed)
        while now > peak {
            let (exchanged, original) = pendingPeak.compareExchange(
                expected: peak,
                desired: now,
                ordering: .relaxed
            )
            if exchanged { break }
            peak = original
        }
    }
}

/// A server's room callbacks (`roomlink serve --callback URL`): it hears every change of its rooms' membership
/// (`RoomMembershipObserver`), words each as the vendor does (``CallbackFormat``), writes the truth beside it, and
/// delivers it to every receiver by the vendor's rules (``CallbackDeliveryState``) — on one loop, over a few
/// kept-alive connections per receiver (libevent's HTTP client, TLS for `https://`).
///
/// Memory is bounded whatever a receiver does: each receiver holds at most ``CallbackDeliveryRules/capacity``
/// callbacks pending, and drops (and counts) the rest.
public final class RoomCallbacks: RoomMembershipObserver, Sendable {
    public let settings: CallbackSettings
    public let format: any CallbackFormat
    public let statistics = CallbackStatistics()
    let loop: LibeventLoop
    private let receivers: [CallbackReceiver]
    private let truth: CallbackTruth?
    /// Each room's members while it lives, and the last callback's number: one lock, so that numbers follow each
    /// room's order.
    private let rooms = LockedBox<(tracks: [String: RoomTrack], lastID: UInt64)>(([:], 0))
    /// Unix milliseconds at the loop clock's zero: the callbacks' times are the server's clock.
    let unixMsAtZero: Int64
    /// A LiveKit server's older counters (`roomlink_webhooks_total`), when it has them.
    private let webhookStatistics = LockedBox<NetworkServerStatistics?>(nil)

    private struct RoomTrack {
        var members: [String: (session: String, joinedAtMs: Int64, audience: Bool)] = [:]
        var updates: UInt64 = 0
        /// Each user's changes here so far (and the room's own, under ""), while the room lives.
        var ordinals: [String: UInt32] = [:]
    }

    /// Callbacks by `settings`, worded by `format`, delivered from `loop`.
    ///
    /// - Throws: ``NetworkError/tls(_:)`` when an `https://` receiver's TLS cannot be set up;
    ///   ``NetworkError/cannotWrite(path:reason:)`` when the truth file cannot be created.
    public init(settings: CallbackSettings, format: any CallbackFormat, loop: LibeventLoop) throws(NetworkError) {
        self.settings = settings
        self.format = format
        self.loop = loop
        unixMsAtZero = Int64(Date().timeIntervalSince1970 * 1000) - loop.now.nanoseconds / 1_000_000
        var tls: TLSContext?
        if settings.urls.contains(where: \.isSecure) {
            do {
                tls = try TLSContext(client: settings.tls)
            } catch {
                throw .tls(error)
            }
        }
        truth = try settings.truthPath.map { path throws(NetworkError) in try CallbackTruth(path: path) }
        // One request at a time on each connection: an attempt's timeout is the receiver's time, never a queue's.
        var rules = settings.rules
        rules.concurrency = settings.connectionsPerURL
        receivers = settings.urls.map {
            CallbackReceiver(
                url: $0,
                rules: rules,
                tls: $0.isSecure ? tls : nil,
                serverName: $0.host,
                loop: loop
            )
        }
        for receiver in receivers { receiver.attach(to: self) }
    }

    /// Counts LiveKit's deliveries in `statistics`' webhook counters too (`roomlink_webhooks_total`).
    package func countWebhooks(in statistics: NetworkServerStatistics) {
        webhookStatistics.withLock { $0 = statistics }
    }

    /// Writes out the truth file; callbacks still pending stay unsettled in it.
    public func finish() {
        truth?.flush()
    }

    /// The server clock's Unix milliseconds at `now`.
    func unixMs(_ now: RuntimeInstant) -> Int64 { unixMsAtZero + now.nanoseconds / 1_000_000 }

    // MARK: - Membership

    public func membershipChanged(
        _ change: MembershipChange,
        inRoom roomID: String,
        roomSessionID: String,
        at now: RuntimeInstant
    ) {
        let atMs = unixMs(now)
        let callbacks = rooms.withLock { rooms -> [RoomCallback] in
            var track = rooms.tracks[roomID] ?? RoomTrack()
            var made: [RoomCallback] = []
            func make(
                _ event: RoomCallback.Event,
                user: String = "",
                session: String = "",
                reason: RoomCallback.LeaveReason? = nil,
                joinedAtMs: Int64 = 0,
                audience: Bool = false
            ) {
                guard format.sends(event) else { return }
                let ordinal = track.ordinals[user, default: 0] + 1
                track.ordinals[user] = ordinal
                rooms.lastID += 1
                let id = rooms.lastID
                made.append(
                    RoomCallback(
                        id: id,
                        event: event,
                        roomID: roomID,
                        roomSession: roomSessionID,
                        userID: user,
                        session: session,
                        reason: reason,
                        atMs: atMs,
                        joinedAtMs: joinedAtMs,
                        // Each event's own number: increasing for every user's events (Agora's clientSeq).
                        userSequence: id,
                        roomSequence: track.updates,
                        members: track.members.count,
                        ordinal: ordinal,
                        audience: audience
                    )
                )
            }
            switch change {
            case .joined(let user, let session, let audience):
                if track.members.isEmpty { make(.roomCreated) }
                track.members[user] = (session.description, atMs, audience)
                track.updates += 1
                make(.joined, user: user, session: session.description, joinedAtMs: atMs, audience: audience)
            case .roleChanged(let user, let session, let audience):
                guard let member = track.members[user], member.session == session.description else { return [] }
                track.members[user]?.audience = audience
                make(
                    .roleChanged,
                    user: user,
                    session: member.session,
                    joinedAtMs: member.joinedAtMs,
                    audience: audience
                )
            case .left(let user, let session, let departure, let kicked):
                guard let member = track.members[user], member.session == session.description else { return [] }
                track.members[user] = nil
                track.updates += 1
                make(
                    .left,
                    user: user,
                    session: member.session,
                    reason: RoomCallback.LeaveReason(departure, kicked: kicked),
                    joinedAtMs: member.joinedAtMs,
                    audience: member.audience
                )
                if track.members.isEmpty { make(.roomDestroyed) }
            }
            rooms.tracks[roomID] = track.members.isEmpty ? nil : track
            return made
        }
        guard !callbacks.isEmpty else { return }
        statistics.add(.emitted, callbacks.count)
        if let truth { for callback in callbacks { truth.emitted(callback, vendor: format.vendor) } }
        loop.execute { [self] in
            for receiver in receivers { receiver.emit(callbacks) }
        }
    }

    // MARK: - What the receivers did (on `loop`)

    func perform(_ actions: [CallbackDeliveryState.Action], receiver: CallbackReceiver, at now: RuntimeInstant) {
        let webhooks = format.vendor == .livekit ? webhookStatistics.withLock { $0 } : nil
        for action in actions {
            switch action {
            case .send(let ticket, let callback, let attempt, _):
                statistics.add(.attempts)
                // Sent now, on the wall clock, whatever the server's time scale: a receiver checks a signature's
                // time (LiveKit's JWT) against its own clock. The event's own times are the server's clock.
                let sentAtMs = Int64(Date().timeIntervalSince1970 * 1000)
                receiver.send(ticket, format.request(for: callback, attempt: attempt, sentAtMs: sentAtMs))
            case .marked(let callback, let copy, let delay):
                statistics.add(copy == .duplicate ? .duplicated : .delayed)
                truth?.marked(callback, copy: copy, delay: delay, receiver: receiver.url.description, atMs: unixMs(now))
            case .retry(_, _, let cause, _, _):
                statistics.failed(cause)
                statistics.add(.retried)
            case .settled(let callback, let copy, let outcome):
                switch outcome {
                case .delivered:
                    statistics.add(.delivered)
                    webhooks?.add(.webhooksDelivered)
                case .lost(let cause, _):
                    statistics.failed(cause)
                    statistics.lost(cause)
                    webhooks?.add(.webhooksFailed)
                case .dropped(let reason):
                    statistics.dropped(reason)
                    webhooks?.add(.webhooksDropped)
                }
                truth?.settled(
                    callback,
                    copy: copy,
                    outcome: outcome,
                    receiver: receiver.url.description,
                    atMs: unixMs(now)
                )
            }
        }
    }
}

/// One receiver's delivery: its state, connections and requests in flight, all on the callbacks' loop.
final class CallbackReceiver: HTTPExchangeOwner, CallbackEndWork, @unchecked Sendable {
    // Safe: `attach(to:)` runs before any callback can reach the receiver; every other method runs on the
    // callbacks' loop's thread — emissions hop there, and libevent's callbacks and timers run there.
    let url: HTTPTokenSource.Endpoint
    private var state: CallbackDeliveryState
    private let tls: TLSContext?
    private let serverName: String?
    private weak var owner: RoomCallbacks?
    private let loop: LibeventLoop
    private var slot: UInt64 = 0
    private var connections: [OpaquePointer?]
    private var busy: [Int]
    private var inFlight: [UInt64: Request] = [:]
    private var wake: (handle: TimerHandle, at: RuntimeInstant)?
    /// Answers libevent gave in the current callback, taken to the state at its end.
    private var answers: [(UInt64, CallbackAnswer)] = []

    private struct Request {
        let connection: Int
        let timeout: TimerHandle?
        var error: evhttp_request_error?
    }

    init(
        url: HTTPTokenSource.Endpoint,
        rules: CallbackDeliveryRules,
        tls: TLSContext?,
        serverName: String,
        loop: LibeventLoop
    ) {
        self.url = url
        self.loop = loop
        self.state = CallbackDeliveryState(rules: rules)
        self.tls = tls
        self.serverName = tls == nil ? nil : serverName
        // One connection for each request in flight (`RoomCallbacks` sets the concurrency to the connections).
        connections = Array(repeating: nil, count: rules.concurrency)
        busy = Array(repeating: 0, count: rules.concurrency)
    }

    /// Joins `owner` (which outlives it: it holds its receivers), and takes libevent's answers from now on.
    func attach(to owner: RoomCallbacks) {
        self.owner = owner
        slot = HTTPExchanges.register(self)
    }

    func emit(_ callbacks: [RoomCallback]) {
        guard let owner else { return }
        let now = loop.now
        for callback in callbacks {
            let before = state.pending
            let actions = state.emit(callback, at: now)
            owner.statistics.pendingChanged(by: state.pending - before)
            owner.perform(actions, receiver: self, at: now)
        }
        rearm()
    }

    /// Sends `request` as attempt `ticket`.
    func send(_ ticket: UInt64, _ request: CallbackRequest) {
        guard owner != nil else { return }
        let index = busy.indices.min { busy[$0] < busy[$1] } ?? 0
        if connections[index] == nil { connections[index] = makeConnection() }
        guard let connection = connections[index],
            let made = evhttp_request_new(httpExchangeAnswered, HTTPExchanges.tag(slot, ticket))
        else {
            // Answered one step later, as any failure is: never inside the state's own step.
            _ = try? loop.schedule(after: .zero) { [self] in answer(ticket, .failed(.refused)) }
            return
        }
        evhttp_request_set_error_cb(made, httpExchangeFailed)
        let headers = evhttp_request_get_output_headers(made)
        evhttp_add_header(headers, "Host", url.hostHeader)
        evhttp_add_header(headers, "Content-Type", request.contentType)
        evhttp_add_header(headers, "User-Agent", "roomlink-callbacks")
        for header in request.headers { evhttp_add_header(headers, header.name, header.value) }
        request.body.withUnsafeBytes {
            _ = evbuffer_add(evhttp_request_get_output_buffer(made), $0.baseAddress, $0.count)
        }
        let timeout = try? loop.schedule(after: state.rules.timeout) { [self] in timedOut(ticket) }
        inFlight[ticket] = Request(connection: index, timeout: timeout)
        busy[index] += 1
        // On failure libevent has freed the request and called back (with no answer).
        _ = evhttp_make_request(connection, made, EVHTTP_REQ_POST, url.pathTemplate)
    }

    private func makeConnection() -> OpaquePointer? {
        guard
            let connection = TLSContext.httpConnection(
                tls,
                on: loop.eventBase,
                host: url.host,
                port: url.port,
                serverName: serverName
            )
        else { return nil }
        evhttp_connection_set_max_body_size(connection, 65_536)
        evhttp_connection_set_max_headers_size(connection, 65_536)
        // libevent's own limit, behind the vendor's: an attempt that hangs is given up on by its timer first.
        evhttp_connection_set_timeout(
            connection,
            Int32(clamping: max(1, state.rules.timeout.components.seconds * 2 + 1))
        )
        evhttp_connection_set_retries(connection, 0)
        return connection
    }

    private func timedOut(_ ticket: UInt64) {
        guard let request = inFlight.removeValue(forKey: ticket) else { return }
        busy[request.connection] -= 1
        // The connection goes with the attempt, as an HTTP client's does: the next attempt must not queue behind an
        // answer that may never come (the callbacks of its freed requests find no attempt).
        if let connection = connections[request.connection] {
            evhttp_connection_free(connection)
            connections[request.connection] = nil
        }
        answer(ticket, .failed(.timeout))
    }

    func failed(_ id: UInt64, error: evhttp_request_error) {
        inFlight[id]?.error = error
    }

    func answered(_ id: UInt64, request: OpaquePointer?) {
        guard let waiting = inFlight.removeValue(forKey: id) else { return }
        busy[waiting.connection] -= 1
        if let timeout = waiting.timeout { loop.cancel(timeout) }
        let status = request.map { Int(evhttp_request_get_response_code($0)) } ?? 0
        guard status != 0 else {
            let (cause, _) = HTTPExchanges.failure(
                of: waiting.error,
                connection: connections[waiting.connection],
                secure: tls != nil
            )
            let mapped: CallbackFailureCause =
                switch cause {
                case .timeout: .timeout
                case .closed: .closed
                case .malformed, .tooLong: .malformed
                case .tls: .tls
                case .refused: .refused
                }
            return later(id, .failed(mapped))
        }
        let body = HTTPExchanges.body(of: request)
        later(id, .answered(status: status, bodyIsJSON: Self.isJSON(body)))
    }

    /// Takes `answer` to the state once libevent's callback has returned: its next step may send on the connection
    /// that answered, or free it.
    private func later(_ id: UInt64, _ answer: CallbackAnswer) {
        loop.runCallback {
            if answers.isEmpty { loop.atCallbackEnd(self) }
            answers.append((id, answer))
        }
    }

    func callbackEnded() {
        let taken = answers
        answers.removeAll(keepingCapacity: true)
        for (id, result) in taken { answer(id, result) }
    }

    /// Whether `body` is one JSON document (what Agora asks of an answer).
    static func isJSON(_ body: [UInt8]) -> Bool {
        struct AnyJSON: Decodable {
            init(from decoder: any Decoder) throws {
                if var array = try? decoder.unkeyedContainer() {
                    while !array.isAtEnd { _ = try array.decode(AnyJSON.self) }
                } else if let object = try? decoder.container(keyedBy: AnyKey.self) {
                    for key in object.allKeys { _ = try object.decode(AnyJSON.self, forKey: key) }
                } else {
                    let value = try decoder.singleValueContainer()
                    if value.decodeNil() { return }
                    if (try? value.decode(Bool.self)) != nil || (try? value.decode(Double.self)) != nil { return }
                    _ = try value.decode(String.self)
                }
            }
        }
        struct AnyKey: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }
        return (try? JSONDecoder().decode(AnyJSON.self, from: Data(body))) != nil
    }

    private func answer(_ ticket: UInt64, _ answer: CallbackAnswer) {
        guard let owner else { return }
        let now = loop.now
        let before = state.pending
        let actions = state.answered(ticket, answer, at: now)
        owner.statistics.pendingChanged(by: state.pending - before)
        owner.perform(actions, receiver: self, at: now)
        rearm()
    }

    /// Arms the timer for the state's next wake, when it is earlier than the one armed.
    private func rearm() {
        guard let next = state.nextWake else { return }
        if let wake, wake.at <= next { return }
        if let wake { loop.cancel(wake.handle) }
        guard let handle = try? loop.scheduleTimer(at: next, period: nil, handler: WakeHandler(receiver: self))
        else { return }
        wake = (handle, next)
    }

    fileprivate func woke() {
        wake = nil
        guard let owner else { return }
        let now = loop.now
        let before = state.pending
        let actions = state.wake(at: now)
        owner.statistics.pendingChanged(by: state.pending - before)
        owner.perform(actions, receiver: self, at: now)
        rearm()
    }
}

/// The wake timer of a receiver.
private struct WakeHandler: TimerHandler {
    weak var receiver: CallbackReceiver?

    func timerFired(_ timer: TimerHandle) {
        receiver?.woke()
    }

    func timerCancelled(_ timer: TimerHandle) {}
}

/// The truth beside the callbacks (`serve --callback-truth FILE`): JSON Lines, one per callback emitted (what
/// happened in the room, and how many members it had after), one per duplicate or held-back callback played on
/// purpose, and one per callback's end at each receiver (delivered, lost, dropped). docs/callbacks.md gives the
/// fields.
final class CallbackTruth: Sendable {
    private let handle: FileHandle
    /// Lines not yet written, and whether the file was finished (later lines are written at once).
    private let buffer = LockedBox<(bytes: [UInt8], finished: Bool)>(([], false))

    init(path: String) throws(NetworkError) {
        guard FileManager.default.createFile(atPath: path, contents: nil),
            let handle = FileHandle(forWritingAtPath: path)
        else {
            throw .cannotWrite(path: path, reason: String(cString: strerror(errno)))
        }
        self.handle = handle
    }

    /// One line; absent fields are left out. Keys in sorted order.
    private struct Line: Encodable {
        var attempts: Int?
        var audience: Bool?
        var cause: String?
        var copy: String?
        var delay: Double?
        var event: String?
        var id: UInt64
        var mark: String?
        var members: Int?
        var outcome: String?
        var reason: String?
        var receiver: String?
        var room: String?
        var roomSeq: UInt64?
        var roomSession: String?
        var session: String?
        var t: Int64
        var user: String?
        var userSeq: UInt64?
        var vendor: String?
    }

    func emitted(_ callback: RoomCallback, vendor: CallbackVendor) {
        let member = callback.event != .roomCreated && callback.event != .roomDestroyed
        write(
            Line(
                audience: member && (callback.audience || callback.event == .roleChanged) ? callback.audience : nil,
                event: callback.event.rawValue,
                id: callback.id,
                members: callback.members,
                reason: callback.reason?.rawValue,
                room: callback.roomID,
                roomSeq: member ? callback.roomSequence : nil,
                roomSession: callback.roomSession,
                session: member ? callback.session : nil,
                t: callback.atMs,
                user: member ? callback.userID : nil,
                userSeq: member ? callback.userSequence : nil,
                vendor: vendor.rawValue
            )
        )
    }

    func marked(
        _ callback: RoomCallback,
        copy: CallbackDeliveryState.Copy,
        delay: Duration,
        receiver: String,
        atMs: Int64
    ) {
        write(
            Line(
                delay: Double(delay.nanosecondsClamped) / 1e9,
                id: callback.id,
                mark: copy == .duplicate ? "duplicate" : "late",
                receiver: receiver,
                t: atMs
            )
        )
    }

    func settled(
        _ callback: RoomCallback,
        copy: CallbackDeliveryState.Copy,
        outcome: CallbackDeliveryState.Outcome,
        receiver: String,
        atMs: Int64
    ) {
        var line = Line(copy: copy.rawValue, id: callback.id, receiver: receiver, t: atMs)
        switch outcome {
        case .delivered(let attempts):
            line.outcome = "delivered"
            line.attempts = attempts
        case .lost(let cause, let attempts):
            line.outcome = "lost"
            line.cause = cause.rawValue
            line.attempts = attempts
        case .dropped(let reason):
            line.outcome = "dropped"
            line.cause = reason.rawValue
        }
        write(line)
    }

    private func write(_ fields: Line) {
        var line = callbackJSON(fields)
        line.append(0x0A)
        // Written under the lock: the file keeps each room's lines in the order the room emitted them.
        buffer.withLock { buffer in
            buffer.bytes.append(contentsOf: line)
            guard buffer.bytes.count >= 1 << 16 || buffer.finished else { return }
            try? handle.write(contentsOf: buffer.bytes)
            buffer.bytes.removeAll(keepingCapacity: true)
        }
    }

    /// Writes what is buffered; lines after it are written at once.
    func flush() {
        buffer.withLock { buffer in
            if !buffer.bytes.isEmpty { try? handle.write(contentsOf: buffer.bytes) }
            buffer.bytes.removeAll()
            buffer.finished = true
        }
        try? handle.synchronize()
    }
}
