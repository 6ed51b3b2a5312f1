import DequeModule
import HeapModule
public import RoomLinkRuntime

/// How a vendor delivers its callbacks to one receiver: what counts as delivered, when it sends again, when it gives
/// up, and what it does on purpose (Agora's duplicates and out-of-order arrival, ZEGO's reordering).
///
/// The vendors' published rules (docs/contract.md §11 cites each):
/// - **Agora** (NCS): delivered on a `200` whose body is JSON within 10 s; otherwise sent again at once, then after
///   growing gaps, three retries in all; duplicates and out-of-order arrival happen, and receivers order by
///   `clientSeq`.
/// - **ZEGO**: delivered on any `2xx`; otherwise sent again after 2, 4, 8, 16 and 32 s, then lost; callbacks may
///   arrive out of order, and receivers order by `session_id`, `login_time` and `user_update_seq`.
/// - **LiveKit** (livekit-server's webhook notifier, `ResourceURLNotifier`): one ordered queue per room; sent again
///   on a transport error, `429` or a `5xx` but `501` after 1, 2, 4 and 8 s; an event is dropped when its room's
///   queue holds 200, or when it has waited over 30 s for its first attempt.
public struct CallbackDeliveryRules: Sendable, Hashable {
    public var vendor: CallbackVendor
    /// The wait before each retry: as many retries as delays.
    public var retryDelays: [Duration]
    /// How long an attempt may take before it counts as failed (`timeout`).
    public var timeout: Duration
    /// Whether each room's callbacks go one at a time, in order (LiveKit).
    public var orderedPerRoom: Bool
    /// Callbacks a room's queue holds at most (ordered delivery only); more are dropped.
    public var roomQueueLimit: Int
    /// How old a callback may be when its first attempt would start; older ones are dropped (nil: any age).
    public var maxAge: Duration?
    /// Callbacks pending at most (queued, in flight or waiting to be sent again): the memory bound. More are dropped.
    public var capacity: Int
    /// Requests in flight at most (`RoomCallbacks` sets it to a receiver's connections).
    public var concurrency: Int
    /// The share of callbacks played out of order on purpose (and, for Agora, the share duplicated): 0 is an ideal
    /// vendor. Not for LiveKit, whose queue keeps order.
    public var disorder: Double
    /// What the disorder draws from: the same seed plays the same callbacks out of order.
    public var seed: UInt64

    /// The rules `vendor` publishes, with `disorder` played at `seed`, `capacity` callbacks pending at most.
    public static func vendor(
        _ vendor: CallbackVendor,
        disorder: Double = 0,
        seed: UInt64 = 1,
        capacity: Int = 10_000,
        concurrency: Int = 16
    ) -> Self {
        // Agora: "immediately resends … the interval gradually increases … stops after three retries": the gaps
        // after the first are ours (Agora publishes none).
        let delays: [Int64] =
            switch vendor {
            case .agora: [0, 3, 9]
            case .zego: [2, 4, 8, 16, 32]
            case .livekit: [1, 2, 4, 8]
            }
        let ordered = vendor == .livekit
        return Self(
            vendor: vendor,
            retryDelays: delays.map { .seconds($0) },
            timeout: .seconds(10),
            orderedPerRoom: ordered,
            roomQueueLimit: ordered ? 200 : .max,
            maxAge: ordered ? .seconds(30) : nil,
            capacity: capacity,
            concurrency: concurrency,
            disorder: ordered ? 0 : disorder,
            seed: seed
        )
    }

    public init(
        vendor: CallbackVendor,
        retryDelays: [Duration],
        timeout: Duration,
        orderedPerRoom: Bool,
        roomQueueLimit: Int,
        maxAge: Duration?,
        capacity: Int,
        concurrency: Int,
        disorder: Double,
        seed: UInt64
    ) {
        self.vendor = vendor
        self.retryDelays = retryDelays
        self.timeout = timeout
        self.orderedPerRoom = orderedPerRoom
        self.roomQueueLimit = roomQueueLimit
        self.maxAge = maxAge
        self.capacity = max(1, capacity)
        self.concurrency = max(1, concurrency)
        self.disorder = min(1, max(0, disorder))
        self.seed = seed
    }

    /// What an answer means by the vendor's rule: delivered, or failed for a cause (and then whether it is sent
    /// again).
    public func judge(_ answer: CallbackAnswer) -> CallbackJudgement {
        switch answer {
        case .failed(let cause):
            return .failed(cause, retried: true)
        case .answered(let status, let bodyIsJSON):
            switch vendor {
            case .agora:
                if status == 200 { return bodyIsJSON ? .delivered : .failed(.notJSON, retried: true) }
                return .failed(.status, retried: true)
            case .zego:
                return (200..<300).contains(status) ? .delivered : .failed(.status, retried: true)
            case .livekit:
                // livekit-server's notifier (go-retryablehttp's default policy) retries a transport error, 429 and
                // 5xx but 501; any other answer ends the event as sent.
                return status == 429 || (status >= 500 && status != 501) ? .failed(.status, retried: true) : .delivered
            }
        }
    }
}

/// Why an attempt to deliver a callback failed.
public enum CallbackFailureCause: String, Sendable, Hashable, CaseIterable {
    /// No answer within the vendor's time.
    case timeout
    /// No connection (refused, unreachable, unresolvable).
    case refused
    /// The TLS handshake failed (the receiver's certificate did not verify, or it spoke no TLS).
    case tls
    /// The connection closed before the answer was whole (a reset, a receiver that crashed).
    case closed
    /// Not an HTTP answer.
    case malformed
    /// A status the vendor does not count as delivered.
    case status
    /// Agora: a `200` whose body is not JSON.
    case notJSON
}

/// Why a callback was dropped before it was ever delivered or lost.
public enum CallbackDropReason: String, Sendable, Hashable, CaseIterable {
    /// The receiver's pending callbacks were at ``CallbackDeliveryRules/capacity``.
    case queueFull
    /// Its room's queue was full (LiveKit: 200).
    case roomQueueFull
    /// It was older than ``CallbackDeliveryRules/maxAge`` when an attempt would have started (LiveKit: 30 s).
    case tooOld
}

/// What came of one attempt.
public enum CallbackAnswer: Sendable, Hashable {
    /// An HTTP answer: its status, and whether its body is a JSON document.
    case answered(status: Int, bodyIsJSON: Bool)
    case failed(CallbackFailureCause)
}

/// An attempt's meaning by the vendor's rule (``CallbackDeliveryRules/judge(_:)``).
public enum CallbackJudgement: Sendable, Hashable {
    case delivered
    case failed(CallbackFailureCause, retried: Bool)
}

/// The delivery of one server's callbacks to one receiver, as a value: it takes callbacks, answers and the time, and
/// says what to send, when, and what became of each — by the vendor's rules (``CallbackDeliveryRules``). The shell
/// (`RoomCallbacks`) sends the requests and keeps the clock; tests drive this alone in virtual time.
public struct CallbackDeliveryState: Sendable {
    /// A callback as first sent, or a duplicate the vendor sends on purpose.
    public enum Copy: String, Sendable, Hashable {
        case original, duplicate
    }

    /// What the shell does.
    public enum Action: Sendable, Hashable {
        /// Send `callback` (attempt 1 is the first); answer with ``CallbackDeliveryState/answered(_:_:at:)``.
        case send(ticket: UInt64, callback: RoomCallback, attempt: Int, copy: Copy)
        /// The vendor's disorder, played on purpose: a duplicate sent `delay` after its original, or an original held
        /// back `delay` (late: callbacks emitted after it may arrive before it).
        case marked(callback: RoomCallback, copy: Copy, delay: Duration)
        /// An attempt failed for `cause`; attempt `attempt` follows after `delay`.
        case retry(callback: RoomCallback, copy: Copy, cause: CallbackFailureCause, attempt: Int, delay: Duration)
        /// What became of a callback (or its duplicate), for good.
        case settled(callback: RoomCallback, copy: Copy, outcome: Outcome)
    }

    /// How a callback's delivery ended.
    public enum Outcome: Sendable, Hashable {
        /// The receiver took it, at this attempt.
        case delivered(attempts: Int)
        /// Every attempt failed; the last for `cause`.
        case lost(CallbackFailureCause, attempts: Int)
        /// Never delivered nor lost: dropped for `reason`.
        case dropped(CallbackDropReason)
    }

    private struct Entry {
        let callback: RoomCallback
        let copy: Copy
        /// When the server emitted it, on the delivery's clock.
        let emittedAt: RuntimeInstant
        /// Attempts started.
        var attempts = 0
        /// When it is to be sent (on the timer heap), or nil.
        var due: RuntimeInstant?
        var inFlight = false
    }

    private struct Due: Comparable {
        let at: RuntimeInstant
        let ticket: UInt64
        static func < (a: Due, b: Due) -> Bool { (a.at, a.ticket) < (b.at, b.ticket) }
    }

    public let rules: CallbackDeliveryRules
    private var entries: [UInt64: Entry] = [:]
    private var nextTicket: UInt64 = 1
    private var timers = Heap<Due>()
    private var ready = Deque<UInt64>()
    private var inFlight = 0
    /// Ordered delivery: each room's tickets in emission order; the head is the one being delivered.
    private var rooms: [String: Deque<UInt64>] = [:]
    /// Most callbacks ever pending at once.
    public private(set) var peakPending = 0

    public init(rules: CallbackDeliveryRules) {
        self.rules = rules
    }

    /// Callbacks pending: queued, in flight, or waiting to be sent again (the receiver's queue depth).
    public var pending: Int { entries.count }

    /// Requests in flight.
    public var requestsInFlight: Int { inFlight }

    /// When ``wake(at:)`` has something to do next (a retry or a held-back callback), if ever.
    public var nextWake: RuntimeInstant? {
        mutating get {
            // Entries settled or sent since their timer was pushed leave stale timers: drop them here.
            while let first = timers.min, entries[first.ticket]?.due != first.at { _ = timers.popMin() }
            return timers.min?.at
        }
    }

    /// A callback the server emitted at `now`.
    public mutating func emit(_ callback: RoomCallback, at now: RuntimeInstant) -> [Action] {
        var actions: [Action] = []
        let (late, duplicate) = disorder(of: callback)
        guard entries.count < rules.capacity else {
            actions.append(.settled(callback: callback, copy: .original, outcome: .dropped(.queueFull)))
            return actions
        }
        if rules.orderedPerRoom {
            var queue = rooms[callback.roomID] ?? []
            guard queue.count < rules.roomQueueLimit else {
                actions.append(.settled(callback: callback, copy: .original, outcome: .dropped(.roomQueueFull)))
                return actions
            }
            let ticket = add(callback, .original, at: now)
            queue.append(ticket)
            rooms[callback.roomID] = queue
            if queue.count == 1 { makeReady(ticket, at: now, into: &actions) }
        } else {
            let ticket = add(callback, .original, at: now)
            if let late {
                actions.append(.marked(callback: callback, copy: .original, delay: late))
                hold(ticket, until: now.advanced(by: late))
            } else {
                makeReady(ticket, at: now, into: &actions)
            }
        }
        if let duplicate {
            if entries.count < rules.capacity {
                let copy = add(callback, .duplicate, at: now)
                actions.append(.marked(callback: callback, copy: .duplicate, delay: duplicate))
                hold(copy, until: now.advanced(by: duplicate))
            } else {
                actions.append(.settled(callback: callback, copy: .duplicate, outcome: .dropped(.queueFull)))
            }
        }
        pump(into: &actions)
        return actions
    }

    /// What the attempt of `ticket` came to, at `now`.
    public mutating func answered(_ ticket: UInt64, _ answer: CallbackAnswer, at now: RuntimeInstant) -> [Action] {
        guard var entry = entries[ticket], entry.inFlight else { return [] }
        var actions: [Action] = []
        entry.inFlight = false
        inFlight -= 1
        switch rules.judge(answer) {
        case .delivered:
            settle(ticket, entry, .delivered(attempts: entry.attempts), at: now, into: &actions)
        case .failed(let cause, let retried):
            let retry = entry.attempts - 1
            if retried, retry < rules.retryDelays.count {
                let delay = rules.retryDelays[retry]
                entries[ticket] = entry
                actions.append(
                    .retry(
                        callback: entry.callback,
                        copy: entry.copy,
                        cause: cause,
                        attempt: entry.attempts + 1,
                        delay: delay
                    )
                )
                if delay <= .zero {
                    makeReady(ticket, at: now, into: &actions)
                } else {
                    hold(ticket, until: now.advanced(by: delay))
                }
            } else {
                settle(ticket, entry, .lost(cause, attempts: entry.attempts), at: now, into: &actions)
            }
        }
        pump(into: &actions)
        return actions
    }

    /// The clock reached `now`: callbacks whose time has come are sent.
    public mutating func wake(at now: RuntimeInstant) -> [Action] {
        var actions: [Action] = []
        while let first = timers.min, first.at <= now {
            _ = timers.popMin()
            guard var entry = entries[first.ticket], entry.due == first.at else { continue }
            entry.due = nil
            entries[first.ticket] = entry
            makeReady(first.ticket, at: now, into: &actions)
        }
        pump(into: &actions)
        return actions
    }

    // MARK: - Inside

    private mutating func add(_ callback: RoomCallback, _ copy: Copy, at now: RuntimeInstant) -> UInt64 {
        let ticket = nextTicket
        nextTicket += 1
        entries[ticket] = Entry(callback: callback, copy: copy, emittedAt: now)
        peakPending = max(peakPending, entries.count)
        return ticket
    }

    private mutating func hold(_ ticket: UInt64, until at: RuntimeInstant) {
        entries[ticket]?.due = at
        timers.insert(Due(at: at, ticket: ticket))
    }

    private mutating func makeReady(_ ticket: UInt64, at now: RuntimeInstant, into actions: inout [Action]) {
        guard let entry = entries[ticket] else { return }
        // The age is checked when a callback's first attempt would start (its retries follow on).
        if let maxAge = rules.maxAge, entry.attempts == 0, entry.emittedAt.duration(to: now) > maxAge {
            return settle(ticket, entry, .dropped(.tooOld), at: now, into: &actions)
        }
        ready.append(ticket)
    }

    private mutating func pump(into actions: inout [Action]) {
        while inFlight < rules.concurrency, let ticket = ready.popFirst() {
            guard var entry = entries[ticket] else { continue }
            entry.attempts += 1
            entry.inFlight = true
            entries[ticket] = entry
            inFlight += 1
            actions.append(.send(ticket: ticket, callback: entry.callback, attempt: entry.attempts, copy: entry.copy))
        }
    }

    private mutating func settle(
        _ ticket: UInt64,
        _ entry: Entry,
        _ outcome: Outcome,
        at now: RuntimeInstant,
        into actions: inout [Action]
    ) {
        entries[ticket] = nil
        actions.append(.settled(callback: entry.callback, copy: entry.copy, outcome: outcome))
        guard rules.orderedPerRoom, var queue = rooms[entry.callback.roomID], queue.first == ticket else { return }
        queue.removeFirst()
        if let next = queue.first {
            rooms[entry.callback.roomID] = queue
            makeReady(next, at: now, into: &actions)
        } else {
            rooms[entry.callback.roomID] = nil
        }
    }

    /// Whether `callback` is held back (by how long) and duplicated (after how long), drawn from its identity and
    /// the seed: the same callbacks are played out of order however the server's threads interleave.
    private func disorder(of callback: RoomCallback) -> (late: Duration?, duplicate: Duration?) {
        guard rules.disorder > 0, !rules.orderedPerRoom else { return (nil, nil) }
        var hash = Self.hash(callback.identity, seed: rules.seed)
        let draw = Self.unit(&hash)
        let delay = Self.unit(&hash)
        switch rules.vendor {
        case .agora:
            // Half the share is sent twice, the other half held back.
            if draw < rules.disorder / 2 { return (nil, .milliseconds(500 + Int64(delay * 4_500))) }
            if draw < rules.disorder { return (.milliseconds(1_000 + Int64(delay * 9_000)), nil) }
            return (nil, nil)
        case .zego:
            return draw < rules.disorder ? (.milliseconds(1_000 + Int64(delay * 9_000)), nil) : (nil, nil)
        case .livekit:
            return (nil, nil)
        }
    }

    /// FNV-1a of `text`'s bytes, mixed with `seed`.
    static func hash(_ text: String, seed: UInt64) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325 ^ seed
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// The next SplitMix64 draw from `state`, in [0, 1).
    static func unit(_ state: inout UInt64) -> Double {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        z ^= z >> 31
        return Double(z >> 11) / Double(1 << 53)
    }
}
