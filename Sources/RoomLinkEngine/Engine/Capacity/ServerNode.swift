internal import DequeModule

/// One simulated server node as a plain value: its workers, its queue, its admission bucket, and what it went
/// through. Rooms hand it each message as it arrives; it answers when the message will have been served (or that it
/// is refused or shed) and counts. No timer and no thread: the room acts on the answer.
///
/// The queue is first in, first out, served by the first free worker, so a message's start is known when it
/// arrives: the earliest time a worker is free, or the arrival if one is idle. Starts therefore never go backwards,
/// and the messages still waiting at any time are a run of the latest arrivals — a deque of start times, not a heap.
public struct ServerNode: Sendable {
    /// What a node does with a message that arrives.
    public enum Verdict: Sendable, Equatable {
        /// Served: it waits `waited` for a worker, and its work is done at `done`.
        case serve(done: RuntimeInstant, waited: Duration)
        /// Refused by admission control: busy, retry after `retryAfter`.
        case busy(retryAfter: Duration)
        /// Dropped unserved when a worker took it up: its client had already stopped waiting (`shedExpired`).
        case shed
    }

    /// Kinds of message, by what they cost.
    public enum Kind: Sendable, Hashable {
        case login, heartbeat, other
    }

    public let policy: ServerPolicy
    private let capacity: ServerCapacity
    private let loginCost: Int64
    /// When each worker is next free (nanoseconds), as a binary min-heap.
    private var freeAt: [Int64]
    /// The start times of the messages still waiting, oldest first (non-decreasing).
    private var waiting = Deque<Int64>()
    /// The admission bucket: tokens, and when they were last topped up.
    private var tokens: Double
    private var toppedUpAt: Int64?
    public private(set) var statistics: ServerNodeStatistics

    /// A node with `policy`'s capacity, whose logins cost `loginProcessing` unless the capacity says otherwise, and
    /// whose statistics count seconds from `origin`.
    public init(policy: ServerPolicy, loginProcessing: Duration, origin: RuntimeInstant = .zero) {
        self.policy = policy
        self.capacity = policy.capacity ?? ServerCapacity()
        self.loginCost = (capacity.login ?? loginProcessing).nanosecondsClamped
        self.freeAt = Array(repeating: Int64.min, count: policy.capacity == nil ? 0 : capacity.workers)
        self.tokens = Double(policy.admission?.burst ?? 0)
        self.statistics = ServerNodeStatistics(origin: origin)
    }

    /// Moves the statistics' time zero (on the real clock the scenario starts once its world is built).
    public mutating func start(at origin: RuntimeInstant) {
        statistics.origin = origin
    }

    /// A message of `kind` arrives at `now`. `answerBy` is when its client stops waiting for the answer (a login's
    /// attempt timeout), if it says, and `answerTrip` how long the answer takes to reach it: a login is useful only if
    /// its answer arrives by then, so one whose work cannot be done `answerTrip` before `answerBy` is wasted — and,
    /// with ``ServerPolicy/shedExpired``, dropped before a worker spends anything on it.
    public mutating func arrive(
        _ kind: Kind,
        at now: RuntimeInstant,
        answerBy: RuntimeInstant? = nil,
        answerTrip: Duration = .zero
    ) -> Verdict {
        // The latest the work may be done for its answer to arrive in time (nanoseconds).
        let useful = answerBy.map { $0.nanoseconds - answerTrip.nanosecondsClamped }
        let time = now.nanoseconds
        if kind == .login {
            statistics.offeredLogin(at: now)
            if let admission = policy.admission, let wait = takeToken(admission, at: time) {
                statistics.refusedLogin(at: now)
                return .busy(retryAfter: .nanoseconds(wait))
            }
        }
        guard !freeAt.isEmpty else {
            // Unlimited workers: no queue, a login takes its processing time.
            let done = kind == .login ? now.advanced(by: .nanoseconds(loginCost)) : now
            if kind == .login {
                statistics.servedLogin(done: done, wasted: useful.map { done.nanoseconds > $0 } ?? false)
            }
            statistics.served(kind, waited: 0, arrivedAt: now)
            return .serve(done: done, waited: .zero)
        }
        while let first = waiting.first, first <= time { waiting.removeFirst() }
        let start = max(time, freeAt[0])
        let waited = start - time
        if kind == .login {
            if let maxQueue = policy.maxQueue?.nanosecondsClamped, waited > maxQueue {
                if policy.admission != nil { tokens += 1 }  // the token goes back: this login was not admitted
                statistics.refusedLogin(at: now)
                return .busy(retryAfter: .nanoseconds(waited - maxQueue))
            }
        }
        let cost: Int64 =
            switch kind {
            case .login: loginCost
            case .heartbeat: capacity.heartbeat.nanosecondsClamped
            case .other: capacity.other.nanosecondsClamped
            }
        // Shed what cannot finish, answer included, before its client stops waiting — not merely what starts too late:
        // a login begun just before the deadline is work done for nobody.
        if kind == .login, policy.shedExpired, let useful, start + cost > useful {
            statistics.shedLogin()
            return .shed
        }
        replaceEarliest(with: start + cost)
        if waited > 0 {
            waiting.append(start)
            statistics.queued(length: waiting.count, at: now)  // an empty queue is every second's default
        }
        let done = RuntimeInstant(nanoseconds: start + cost)
        if kind == .login { statistics.servedLogin(done: done, wasted: useful.map { done.nanoseconds > $0 } ?? false) }
        statistics.served(kind, waited: waited, arrivedAt: now)
        return .serve(done: done, waited: .nanoseconds(waited))
    }

    /// A heartbeat that arrived while its member was in the room was served after the room had dropped the member.
    public mutating func lateHeartbeat() {
        statistics.lateHeartbeat()
    }

    /// A member was dropped for silence at `time` while one of its heartbeats waited for a worker.
    public mutating func falseDeparture(at time: RuntimeInstant) {
        statistics.falseDeparture(at: time)
    }

    /// Messages waiting for a worker at `now` (at least; the count is brought up to date by arrivals).
    public var queueLength: Int { waiting.count }

    /// Takes a token at `time`, or returns how long until the next one (nanoseconds).
    private mutating func takeToken(_ admission: AdmissionPolicy, at time: Int64) -> Int64? {
        if let last = toppedUpAt {
            tokens = min(Double(admission.burst), tokens + Double(time - last) / 1e9 * admission.rate)
        }
        toppedUpAt = time
        if tokens >= 1 {
            tokens -= 1
            return nil
        }
        return max(1_000_000, Int64(((1 - tokens) / admission.rate * 1e9).rounded(.up)))
    }

    /// The earliest-free worker is now free at `time` (which is no earlier): sift it down the heap.
    private mutating func replaceEarliest(with time: Int64) {
        freeAt[0] = time
        var index = 0
        let count = freeAt.count
        while true {
            let left = 2 * index + 1
            guard left < count else { return }
            let right = left + 1
            let child = right < count && freeAt[right] < freeAt[left] ? right : left
            guard freeAt[child] < freeAt[index] else { return }
            freeAt.swapAt(child, index)
            index = child
        }
    }
}
