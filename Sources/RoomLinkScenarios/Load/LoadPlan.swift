internal import struct Foundation.Data

/// A reconnection load test said in numbers and fault patterns — what `roomlink load`'s flags say — and the
/// population scenario (contract §7) it stands for (``scenario()``); ``scenarioJSON()`` writes that scenario as the
/// file `--save-scenario` saves, which `roomlink run` replays.
///
/// Faults (``LoadFault``, one type per kind) pick their users from the population's one seeded shuffle, each fault
/// from the next slice of it (wrapping around), so that two faults strike different users while the population
/// allows; partitions pick rooms from the rooms' own shuffle the same way.
public struct LoadPlan: Sendable, Equatable {
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
    /// The faults, in the order they take their slices.
    public var faults: [any LoadFault] = []

    public init(clients: Int, rooms: Int, duration: Duration) {
        self.clients = clients
        self.rooms = rooms
        self.duration = duration
    }

    public static func == (lhs: LoadPlan, rhs: LoadPlan) -> Bool {
        lhs.clients == rhs.clients && lhs.rooms == rhs.rooms && lhs.dialect == rhs.dialect
            && lhs.duration == rhs.duration && lhs.seed == rhs.seed && lhs.network == rhs.network
            && lhs.notify == rhs.notify && lhs.loginOver == rhs.loginOver && lhs.timings == rhs.timings
            && lhs.retryJSON == rhs.retryJSON && lhs.server == rhs.server && lhs.faults.count == rhs.faults.count
            && zip(lhs.faults, rhs.faults).allSatisfy { $0.isSame(as: $1) }
    }

    /// The plan's span: the population logs in until `loginOver`, and the run ends at `duration`.
    public var span: Span { Span(start: loginOver, end: duration) }

    /// The scenario the plan stands for.
    ///
    /// - Throws: `RoomLinkError` naming what is wrong (no clients, more rooms than clients, a fault after the end, a
    ///   timing no dialect knows, a bad retry object, a bad server policy).
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
        var scenario = Scenario(end: duration)
        scenario.dialect = dialect
        scenario.seed = seed
        scenario.network = try network.checked(at: "network")
        scenario.population = Scenario.Population(clients: clients, rooms: rooms, userStatusNotify: notify)
        scenario.timings = try Scenario.checkedTimings(timings, dialect: dialect)
        if let retryJSON { scenario.retry = try RetryPolicy(scenarioJSON: Data(retryJSON.utf8)) }
        try server.validate(at: "server")
        scenario.server = server
        // Sorted by time; entries at the same time keep the plan's order (a stable sort, as a scenario file's).
        scenario.timeline = timeline().enumerated()
            .sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
        for (index, entry) in scenario.timeline.enumerated() where entry.at > duration {
            throw .invalidArgument(
                "timeline[\(index)].at",
                "a time no later than end (\(duration))",
                got: "\(entry.at)"
            )
        }
        return scenario
    }

    /// The timeline in the plan's order: the population's logins, then each fault's entries on its slices.
    public func timeline() -> [Scenario.Entry] {
        var entries = [
            Scenario.Entry(
                at: .zero,
                target: .population(fraction: 1, over: loginOver),
                action: .login(room: nil, token: nil)
            )
        ]
        var slices = Slices()
        for fault in faults { entries += fault.entries(slices: &slices, plan: self) }
        return entries
    }

    /// The scenario as JSON text, one timeline entry per line: what `--save-scenario` writes, and `roomlink run`
    /// replays to the same run.
    public func scenarioJSON() -> String {
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
        text += "  \"timeline\": [\n    " + timeline().map(\.jsonText).joined(separator: ",\n    ") + "\n  ],\n"
        text += "  \"end\": \"\(duration.roomLinkText)\"\n}\n"
        return text
    }
}

extension LoadPlan {
    /// The windows of the faults that end (storms, outages and partitions of a bounded length), for the report's
    /// recoveries (``LoadReport/measureRecoveries(after:)``): how far the population fell during each and how long it
    /// took to come back after it.
    public var faultWindows: [LoadReport.FaultWindow] {
        faults.compactMap(\.recoveryWindow)
    }
}
