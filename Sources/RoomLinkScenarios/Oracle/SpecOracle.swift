/// One broken rule found by an oracle.
public struct Violation: Sendable, Equatable, CustomStringConvertible {
    /// A short name of the rule (`transition`, `code`, `retryTimeout`, `afterEnd`, `presence`, `rejoin`, …).
    public var rule: String
    /// Milliseconds since the scenario's start, of the event at fault (or of the expectation that went unmet).
    public var time: Double
    public var user: String
    public var room: String?
    public var message: String

    public var description: String {
        "\(rule) at \(time) ms, \(user)\(room.map { " in \($0)" } ?? ""): \(message)"
    }
}

/// Checks an event log against the contract for one scenario, knowing only the scenario and the log — not the engine —
/// so it can judge a log from RoomLink, from another simulator, or from a real SDK's callbacks.
///
/// An oracle streams: feed it the log in order with `observe`, then ask ``finish()`` for the violations.
/// ``ZegoOracle``, ``AgoraOracle`` and ``LiveKitOracle`` check the three dialects; ``Scenario/makeOracle()`` picks
/// the scenario's.
public protocol SpecOracle: Sendable {
    /// Checks one more event of the log, in log order.
    mutating func observe(_ event: LoggedEvent)
    /// Checks one more event given as a log line (what its JSON text would say): the cheap path for a run.
    mutating func observe(_ line: EventLogLine, user: String, time: Double)
    /// The violations found, in time order, once the whole log has been observed.
    func finish() -> [Violation]
    /// Makes room for the state of `users` (user, room) pairs up front, so a large run does not stop to rehash
    /// (with a million users, each doubling of the table under the recorder's lock stalled both loops: 0.3–0.7 s).
    mutating func reserveCapacity(users: Int)
}

extension SpecOracle {
    /// Reserves nothing.
    public mutating func reserveCapacity(users: Int) {}

    /// Every violation in `events`.
    public func check(_ events: [LoggedEvent]) -> [Violation] {
        var oracle = self
        for event in events { oracle.observe(event) }
        return oracle.finish()
    }
}

/// A dialect whose event logs a spec oracle checks. Each dialect's oracle declares the conformance beside itself
/// (`extension Zego: OracleDialect` in `ZegoOracle.swift`), so the engine's dialects know nothing of oracles.
public protocol OracleDialect: RoomDialect {
    /// The spec oracle that checks this dialect's event logs for `scenario`.
    static func makeOracle(for scenario: Scenario) -> any SpecOracle
}

extension Scenario {
    /// The spec oracle of the scenario's dialect.
    public func makeOracle() -> any SpecOracle {
        guard let checked = dialect.engine as? any OracleDialect.Type else {
            preconditionFailure("dialect \(dialect.rawValue) has no spec oracle: add its OracleDialect conformance")
        }
        return AttemptLineOracle(wrapping: checked.makeOracle(for: self), scenario: self)
    }

    /// An outage of a named user, from the scenario's timeline.
    struct Outage {
        var user: String
        /// Milliseconds since the start.
        var start: Double
        var end: Double
        /// A blackhole: the client did not close the connection, so the server's clock started at its last
        /// heartbeat.
        var silent: Bool

        var length: Double { end - start }
    }

    /// Outages of named users: from `networkDown` or `blackhole` to the next `networkUp` (or the end). An entry with
    /// a length (`"for"`) brings the network back after the same draw the runner makes (``outageDraw(_:entry:participant:)``),
    /// in the order the runner arms it: right after its entry, before later entries.
    func namedOutages() -> [Outage] {
        var open: [String: Outage] = [:]
        var result: [Outage] = []
        let participants = Dictionary(
            users.enumerated().map { ($0.element.id, $0.offset) },
            uniquingKeysWith: { a, _ in a }
        )
        var steps: [(time: Double, order: Int, user: String, action: Action)] = []
        for (index, entry) in timeline.enumerated() {
            guard case .user(let user) = entry.target else { continue }
            steps.append((entry.at.milliseconds, 2 * index, user, entry.action))
            if let length = entry.length, let participant = participants[user] {
                let back = entry.at + outageDraw(length, entry: index, participant: participant)
                if back < end { steps.append((back.milliseconds, 2 * index + 1, user, .networkUp)) }
            }
        }
        steps.sort { ($0.time, $0.order) < ($1.time, $1.order) }
        for (time, _, user, action) in steps {
            switch action {
            case .networkDown, .blackhole:
                if open[user] == nil {
                    let silent: Bool = if case .blackhole = action { true } else { false }
                    open[user] = Outage(user: user, start: time, end: end.milliseconds, silent: silent)
                }
            case .networkUp:
                if var outage = open.removeValue(forKey: user) {
                    outage.end = time
                    result.append(outage)
                }
            default:
                continue
            }
        }
        return result + open.values.sorted { $0.start < $1.start }
    }

    /// Whether one of `outages` cuts `user` off at some time from `from` through `through` (milliseconds): a peer in
    /// an outage of its own cannot be told of another's departure or return.
    static func isCutOff(_ user: String, from: Double, through: Double, in outages: [Outage]) -> Bool {
        outages.contains { $0.user == user && $0.start <= through && $0.end >= from }
    }

    /// Whether `user` shares its user ID with another of the scenario's users (a second device): while one device
    /// is cut off, the other may keep the user in the room.
    func hasOtherDevices(_ user: String) -> Bool {
        guard let userID = users.first(where: { $0.id == user })?.userID else { return false }
        return users.contains { $0.id != user && $0.userID == userID }
    }

    /// Whether something during `outage` — a change of the user's link, a network change, a reconnection the
    /// server asked for — may have closed the user's connection, which the server hears: its timeout then runs from
    /// that close, not from the outage's start.
    func restartsServerClock(during outage: Outage) -> Bool {
        timeline.contains { entry in
            guard case .user(outage.user) = entry.target else { return false }
            let time = entry.at.milliseconds
            guard time > outage.start, time <= outage.end else { return false }
            switch entry.action {
            case .networkDown, .blackhole, .networkChange, .requestReconnect: return true
            default: return false
            }
        }
    }

    /// When the server may remove named user `user` of its own accord, whatever its network does: at a `kick` of
    /// the user (`open` false: at that instant), and any time from an `expireToken` of it on (`open`: the server
    /// kicks once the renewal grace has passed). Times in milliseconds, in timeline order.
    func serverRemovals(of user: String) -> [(time: Double, open: Bool)] {
        // The server acts by user ID: a kick or an expiry of another device of the user's is one of this one's too.
        let userID = users.first { $0.id == user }?.userID ?? user
        let devices = Set(users.filter { $0.userID == userID }.map(\.id)).union([user])
        return timeline.compactMap { entry in
            guard case .user(let target) = entry.target, devices.contains(target) else { return nil }
            switch entry.action {
            case .kick: return (entry.at.milliseconds, false)
            case .expireToken: return (entry.at.milliseconds, true)
            default: return nil
            }
        }
    }

    /// How long the outage that timeline entry `index` starts lasts for `participant` (named users numbered in
    /// `users` order, population users after them): one draw of `length` from the scenario's seed, on a stream of its
    /// own per entry and participant. The runner brings the network back after it; the oracle expects the same.
    func outageDraw(_ length: OutageLength, entry index: Int, participant: Int) -> Duration {
        Self.outageDraw(length, entry: index, participant: participant, seed: seed)
    }

    /// ``outageDraw(_:entry:participant:)`` for a scenario of `seed`.
    static func outageDraw(_ length: OutageLength, entry index: Int, participant: Int, seed: UInt64) -> Duration {
        var random = SeededRandom(seed: seed, stream: UInt64(index) &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(participant))
        return length.draw(using: &random)
    }

    /// The default tolerance of the oracles: 2 s plus three one-way trips at the scenario's worst latency.
    var oracleTolerance: Duration {
        .seconds(2) + (network.latency + network.jitter) * 3
    }
}

extension Set<String> {
    /// Whether `user` is one of the scenario's named users; free when there are none (a population run), which
    /// asks this for every event.
    @inline(__always)
    func containsNamed(_ user: String) -> Bool {
        !isEmpty && contains(user)
    }
}
