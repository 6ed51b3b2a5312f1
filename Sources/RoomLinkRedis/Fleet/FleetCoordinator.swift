public import Foundation
import RoomLinkRuntime

#if canImport(Glibc)
import Glibc
#endif

/// A fleet's run in Redis: `redis://HOST[:PORT]/RUN` (`roomlink load --coordinate`, `roomlink report merge|watch`).
public struct FleetAddress: Sendable, Hashable, CustomStringConvertible {
    public var endpoint: RedisEndpoint
    /// The run's name: letters, digits, `.`, `_` and `-`, at most 64.
    public var run: String

    public init(endpoint: RedisEndpoint, run: String) {
        self.endpoint = endpoint
        self.run = run
    }

    /// Parses `redis://HOST[:PORT]/RUN`.
    ///
    /// - Throws: ``FleetError/invalidAddress(_:reason:)`` naming what is wrong.
    public init(parsing text: String) throws(FleetError) {
        guard text.hasPrefix("redis://") else {
            throw .invalidAddress(text, reason: "expected redis://HOST[:PORT]/RUN")
        }
        let rest = text.dropFirst("redis://".count)
        guard let slash = rest.firstIndex(of: "/") else {
            throw .invalidAddress(text, reason: "no run name: expected redis://HOST[:PORT]/RUN")
        }
        let run = String(rest[rest.index(after: slash)...])
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        guard (1...64).contains(run.count), run.allSatisfy(allowed.contains) else {
            throw .invalidAddress(
                text,
                reason: "the run name '\(run)' must be 1 to 64 letters, digits, '.', '_' or '-'"
            )
        }
        do {
            endpoint = try RedisEndpoint(parsing: "redis://" + rest[..<slash])
        } catch {
            throw .invalidAddress(text, reason: error.description)
        }
        self.run = run
    }

    public var description: String { "redis://\(endpoint.host):\(endpoint.port)/\(run)" }

    /// The run's keys: `roomlink:fleet:RUN:…` (docs/live.md lists them).
    func key(_ name: String) -> String { "roomlink:fleet:\(run):\(name)" }
}

/// What can go wrong coordinating a fleet; each case names what was wrong.
public enum FleetError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidAddress(String, reason: String)
    case unreachable(String, reason: String)
    /// Another generator holds this slice of this run, or the run has started already.
    case taken(String)
    /// This generator's flags are not the fleet's.
    case differentFlags(String)
    /// Not every generator registered in time.
    case missing(String)
    /// Redis answered something this is not made for, or dropped.
    case protocolError(String)

    public var description: String {
        switch self {
        case .invalidAddress(let address, let reason): "invalid fleet address '\(address)': \(reason)"
        case .unreachable(let address, let reason): "cannot reach Redis at \(address): \(reason)"
        case .taken(let detail), .differentFlags(let detail), .missing(let detail), .protocolError(let detail): detail
        }
    }
}

/// One generator as it registered.
public struct FleetMember: Sendable, Codable, Equatable {
    public var index: Int
    public var count: Int
    public var host: String
    public var pid: Int
    /// The flags that define the run (every generator's must be the same).
    public var flags: String
}

/// When a fleet started, in Redis's clock (`TIME`, in microseconds), as one generator measured it.
public struct FleetStart: Sendable, Codable, Equatable {
    /// The instant the fleet agreed on.
    public var agreedMicros: Int64
    /// This generator's scenario origin, mapped to Redis's clock by round trips taken after it started (independent
    /// of the ones that found the start): how far it really is from ``agreedMicros`` is the fleet's spread.
    public var originMicros: Int64
    /// The shortest round trip of each measurement, whose half bounds its error.
    public var roundTripMicros: Int64
    public var checkRoundTripMicros: Int64

    public init(agreedMicros: Int64, originMicros: Int64, roundTripMicros: Int64, checkRoundTripMicros: Int64) {
        self.agreedMicros = agreedMicros
        self.originMicros = originMicros
        self.roundTripMicros = roundTripMicros
        self.checkRoundTripMicros = checkRoundTripMicros
    }
}

/// One generator of a fleet (`roomlink load --shard I/N --coordinate redis://HOST:PORT/RUN`): registers its slice,
/// waits for all `N`, and agrees with them on one instant of Redis's clock to start at; while it runs it pushes its
/// live figures, and at its end its report.
///
/// Redis's clock is the only one the fleet shares: each generator maps it to its own monotonic clock by the round
/// trip of `TIME` that took least time of several (the error is at most half that round trip), so a machine whose
/// wall clock is off starts with the others all the same.
public final class FleetCoordinator: Sendable {
    public let address: FleetAddress
    public let index: Int
    public let count: Int
    private let redis: FleetRedis
    /// Added to every reading of this machine's clock (a test's setting, `ROOMLINK_TEST_CLOCK_SKEW_MS`): a clock that
    /// is off must not move the start.
    private let skew: Duration
    /// Whether pushing lost Redis (said once).
    private let pushing = LockedBox((lost: false, said: false))

    private init(address: FleetAddress, index: Int, count: Int, redis: FleetRedis, skew: Duration) {
        self.address = address
        self.index = index
        self.count = count
        self.redis = redis
        self.skew = skew
    }

    /// How long a fleet's keys last in Redis after they were written: a week.
    static let keep = "604800"

    /// Registers slice `index` of `count` of the run at `address`, with the flags that define it.
    ///
    /// - Throws: ``FleetError/unreachable(_:reason:)``; ``FleetError/taken(_:)`` when another generator holds the
    ///   slice or the run has started (two fleets with one run name); ``FleetError/differentFlags(_:)`` when the
    ///   fleet's first generator registered other flags.
    public static func join(
        _ address: FleetAddress,
        index: Int,
        count: Int,
        flags: String,
        skew: Duration = .zero
    ) async throws(FleetError) -> FleetCoordinator {
        let redis = try await FleetRedis.connect(address.endpoint)
        let fleet = FleetCoordinator(address: address, index: index, count: count, redis: redis, skew: skew)
        do {
            try await fleet.register(flags: flags)
        } catch {
            await redis.close()
            throw error
        }
        return fleet
    }

    private func register(flags: String) async throws(FleetError) {
        if case .string(let started)? = await redis.command(["GET", address.key("start")]) {
            throw .taken(
                "the run '\(address.run)' in \(address.endpoint) started already (at \(started) µs of Redis's clock): "
                    + "two fleets with one run name? Give this one another name"
            )
        }
        let spec = "\(count) \(flags)"
        let set = try await expect(["SET", address.key("spec"), spec, "NX", "EX", Self.keep])
        if set == .null, case .string(let theirs) = try await expect(["GET", address.key("spec")]), theirs != spec {
            let (theirCount, theirFlags) = theirs.split(separator: " ", maxSplits: 1).map(String.init).pair
            throw .differentFlags(
                theirCount != String(count)
                    ? "generator \(index) is one of \(count), but the fleet '\(address.run)' is of \(theirCount)"
                    : "generator \(index)'s flags differ from the fleet '\(address.run)''s: this one has '\(flags)', "
                        + "the fleet '\(theirFlags)'"
            )
        }
        var host = [CChar](repeating: 0, count: 256)
        gethostname(&host, host.count - 1)
        let member = FleetMember(
            index: index,
            count: count,
            host: String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
            pid: Int(getpid()),
            flags: flags
        )
        let json = String(decoding: (try? JSONEncoder().encode(member)) ?? Data(), as: UTF8.self)
        let added = try await expect(["HSETNX", address.key("members"), String(index), json])
        _ = await redis.command(["EXPIRE", address.key("members"), Self.keep])
        guard added == .integer(1) else {
            let theirs = try await expect(["HGET", address.key("members"), String(index)])
            let who = theirs.text.flatMap { try? JSONDecoder().decode(FleetMember.self, from: Data($0.utf8)) }
            throw .taken(
                "slice \(index)/\(count) of the run '\(address.run)' is already registered"
                    + (who.map { " by \($0.host) (pid \($0.pid))" } ?? "")
                    + ": two fleets with one run name, or one slice given twice? Give this fleet another name"
            )
        }
    }

    /// Waits until all the fleet's generators have registered (at most `timeout`), agrees with them on an instant
    /// `lead` after the last one did, and returns it on this machine's monotonic clock.
    ///
    /// - Throws: ``FleetError/missing(_:)`` naming the generators that did not register in time.
    public func agreeOnStart(
        timeout: Duration,
        lead: Duration = .seconds(2)
    ) async throws(FleetError)
        -> (start: ContinuousClock.Instant, agreedMicros: Int64, roundTripMicros: Int64)
    {
        // Ready: registered, and its run built. The start is agreed once every generator is.
        _ = try await expect(["HSET", address.key("ready"), String(index), "1"])
        _ = await redis.command(["EXPIRE", address.key("ready"), Self.keep])
        let deadline = ContinuousClock.now + timeout
        while true {
            if case .string = try await expect(["GET", address.key("start")]) { break }  // agreed already
            let ready = try await expect(["HLEN", address.key("ready")])
            if case .integer(let number) = ready, number >= count { break }
            guard ContinuousClock.now < deadline else {
                func indices(_ key: String) async throws(FleetError) -> Set<Int> {
                    let keys = try await expect(["HKEYS", address.key(key)])
                    return Set((keys.elements ?? []).compactMap { $0.text.flatMap(Int.init) })
                }
                let registered = try await indices("members")
                let readied = try await indices("ready")
                let absent = (0..<count).filter { !registered.contains($0) }
                let building = (0..<count).filter { registered.contains($0) && !readied.contains($0) }
                var missing: [String] = []
                if !absent.isEmpty {
                    missing.append("\(absent.map(String.init).joined(separator: ", ")) never registered")
                }
                if !building.isEmpty {
                    missing.append(
                        "\(building.map(String.init).joined(separator: ", ")) registered but never got ready"
                    )
                }
                throw .missing(
                    "the fleet '\(address.run)' did not gather its \(count) generators within \(timeout): generator "
                        + missing.joined(separator: "; generator ")
                )
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        let clock = try await measureClock()
        let proposed = clock.redisMicros + Int64(lead / .microseconds(1))
        _ = try await expect(["SET", address.key("start"), String(proposed), "NX", "EX", Self.keep])
        guard case .string(let text) = try await expect(["GET", address.key("start")]), let agreed = Int64(text)
        else { throw .protocolError("the fleet '\(address.run)': its start vanished from Redis") }
        let start = clock.local.advanced(by: .microseconds(agreed - clock.redisMicros))
        return (start - skew, agreed, clock.roundTripMicros)
    }

    /// Maps Redis's clock to this machine's: the `TIME` round trip that took least time of `samples`, read at its
    /// middle.
    func measureClock(
        samples: Int = 9
    ) async throws(FleetError) -> (
        local: ContinuousClock.Instant, redisMicros: Int64, roundTripMicros: Int64
    ) {
        var best: (local: ContinuousClock.Instant, redisMicros: Int64, roundTripMicros: Int64)?
        for _ in 0..<samples {
            let sent = ContinuousClock.now + skew
            let reply = try await expect(["TIME"])
            let received = ContinuousClock.now + skew
            guard let parts = reply.elements, parts.count == 2, let seconds = parts[0].text.flatMap(Int64.init),
                let micros = parts[1].text.flatMap(Int64.init)
            else { throw .protocolError("Redis answered TIME with \(reply)") }
            let trip = (received - sent) / .microseconds(1)
            let roundTrip = Int64(trip.rounded())
            if best == nil || roundTrip < best!.roundTripMicros {
                best = (sent + (received - sent) / 2, seconds * 1_000_000 + micros, roundTrip)
            }
        }
        return best!
    }

    /// Where `instant` (this machine's monotonic clock, as ``agreeOnStart(timeout:lead:)`` returned it) lies in
    /// Redis's clock, by a fresh measurement: the check on the start.
    public func redisMicros(
        of instant: ContinuousClock.Instant
    ) async throws(FleetError) -> (
        micros: Int64, roundTripMicros: Int64
    ) {
        let clock = try await measureClock()
        let local = clock.local - skew
        return (clock.redisMicros + Int64((instant - local) / .microseconds(1)), clock.roundTripMicros)
    }

    /// Records this generator's start (``FleetStart``) for the fleet.
    public func recordStart(_ start: FleetStart) async {
        let json = String(decoding: (try? JSONEncoder().encode(start)) ?? Data(), as: UTF8.self)
        _ = await redis.command(["HSET", address.key("starts"), String(index), json])
        _ = await redis.command(["EXPIRE", address.key("starts"), Self.keep])
    }

    /// Pushes this generator's live figures (JSON) and says it is alive for the next five seconds. Returns `false`
    /// the first time Redis is found gone (the caller warns once); the run goes on without it.
    public func pushLive(_ figures: Data) async -> Bool {
        let text = String(decoding: figures, as: UTF8.self)
        let live = await redis.command(["SET", address.key("live:\(index)"), text, "EX", Self.keep])
        let alive = await redis.command(["SET", address.key("alive:\(index)"), "1", "PX", "5000"])
        let ok = live != nil && alive != nil
        return pushing.withLock { state in
            if ok {
                state.lost = false
                return true
            }
            defer { state.said = true }
            state.lost = true
            return state.said
        }
    }

    /// Why Redis is gone, if it is.
    public var lostReason: String? {
        get async { await redis.lostReason }
    }

    /// Pushes this generator's report (JSON) once its run is done; tries once to reconnect when Redis had gone.
    /// Returns why it could not, or `nil`.
    public func pushReport(_ report: Data) async -> String? {
        if let reason = await redis.reconnect() { return reason }
        let text = String(decoding: report, as: UTF8.self)
        guard await redis.command(["SET", address.key("report:\(index)"), text, "EX", Self.keep]) != nil else {
            return await redis.lostReason ?? "connection lost"
        }
        _ = await redis.command(["DEL", address.key("alive:\(index)")])
        return nil
    }

    public func close() async {
        await redis.close()
    }

    private func expect(_ command: [String]) async throws(FleetError) -> RedisReply {
        guard let reply = await redis.command(command) else {
            throw .unreachable(address.endpoint.description, reason: await redis.lostReason ?? "connection lost")
        }
        if case .error(let message) = reply { throw .protocolError("Redis refused \(command[0]): \(message)") }
        return reply
    }
}

/// What Redis holds of a fleet's run (`roomlink report merge|watch redis://…`).
public struct FleetState: Sendable {
    public var address: FleetAddress
    /// Generators by slice index, as they registered.
    public var members: [Int: FleetMember]
    /// How many generators the fleet is of (0 when nothing registered).
    public var count: Int
    /// The latest live figures each pushed (JSON), its report once done (JSON), and whether it said it was alive
    /// within the last five seconds.
    public var live: [Int: Data]
    public var reports: [Int: Data]
    public var alive: Set<Int>
    public var starts: [Int: FleetStart]

    /// Reads the run at `address`.
    public static func read(_ address: FleetAddress) async throws(FleetError) -> FleetState {
        let redis = try await FleetRedis.connect(address.endpoint)
        defer { Task { await redis.close() } }
        func ask(_ command: [String]) async throws(FleetError) -> RedisReply {
            guard let reply = await redis.command(command) else {
                throw .unreachable(address.endpoint.description, reason: await redis.lostReason ?? "connection lost")
            }
            return reply
        }
        var state = FleetState(
            address: address,
            members: [:],
            count: 0,
            live: [:],
            reports: [:],
            alive: [],
            starts: [:]
        )
        let members = try await ask(["HGETALL", address.key("members")]).elements ?? []
        for pair in stride(from: 0, to: members.count - 1, by: 2) {
            guard let index = members[pair].text.flatMap(Int.init), let json = members[pair + 1].text,
                let member = try? JSONDecoder().decode(FleetMember.self, from: Data(json.utf8))
            else { continue }
            state.members[index] = member
            state.count = max(state.count, member.count)
        }
        let starts = try await ask(["HGETALL", address.key("starts")]).elements ?? []
        for pair in stride(from: 0, to: starts.count - 1, by: 2) {
            guard let index = starts[pair].text.flatMap(Int.init), let json = starts[pair + 1].text,
                let start = try? JSONDecoder().decode(FleetStart.self, from: Data(json.utf8))
            else { continue }
            state.starts[index] = start
        }
        for index in 0..<state.count {
            if case .string(let text) = try await ask(["GET", address.key("live:\(index)")]) {
                state.live[index] = Data(text.utf8)
            }
            if case .string(let text) = try await ask(["GET", address.key("report:\(index)")]) {
                state.reports[index] = Data(text.utf8)
            }
            if case .string = try await ask(["GET", address.key("alive:\(index)")]) { state.alive.insert(index) }
        }
        return state
    }
}

extension Array where Element == String {
    /// The first two elements (empty strings for those missing).
    fileprivate var pair: (String, String) { (first ?? "", count > 1 ? self[1] : "") }
}
