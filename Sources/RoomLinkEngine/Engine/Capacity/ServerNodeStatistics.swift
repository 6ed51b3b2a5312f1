/// What one server node went through, in total and per second since the run's start: the raw counts behind a
/// report's `ServerReport`.
public struct ServerNodeStatistics: Sendable {
    /// One second of a node's life.
    public struct Second: Sendable, Equatable {
        /// Logins that arrived (offered load), were completed (goodput, by completion time; wasted ones included),
        /// completed after their client gave up, and refused as busy.
        public var offered = 0
        public var completed = 0
        public var wasted = 0
        public var refused = 0
        /// The longest the queue was during the second (messages waiting for a worker).
        public var queuePeak = 0
        /// Members dropped for silence while one of their heartbeats waited for a worker.
        public var falseDepartures = 0
        /// The longest a message that arrived during the second waited for a worker (nanoseconds).
        public var maxWaitNanoseconds: Int64 = 0

        mutating func add(_ other: Second) {
            offered += other.offered
            completed += other.completed
            wasted += other.wasted
            refused += other.refused
            queuePeak += other.queuePeak
            falseDepartures += other.falseDepartures
            maxWaitNanoseconds = max(maxWaitNanoseconds, other.maxWaitNanoseconds)
        }

        package init() {}
    }

    var origin: RuntimeInstant
    public private(set) var seconds: [Second] = []
    public private(set) var offeredLogins = 0
    public private(set) var completedLogins = 0
    public private(set) var wastedLogins = 0
    public private(set) var refusedLogins = 0
    public private(set) var shedLogins = 0
    public private(set) var heartbeats = 0
    public private(set) var lateHeartbeats = 0
    public private(set) var falseDepartures = 0
    public private(set) var messages = 0
    public private(set) var peakQueue = 0
    /// How long messages waited for a worker (every message served).
    public private(set) var queueDelay = LatencyRecorder()

    package init(origin: RuntimeInstant) {
        self.origin = origin
    }

    mutating func offeredLogin(at time: RuntimeInstant) {
        offeredLogins += 1
        self[time].offered += 1
    }

    mutating func refusedLogin(at time: RuntimeInstant) {
        refusedLogins += 1
        self[time].refused += 1
    }

    mutating func shedLogin() {
        shedLogins += 1
    }

    mutating func servedLogin(done: RuntimeInstant, wasted: Bool) {
        completedLogins += 1
        self[done].completed += 1
        if wasted {
            wastedLogins += 1
            self[done].wasted += 1
        }
    }

    mutating func served(_ kind: ServerNode.Kind, waited: Int64, arrivedAt time: RuntimeInstant) {
        messages += 1
        if waited > 0 { self[time].maxWaitNanoseconds = max(self[time].maxWaitNanoseconds, waited) }
        if kind == .heartbeat { heartbeats += 1 }
        queueDelay.record(nanoseconds: waited)
    }

    mutating func queued(length: Int, at time: RuntimeInstant) {
        peakQueue = max(peakQueue, length)
        self[time].queuePeak = max(self[time].queuePeak, length)
    }

    mutating func lateHeartbeat() {
        lateHeartbeats += 1
    }

    mutating func falseDeparture(at time: RuntimeInstant) {
        falseDepartures += 1
        self[time].falseDepartures += 1
    }

    /// Adds what `other` counted (the same node in another shard, or another node for a total); series add up
    /// second by second, and a total's queue is the sum of the nodes' longest queues.
    package mutating func merge(_ other: ServerNodeStatistics) {
        offeredLogins += other.offeredLogins
        completedLogins += other.completedLogins
        wastedLogins += other.wastedLogins
        refusedLogins += other.refusedLogins
        shedLogins += other.shedLogins
        heartbeats += other.heartbeats
        lateHeartbeats += other.lateHeartbeats
        falseDepartures += other.falseDepartures
        messages += other.messages
        peakQueue = max(peakQueue, other.peakQueue)
        queueDelay.merge(other.queueDelay)
        if other.seconds.count > seconds.count {
            seconds.append(contentsOf: repeatElement(Second(), count: other.seconds.count - seconds.count))
        }
        for (index, second) in other.seconds.enumerated() { seconds[index].add(second) }
    }

    /// The second that `time` falls in, created (with those before it) on first use; times before the origin count
    /// in second 0, and a run's series stops growing at a day.
    private subscript(time: RuntimeInstant) -> Second {
        get {
            let index = second(of: time)
            return index < seconds.count ? seconds[index] : Second()
        }
        set {
            let index = second(of: time)
            if index >= seconds.count {
                seconds.append(contentsOf: repeatElement(Second(), count: index + 1 - seconds.count))
            }
            seconds[index] = newValue
        }
    }

    private func second(of time: RuntimeInstant) -> Int {
        Int(min(86_400, max(0, (time.nanoseconds - origin.nanoseconds) / 1_000_000_000)))
    }
}
