public import RoomLinkEngine
public import RoomLinkRuntime

/// An app's token server as a model, for the token storm in virtual time (`load --token-server
/// latency=…,capacity=…,failures=…`): every fetch waits its turn in a queue served at `capacity` fetches a second,
/// then takes `latency`; a `failures` share of the answers are HTTP 500s; a fetch not answered within `timeout` fails
/// as the client gives up on it (the server still spends its turn on it, as a real one does). The tokens it hands out
/// are `tokens`' (minted with the project's keys), or opaque ones when there are no keys.
///
/// The capacity is shared evenly among the loops the clients run on, each loop's share with its own queue and its
/// own seeded draws, so that a run is as deterministic as its clients are.
public final class ModelledTokenServer: TokenSource {
    /// What the modelled server does.
    public struct Model: Sendable, Hashable {
        /// How long a fetch takes once the server takes it up (its network and its work).
        public var latency: Duration
        /// Fetches a second it takes up at most; `nil`: as many as come.
        public var capacity: Double?
        /// The share of answers that are failures (HTTP 500), 0 to 1.
        public var failureShare: Double
        /// How long a client waits for an answer.
        public var timeout: Duration

        public init(
            latency: Duration = .milliseconds(20),
            capacity: Double? = nil,
            failureShare: Double = 0,
            timeout: Duration = .seconds(5)
        ) {
            self.latency = latency
            self.capacity = capacity
            self.failureShare = failureShare
            self.timeout = timeout
        }

        /// Reads `latency=DURATION,capacity=PER_SECOND,failures=SHARE,timeout=DURATION` (any of them, in any order).
        ///
        /// - Throws: `RoomLinkError` naming `flag` and the part at fault.
        public init(parsing text: String, flag: String = "--token-server") throws(RoomLinkError) {
            self.init()
            func invalid(_ message: String) -> RoomLinkError {
                RoomLinkError(code: .invalidInput, field: flag, message: "\(flag): \(message)")
            }
            for part in text.split(separator: ",", omittingEmptySubsequences: false) {
                let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
                guard pair.count == 2 else {
                    throw invalid("'\(part)' is not NAME=VALUE (latency, capacity, failures, timeout)")
                }
                switch pair[0] {
                case "latency", "timeout":
                    guard let duration = Duration(roomLinkText: pair[1]), duration >= .zero,
                        duration <= ScenarioLimits.maximumDuration
                    else {
                        throw invalid("\(pair[0]) is a duration (20ms, 2s), not '\(pair[1])'")
                    }
                    if pair[0] == "latency" { latency = duration } else { timeout = duration }
                case "capacity":
                    guard let value = Double(pair[1]), value.isFinite, value > 0 else {
                        throw invalid("capacity is fetches a second, above 0, not '\(pair[1])'")
                    }
                    capacity = value
                case "failures":
                    guard let value = Double(pair[1]), value >= 0, value <= 1 else {
                        throw invalid("failures is a share from 0 to 1, not '\(pair[1])'")
                    }
                    failureShare = value
                default:
                    throw invalid("unknown setting '\(pair[0])' (latency, capacity, failures, timeout)")
                }
            }
            guard timeout > .zero else { throw invalid("timeout must be above 0") }
        }
    }

    public let model: Model
    /// What it hands out; `nil`: opaque tokens (`tok-<user>-<n>`).
    public let tokens: (any TokenSource)?
    /// Each loop's share of the server, by the loop's identity.
    private let shares: [ObjectIdentifier: Share]

    /// One loop's queue, touched only on that loop's thread.
    private final class Share: @unchecked Sendable {
        // Safe: a share is used only by fetches of clients on its loop, which run on that loop's thread alone
        // (``TokenSource`` is called from the client's step, on its loop).
        var nextFree = RuntimeInstant.zero
        var random: SeededRandom
        var handedOut: UInt64 = 0
        /// The time one fetch takes of this loop's share of the capacity.
        let serviceTime: Duration

        init(random: SeededRandom, serviceTime: Duration) {
            self.random = random
            self.serviceTime = serviceTime
        }
    }

    /// A server of `model` for clients on `loops`, its draws seeded by `seed`.
    public init(model: Model, loops: [any RuntimeLoop], seed: UInt64, tokens: (any TokenSource)? = nil) {
        self.model = model
        self.tokens = tokens
        let service = model.capacity.map { Duration.seconds(Double(max(1, loops.count)) / $0) } ?? .zero
        var shares: [ObjectIdentifier: Share] = [:]
        for (index, loop) in loops.enumerated() {
            let random = SeededRandom(seed: seed, stream: StableHash.fnv1a("token-server-\(index)"))
            shares[ObjectIdentifier(loop)] = Share(random: random, serviceTime: service)
        }
        self.shares = shares
    }

    public func fetchToken(
        for request: TokenRequest,
        on loop: any RuntimeLoop,
        completion: @escaping @Sendable (Result<String, TokenFetchFailure>) -> Void
    ) {
        guard let share = shares[ObjectIdentifier(loop)] else {
            return completion(.failure(TokenFetchFailure(.unavailable, "no share of the modelled server on this loop")))
        }
        let now = loop.now
        let start = max(now, share.nextFree)
        share.nextFree = start.advanced(by: share.serviceTime)
        let done = share.nextFree.advanced(by: model.latency)
        let fails = model.failureShare > 0 && Double(share.random.next() >> 11) / Double(1 << 53) < model.failureShare
        share.handedOut += 1
        let count = share.handedOut
        let giveUp = now.advanced(by: model.timeout)
        if done > giveUp {
            _ = try? loop.schedule(at: giveUp) {
                completion(.failure(TokenFetchFailure(.timeout, "no answer within \(self.model.timeout)")))
            }
            return
        }
        _ = try? loop.schedule(at: done) { [tokens] in
            if fails { return completion(.failure(TokenFetchFailure(.httpStatus, "500"))) }
            if let tokens {
                tokens.fetchToken(for: request, on: loop, completion: completion)
            } else {
                completion(.success("tok-\(request.userID)-\(count)"))
            }
        }
    }
}

/// The token storm as a load test sees it (a `TokenFetchObserver`): fetches and their failures per second, failures
/// by cause, and how long fetches took.
public final class TokenStatistics: TokenFetchObserver {
    private struct State {
        var origin: RuntimeInstant
        var tally = TokenTally()
    }

    private let state: LockedBox<State>

    /// Statistics whose time zero is `origin`.
    public init(origin: RuntimeInstant = .zero) {
        state = LockedBox(State(origin: origin))
    }

    /// Moves time zero to `origin`, before anything was recorded.
    public func start(at origin: RuntimeInstant) {
        state.withLock { $0.origin = origin }
    }

    public func tokenFetchStarted(at time: RuntimeInstant) {
        update(at: time) { _, second in second.fetches += 1 }
    }

    public func tokenFetchEnded(failure: TokenFetchFailure.Cause?, latency: Duration, at time: RuntimeInstant) {
        update(at: time) { tally, second in
            if let failure {
                second.failed += 1
                tally.failures[failure.rawValue, default: 0] += 1
            } else {
                second.fetched += 1
                tally.latency.record(nanoseconds: latency.nanosecondsClamped)
            }
        }
    }

    /// What was counted, with the series carried up to `end` (seconds since the origin).
    public func tally(end: Double) -> TokenTally {
        state.withLock { state in
            let last = max(0, Int(end.rounded(.up)) - 1)
            Self.fill(to: last, in: &state.tally)
            let latency = state.tally.latency.snapshot()
            var tally = state.tally
            tally.latency = latency
            return tally
        }
    }

    private func update(at time: RuntimeInstant, _ body: (inout TokenTally, inout TokenTally.Second) -> Void) {
        state.withLock { state in
            let index = Int(max(0, time.nanoseconds - state.origin.nanoseconds) / 1_000_000_000)
            Self.fill(to: index, in: &state.tally)
            var second = state.tally.seconds[index]
            body(&state.tally, &second)
            state.tally.seconds[index] = second
        }
    }

    private static func fill(to index: Int, in tally: inout TokenTally) {
        while tally.seconds.count <= index { tally.seconds.append(TokenTally.Second(second: tally.seconds.count)) }
    }
}

/// What ``TokenStatistics`` counted, in the form that merges across shards and generator processes.
public struct TokenTally: Sendable, Codable, Equatable {
    /// One second of the run.
    public struct Second: Sendable, Codable, Equatable {
        public var second: Int
        /// Fetches begun, and those that ended with a token or failed, during the second.
        public var fetches = 0
        public var fetched = 0
        public var failed = 0

        public init(second: Int) {
            self.second = second
        }
    }

    public var seconds: [Second] = []
    /// Failed fetches by cause (`TokenFetchFailure.Cause`'s raw values).
    public var failures: [String: Int] = [:]
    /// How long the fetches that brought a token took.
    public var latency = LatencyRecorder()

    public init() {}

    /// Adds another part's counts and histogram, second by second from the scenario's start.
    public mutating func add(_ other: TokenTally) {
        for (index, row) in other.seconds.enumerated() {
            guard index < seconds.count else {
                seconds.append(row)
                continue
            }
            seconds[index].fetches += row.fetches
            seconds[index].fetched += row.fetched
            seconds[index].failed += row.failed
        }
        failures.merge(other.failures, uniquingKeysWith: +)
        latency.merge(other.latency)
    }
}

/// The token storm of a run, summed up: what the clients' token fetches did (``TokenStatistics``).
public struct TokenReport: Sendable, Codable, Equatable {
    /// Fetches begun, those that brought a token, and those that failed.
    public var fetches: Int
    public var fetched: Int
    public var failed: Int
    /// Failed fetches by cause: `timeout`, `refused`, `tls`, `httpStatus`, `badBody`, `closed`, `unavailable`.
    public var failures: [String: Int]
    /// The most fetches begun in one second, and which second (from the start).
    public var fetchesPerSecondPeak: Int
    public var peakSecond: Int
    /// How long the fetches that brought a token took (virtual ms in virtual time, real ms against a real server).
    public var latency: LatencySummary
    public var tally: TokenTally

    /// The report of `tally`.
    public init(_ tally: TokenTally) {
        self.tally = tally
        fetches = tally.seconds.reduce(0) { $0 + $1.fetches }
        fetched = tally.seconds.reduce(0) { $0 + $1.fetched }
        failed = tally.seconds.reduce(0) { $0 + $1.failed }
        failures = tally.failures
        let peak = tally.seconds.max { $0.fetches < $1.fetches }
        fetchesPerSecondPeak = peak?.fetches ?? 0
        peakSecond = peak?.second ?? 0
        latency = tally.latency.summary
    }

    /// One line for a summary: fetches, failures by cause, the peak rate and the latency's percentiles.
    public var summaryLine: String {
        let causes = failures.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        return "tokens: \(fetches) fetches, \(fetched) fetched, \(failed) failed"
            + (causes.isEmpty ? "" : " (\(causes))")
            + "; peak \(fetchesPerSecondPeak)/s at \(peakSecond) s; latency \(latency.text)"
    }
}
