internal import struct Foundation.Data

/// A reconnection load test said in numbers and fault patterns — what `roomlink load`'s flags say — and the
/// population scenario (contract §7) it stands for.
///
/// The plan writes the scenario as JSON text and reads it back (``scenario()``), so the file `--save-scenario`
/// writes is exactly what ran, and `roomlink run` replays it.
///
/// Faults pick their users from the population's one seeded shuffle, each fault from the next slice of it (wrapping
/// around), so that two faults strike different users while the population allows; partitions pick rooms from the
/// rooms' own shuffle the same way.
public struct LoadPlan: Sendable, Equatable {
    /// A pattern of trouble, over the whole population.
    public enum Fault: Sendable, Equatable {
        /// A share of the clients lose their network from `at`, spread over `over`, each for its own drawn length.
        case outages(fraction: Double, at: Duration, length: OutageLength, over: Duration)
        /// The thundering herd: a share of all clients drop at one instant, for `length`.
        case storm(fraction: Double, at: Duration, length: Duration)
        /// A share of the clients flap: down for `duty` of every `period`, from `from` until `until`.
        case flapping(fraction: Double, period: Duration, duty: Double, from: Duration, until: Duration)
        /// A share of the clients are kicked out by the admin from `at`, spread over `over`.
        case kickStorm(fraction: Double, at: Duration, over: Duration)
        /// A share of the clients' tokens expire from `at`, spread over `over` (they are kicked after the grace).
        case tokenWave(fraction: Double, at: Duration, over: Duration)
        /// A share of the rooms are cut off from their clients at `at`, each healing after its own drawn length;
        /// only silence tells the clients (and no network-up event makes them all retry at once).
        case partition(fraction: Double, at: Duration, length: OutageLength)
        /// `perSecond` clients log out every second from `from` until `until`, each logging back in `away` later.
        case churn(perSecond: Int, away: Duration, from: Duration, until: Duration)
    }

    public var clients: Int
    public var rooms: Int
    public var dialect: Scenario.Dialect = .zego
    public var duration: Duration
    public var seed: UInt64 = 1
    public var network = Scenario.Network()
    /// Whether population users hear of peers (ZEGO's `userStatusNotify`; Agora and LiveKit always do).
    public var notify = false
    /// The population logs in over this window at the start.
    public var loginOver: Duration = .seconds(60)
    /// Overrides of the dialect's timings, by name (the scenario's `"timings"`: `heartbeatInterval`, …).
    public var timings: [String: Duration] = [:]
    /// The `"retry"` object of the scenario, as JSON text (`{"preset": "liveKitJS"}`); `nil`: the dialect's default.
    public var retryJSON: String?
    /// The server's nodes, capacity and admission control (the scenario's `"server"`).
    public var server = ServerPolicy.unlimited
    public var faults: [Fault] = []

    public init(clients: Int, rooms: Int, duration: Duration) {
        self.clients = clients
        self.rooms = rooms
        self.duration = duration
    }

    /// The scenario, read back from ``scenarioJSON()``.
    ///
    /// - Throws: `RoomLinkError` naming what is wrong (no clients, more rooms than clients, a share outside
    ///   (0, 1], a fault after the end, a bad retry object).
    public func scenario() throws(RoomLinkError) -> Scenario {
        guard clients > 0 else { throw .invalidArgument("clients", "at least 1", got: "\(clients)") }
        guard clients <= ScenarioLimits.maximumClients else {
            throw .invalidArgument("clients", "at most \(ScenarioLimits.maximumClients)", got: "\(clients)")
        }
        guard duration > .zero, duration <= ScenarioLimits.maximumDuration else {
            throw .invalidArgument(
                "duration",
                "a duration from 1ns to \(ScenarioLimits.maximumDuration.roomLinkText)",
                got: duration.roomLinkText
            )
        }
        guard rooms > 0, rooms <= clients else {
            throw .invalidArgument("rooms", "between 1 and the number of clients (\(clients))", got: "\(rooms)")
        }
        // A fault is named by its own field, not by the timeline entry it becomes.
        for fault in faults {
            let (start, end) = fault.window
            guard start <= duration else {
                throw .invalidArgument(
                    fault.field,
                    "a start no later than the end of the run (duration \(duration.roomLinkText))",
                    got: start.roomLinkText
                )
            }
            if let end, end > duration {
                throw .invalidArgument(
                    fault.field,
                    "to be over by the end of the run (duration \(duration.roomLinkText))",
                    got: "an end at \(end.roomLinkText)"
                )
            }
        }
        return try Scenario(json: Data(scenarioJSON().utf8))
    }

    /// The scenario as JSON text, one timeline entry per line.
    public func scenarioJSON() -> String {
        var entries: [String] = [
            #"{ "at": "0s", "user": "*", "action": "login", "over": "\#(loginOver.roomLinkText)" }"#
        ]
        var offset = 0.0
        var roomOffset = 0.0
        /// The next slice of a shuffle for a fault of `fraction`.
        func slice(_ fraction: Double, from offset: inout Double) -> Double {
            if offset + fraction > 1 + 1e-9 { offset = 0 }
            defer { offset += fraction }
            return offset
        }
        func slice(_ fraction: Double) -> Double { slice(fraction, from: &offset) }
        func entry(
            _ at: Duration,
            _ action: String,
            fraction: Double,
            offset: Double,
            over: Duration = .zero,
            on target: String = #""user": "*""#,
            extra: String = ""
        ) -> String {
            var text = #"{ "at": "\#(at.roomLinkText)", \#(target), "action": "\#(action)", "fraction": \#(fraction)"#
            if offset > 0 { text += #", "offset": \#(offset)"# }
            if over > .zero { text += #", "over": "\#(over.roomLinkText)""# }
            return text + extra + " }"
        }
        /// A network outage of a slice, each user's network back after `length`.
        func outage(
            _ at: Duration,
            fraction: Double,
            offset: Double,
            over: Duration = .zero,
            length: OutageLength
        ) -> String {
            entry(
                at,
                "networkDown",
                fraction: fraction,
                offset: offset,
                over: over,
                extra: #", "for": \#(length.jsonText)"#
            )
        }
        for fault in faults {
            switch fault {
            case .outages(let fraction, let at, let length, let over):
                entries.append(outage(at, fraction: fraction, offset: slice(fraction), over: over, length: length))
            case .storm(let fraction, let at, let length):
                entries.append(outage(at, fraction: fraction, offset: slice(fraction), length: .fixed(length)))
            case .flapping(let fraction, let period, let duty, let from, let until):
                let start = slice(fraction)
                var time = from
                let down = Duration.nanoseconds(Int64(Double(period.nanosecondsClamped) * duty))
                while period > .zero, time < until {
                    entries.append(outage(time, fraction: fraction, offset: start, length: .fixed(down)))
                    time += period
                }
            case .kickStorm(let fraction, let at, let over):
                entries.append(entry(at, "kick", fraction: fraction, offset: slice(fraction), over: over))
            case .tokenWave(let fraction, let at, let over):
                entries.append(entry(at, "expireToken", fraction: fraction, offset: slice(fraction), over: over))
            case .partition(let fraction, let at, let length):
                let start = slice(fraction, from: &roomOffset)
                entries.append(
                    entry(
                        at,
                        "partition",
                        fraction: fraction,
                        offset: start,
                        on: #""rooms": "*""#,
                        extra: #", "for": \#(length.jsonText)"#
                    )
                )
            case .churn(let perSecond, let away, let from, let until):
                let share = min(1, Double(perSecond) / Double(max(1, clients)))
                var time = from
                var second = 0.0
                while share > 0, time < until {
                    var start = (second * share).truncatingRemainder(dividingBy: 1)
                    if start + share > 1 { start = 0 }
                    entries.append(entry(time, "logout", fraction: share, offset: start, over: .seconds(1)))
                    // Those whose time away outlasts the run stay logged out.
                    if time + away < duration {
                        entries.append(entry(time + away, "login", fraction: share, offset: start, over: .seconds(1)))
                    }
                    time += .seconds(1)
                    second += 1
                }
            }
        }
        let network =
            #"{ "latency": "\#(network.latency.roomLinkText)", "jitter": "\#(network.jitter.roomLinkText)", "loss": \#(network.loss) }"#
        var text = """
            {
              "dialect": "\(dialect.rawValue)",
              "seed": \(seed),
              "network": \(network),
              "population": { "clients": \(clients), "rooms": \(rooms), "userStatusNotify": \(notify) },

            """
        if !timings.isEmpty {
            let fields = timings.sorted { $0.key < $1.key }.map { "\"\($0.key)\": \"\($0.value.roomLinkText)\"" }
            text += "  \"timings\": { " + fields.joined(separator: ", ") + " },\n"
        }
        if let retryJSON { text += "  \"retry\": \(retryJSON),\n" }
        if let server = server.jsonText { text += "  \"server\": \(server),\n" }
        text += "  \"timeline\": [\n    " + entries.joined(separator: ",\n    ") + "\n  ],\n"
        text += "  \"end\": \"\(duration.roomLinkText)\"\n}\n"
        return text
    }
}

extension LoadPlan.Fault {
    /// The plan's field for this kind of fault, as errors name it (`roomlink load` turns `storm` into `--storm`).
    public var field: String {
        switch self {
        case .outages: "outages"
        case .storm: "storm"
        case .flapping: "flapping"
        case .kickStorm: "kickStorm"
        case .tokenWave: "tokenWave"
        case .partition: "partition"
        case .churn: "churn"
        }
    }

    /// When the fault starts, and when its last action is taken where the plan fixes it (a spread's end); a
    /// fault's drawn lengths may outlast the run, as a real outage outlasts a test.
    var window: (start: Duration, end: Duration?) {
        switch self {
        case .outages(_, let at, _, let over): (at, at + over)
        case .storm(_, let at, _): (at, nil)
        case .flapping(_, _, _, let from, let until): (from, until)
        case .kickStorm(_, let at, let over), .tokenWave(_, let at, let over): (at, at + over)
        case .partition(_, let at, _): (at, nil)
        case .churn(_, _, let from, let until): (from, until)
        }
    }
}

extension LoadPlan {
    /// The windows of the faults that end (storms, outages and partitions of a bounded length), for the report's
    /// recoveries (``LoadReport/measureRecoveries(after:)``): how far the population fell during each and how long it
    /// took to come back after it.
    public var faultWindows: [LoadReport.FaultWindow] {
        func longest(_ length: OutageLength) -> Duration? {
            switch length {
            case .fixed(let length): length
            case .uniform(_, let upper): upper
            case .exponential: nil  // no end to speak of
            }
        }
        return faults.compactMap { fault -> LoadReport.FaultWindow? in
            let label: String
            let start: Duration
            let end: Duration
            switch fault {
            case .storm(let fraction, let at, let length):
                (label, start, end) = ("storm \(fraction)@\(at.roomLinkText):\(length.roomLinkText)", at, at + length)
            case .outages(let fraction, let at, let length, let over):
                guard let longest = longest(length) else { return nil }
                (label, start, end) = ("outages \(fraction)@\(at.roomLinkText)", at, at + over + longest)
            case .partition(let fraction, let at, let length):
                guard let longest = longest(length) else { return nil }
                (label, start, end) = ("partition \(fraction)@\(at.roomLinkText)", at, at + longest)
            case .flapping, .kickStorm, .tokenWave, .churn:
                return nil
            }
            return LoadReport.FaultWindow(fault: label, startSeconds: start.seconds, endSeconds: end.seconds)
        }
    }
}
