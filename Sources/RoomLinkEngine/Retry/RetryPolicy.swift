/// How a client spaces its reconnection attempts, and when it gives up.
///
/// A policy is a value: a ``Schedule`` of delays plus optional limits on attempts and on time since the connection
/// was lost. Walk it with an ``Iterator``, which draws any jitter from a `SeededRandom` so that virtual-time runs
/// stay reproducible. The first attempt is never delayed (contract §5); each later delay is counted from the previous
/// attempt's failure.
///
/// ```swift
/// let policy = try RetryPolicy(
///     schedule: .exponential(base: .seconds(1), cap: .seconds(30), jitter: .equal), maxElapsed: .seconds(20 * 60))
/// var attempts = policy.makeIterator(random: SeededRandom(seed: 42))
/// attempts.next(elapsed: .zero)            // 0 s: reconnect at once
/// attempts.next(elapsed: .seconds(3))      // 0.5 s … 1 s
/// ```
public struct RetryPolicy: Sendable, Hashable {
    /// The delays between attempts.
    public var schedule: Schedule
    /// The most attempts before giving up; `nil` for no limit.
    public var maxAttempts: Int?
    /// Give up rather than start an attempt this long (or longer) after the connection was lost; `nil` for no
    /// limit. ZEGO and Agora give up at 20 minutes.
    public var maxElapsed: Duration?

    /// Creates a policy.
    ///
    /// - Throws: ``RoomLinkError/Code/invalidInput`` naming the field, for a base that is not positive, a cap
    ///   below the base, a multiplier below 1, an empty or negative fixed schedule, a negative jitter, a
    ///   `maxAttempts` below 1 or a `maxElapsed` that is not positive.
    public init(schedule: Schedule, maxAttempts: Int? = nil, maxElapsed: Duration? = nil) throws(RoomLinkError) {
        try schedule.validate()
        if let maxAttempts, maxAttempts < 1 {
            throw .invalidArgument("retry.maxAttempts", "at least 1", got: "\(maxAttempts)")
        }
        if let maxElapsed, maxElapsed <= .zero {
            throw .invalidArgument("retry.maxElapsed", "a positive duration", got: "\(maxElapsed)")
        }
        self.schedule = schedule
        self.maxAttempts = maxAttempts
        self.maxElapsed = maxElapsed
    }

    /// ZEGO's default: retry until 20 minutes after the connection was lost (contract §2), at once and then with
    /// exponential backoff from 1 s, doubling, capped at 30 s, with equal jitter.
    ///
    /// ZEGO documents the 20-minute limit but not its intervals; these are RoomLink's choice: quick first retries
    /// for the common short outage, equal jitter so that a room's clients do not retry in lockstep after a shared
    /// outage, and a 30 s cap so a recovered network is noticed within half a minute.
    public static let zegoDefault = try! RetryPolicy(
        schedule: .exponential(base: .seconds(1), cap: .seconds(30), multiplier: 2, jitter: .equal),
        maxElapsed: .seconds(20 * 60)
    )

    /// An iterator over this policy's delays, drawing jitter from `random`.
    public func makeIterator(random: SeededRandom) -> Iterator {
        Iterator(policy: Shared(self), random: random)
    }

    /// A policy kept once for many iterators (a client population's ``RoomClientState/Rules``), which hold it by
    /// reference: a reconnecting client's iterator is 56 bytes, not the policy's 80 more.
    package final class Shared: Sendable {
        package let policy: RetryPolicy

        init(_ policy: RetryPolicy) {
            self.policy = policy
        }

        /// An iterator over the policy's delays, drawing jitter from `random`.
        func makeIterator(random: SeededRandom) -> Iterator {
            Iterator(policy: self, random: random)
        }

        /// The one `Shared` of `policy` for the life of the process: what ``RoomClientState/Rules`` keep without a
        /// reference count (a process makes a handful — one per policy its environments use — and keeps them).
        static func interned(_ policy: RetryPolicy) -> Shared {
            internedPolicies.withLock { table in
                if let shared = table[policy] { return shared }
                let shared = Shared(policy)
                table[policy] = shared
                return shared
            }
        }

        private static let internedPolicies = LockedBox<[RetryPolicy: Shared]>([:])
    }

    /// The delays of one reconnection episode.
    ///
    /// Not an `IteratorProtocol`: each step needs the time elapsed since the connection was lost, to apply
    /// ``RetryPolicy/maxElapsed``.
    public struct Iterator: Sendable {
        private let shared: Shared
        private var random: SeededRandom
        /// Attempts handed out so far.
        public private(set) var attempts = 0
        /// The previous delay, in nanoseconds (decorrelated jitter grows from it).
        private var previous: Int64

        init(policy: Shared, random: SeededRandom) {
            self.shared = policy
            self.random = random
            self.previous = policy.policy.schedule.baseNanoseconds
        }

        private var policy: RetryPolicy { shared.policy }

        /// The delay before the next attempt, or `nil` when the policy gives up.
        ///
        /// - Parameter elapsed: Time since the connection was lost, when the previous attempt failed (zero for the
        ///   first attempt). The policy gives up rather than schedule an attempt at or past `maxElapsed`.
        public mutating func next(elapsed: Duration) -> Duration? {
            if let maxAttempts = policy.maxAttempts, attempts >= maxAttempts { return nil }
            let delay = policy.schedule.delay(beforeAttempt: attempts + 1, previous: &previous, random: &random)
            if let maxElapsed = policy.maxElapsed, elapsed + delay >= maxElapsed { return nil }
            attempts += 1
            return delay
        }
    }
}
