internal import Foundation

/// Runs a ``Scenario``: creates its clients and rooms on a loop group, plays its timeline, records every event, and
/// checks the log with the spec oracle.
///
/// On a `SimulationRuntime` the run is in virtual time and deterministic: the same scenario and seed give the
/// same event log, byte for byte. On a `LibeventLoopGroup` it runs in real (optionally scaled) time.
///
/// Placement: a named user's client runs on `group.loop(for: id)`; a population user's on its room's loop, so a
/// room and most of its members share a loop. Population entries (`"user": "*"`) pick a `fraction` from one seeded
/// shuffle of the population, so a smaller fraction is always a subset of a larger one (a `networkUp` with the
/// fraction of an earlier `networkDown` restores exactly those users), and spread the picked users evenly over
/// `over`.
public struct ScenarioRunner: Sendable {
    public let scenario: Scenario
    /// Whether the run gathers a load test's statistics (``LoadStatistics``) into its report's `load`.
    public var collectsLoadStatistics = false
    /// The memory a population may be estimated to need (``ScenarioLimits/estimatedBytesPerClient`` each) before
    /// ``run(on:events:progress:progressInterval:)`` refuses it: by default 90 % of the machine's physical memory.
    public var memoryLimit: UInt64 = ScenarioLimits.defaultMemoryLimit

    /// Stops the run early when interrupted: the report then covers the scenario up to that moment and says
    /// ``RunReport/interrupted``. `nil` (the default): the run always plays to its end.
    public var interruption: RunInterruption?

    /// In virtual time, how many simulations — each on its own thread — may share a large population, each playing
    /// the rooms whose index modulo the count is its own (default 1). Used only when the scenario splits by room
    /// (``canShard``) and no event log is written: each share is deterministic, but the interleaving of several
    /// shares' events is not, so the event log needs one simulation. The report's counts and verdict are the same
    /// for any count; its peak of reconnecting connections is the sum of each share's peak per 100 ms.
    public var shards = 1

    /// The one slice of the population this run plays, when several processes share it (`roomlink load --shard I/N`):
    /// the rooms whose index modulo `count` is `index` (by node when the capacity is modelled), and their users. The
    /// slices of one scenario (same seed) are disjoint and together are the whole population; their reports merge
    /// (``RunReport/merged(_:)``). Needs a scenario that splits by room (``canShard``).
    public var slice: RunSlice?

    /// The windows of the faults that end, for the load report's recoveries (``LoadReport/recoveries``): how far
    /// the population fell during each and how long it took to come back (``LoadPlan/faultWindows`` for a load test).
    public var faultWindows: [LoadReport.FaultWindow] = []

    /// Whether the event log carries each login attempt and its outcome (`attempt` lines, `--attempts`); without
    /// it the log is contract §7's.
    public var logsAttempts = false

    /// Makes the network each share of the run talks through, and injects the scenario's faults into: by default
    /// ``simulatedNetwork(_:)``, the scenario's conditions on a `SimulatedNetwork`.
    public var network: @Sendable (NetworkPlan) -> any RoomTransport & NetworkFaults = Self.simulatedNetwork

    /// A server in another process to run against instead of the in-process one (`roomlink run --server`): clients
    /// reach it through `network`, and the scenario's server actions (kicks, reconnect requests, token expiry) go to
    /// `administration`. The scenario's `server` capacity and `auth` table are the remote server's business; its
    /// timings must match the scenario's for the oracle's verdict to hold. Runs on the real clock only.
    public var remote: RemoteServer?

    /// How a run reaches a server in another process.
    public struct RemoteServer: Sendable {
        /// Makes the client transport to the server, which also injects the scenario's faults (at the clients'
        /// sockets).
        public var network: @Sendable (NetworkPlan) -> any ClientTransport & NetworkFaults
        /// The server's admin API.
        public var administration: any RoomAdministration
        /// What the transport told of its connections (its observer), for the report's `connections`.
        public var connections: ConnectionStatistics?

        public init(
            network: @escaping @Sendable (NetworkPlan) -> any ClientTransport & NetworkFaults,
            administration: any RoomAdministration,
            connections: ConnectionStatistics? = nil
        ) {
            self.network = network
            self.administration = administration
            self.connections = connections
        }
    }

    /// Where the clients get their tokens (`run|load --token-url`, `--app-id …`, `--token-server …`), and what the
    /// in-process server checks them with; `nil`: the scenario's tokens, as given.
    public var tokens: TokenPlan?

    /// A window on the run while it goes (`--metrics`, `--dashboard`, a fleet's live figures): the runner opens it
    /// once the run's world is built and leaves it on the run's last figures when it returns.
    public var live: LiveRun?

    /// On the real clock: called once the run's world is built, it returns the instant (this machine's monotonic
    /// clock) at which the scenario starts — a fleet's agreed start (`roomlink load --coordinate`). The run refuses
    /// an instant that leaves too little time to arm the timeline. `nil`: the run starts as soon as it is built.
    public var startGate: (@Sendable () async throws -> ContinuousClock.Instant)?

    /// How a run's clients get their tokens.
    public struct TokenPlan: Sendable {
        /// Makes the token source of the clients on one share's loops.
        public var source: @Sendable ([any RuntimeLoop]) -> any TokenSource
        /// The vendor's token checks for the in-process server (the keys the tokens are minted with), if any.
        public var verified: VerifiedTokens?
        /// Counts the token storm for the report's `tokens`.
        public var statistics: TokenStatistics

        public init(
            source: @escaping @Sendable ([any RuntimeLoop]) -> any TokenSource,
            verified: VerifiedTokens? = nil,
            statistics: TokenStatistics = TokenStatistics()
        ) {
            self.source = source
            self.verified = verified
            self.statistics = statistics
        }
    }

    /// What a run asks of its network: the scenario's conditions and seed, on the loops of one share.
    public struct NetworkPlan: Sendable {
        /// The scenario's `network`.
        public var conditions: Scenario.Network
        /// The scenario's seed.
        public var seed: UInt64
        /// The loops the share runs on.
        public var group: any RuntimeLoopGroup
    }

    /// A `SimulatedNetwork` with the plan's conditions. Same-loop messages ride one FIFO per loop: in real time a
    /// delay line (the order of one instant's arrivals is the clock's there), in virtual time the simulation's lane,
    /// which keeps a timer's place for each message, so a run replays its recorded order exactly.
    public static func simulatedNetwork(_ plan: NetworkPlan) -> any RoomTransport & NetworkFaults {
        SimulatedNetwork(conditions: plan.conditions, seed: plan.seed, batchingOn: plan.group.loops)
    }

    /// Prepares a run.
    ///
    /// - Throws: `RoomLinkError` naming the user whose `id` is also the name of a population user (`u<i>`).
    public init(scenario: Scenario) throws(RoomLinkError) {
        if let population = scenario.population, population.clients > 0 {
            for (index, user) in scenario.users.enumerated() {
                guard user.id.hasPrefix("u"), let number = Int(user.id.dropFirst()), number >= 0,
                    number < population.clients, Scenario.Population.userName(number) == user.id
                else { continue }
                throw .invalidArgument(
                    "users[\(index)].id",
                    "a name that is not a population user's (u0 … u\(population.clients - 1))",
                    got: "\"\(user.id)\""
                )
            }
        }
        self.scenario = scenario
    }

    /// Checks what can be checked before a run builds anything: that the population fits in ``memoryLimit``.
    /// ``run(on:events:progress:progressInterval:)`` checks it first; a caller may check earlier (a dry run).
    ///
    /// - Throws: `RoomLinkError` naming `population.clients` when it would not fit.
    public func check() throws(RoomLinkError) {
        if let population = scenario.population {
            try ScenarioLimits.checkMemory(
                clients: population.clients,
                limit: memoryLimit,
                field: "population.clients",
                bytesPerClient: ScenarioLimits.estimatedBytesPerClient(for: scenario.dialect)
            )
        }
    }

    /// Runs the scenario on `group` and reports what happened.
    ///
    /// - Parameters:
    ///   - group: The loops to run on: a `SimulationRuntime` for virtual time, a `LibeventLoopGroup` for real time.
    ///   - events: Receives every event in delivery order, with times since the scenario's start (an
    ///     ``EventLogWriter`` writes the event log).
    ///   - progress: Receives a ``LoadProgress`` sample every `progressInterval` of wall time and one at the end.
    ///   - progressInterval: How often `progress` is called, in wall time.
    public func run(
        on group: any RuntimeLoopGroup,
        events: (any EventSink<EventLogLine>)? = nil,
        progress: (@Sendable (LoadProgress) -> Void)? = nil,
        progressInterval: Duration = .seconds(1)
    ) async throws
        -> RunReport
    {
        try check()
        if remote != nil, group is SimulationRuntime {
            throw RoomLinkError(code: .invalidInput, message: "a run against a remote server needs the real clock")
        }
        let progress = progress.map { Progress(report: $0, interval: progressInterval) }
        // Each dialect named, not `scenario.dialect.engine` opened: through an opened existential type the compiler
        // knows no dialect, and specialises none of the run's generic code for one.
        switch scenario.dialect {
        case .zego: return try await run(Zego.self, on: group, events: events, progress: progress)
        case .agora: return try await run(Agora.self, on: group, events: events, progress: progress)
        case .livekit: return try await run(LiveKit.self, on: group, events: events, progress: progress)
        }
    }

    /// Where and how often a run reports its progress.
    struct Progress: Sendable {
        var report: @Sendable (LoadProgress) -> Void
        var interval: Duration
    }

    private func run<Dialect: RoomDialect>(
        _ dialect: Dialect.Type,
        on group: any RuntimeLoopGroup,
        events: (any EventSink<EventLogLine>)?,
        progress: Progress?
    ) async throws -> RunReport {
        let wallStart = ContinuousClock.now
        let usageStart = ProcessUsage.current()
        let rssStart = ProcessUsage.currentRSSBytes()
        if let slice {
            // One slice of the population, on the group as it is (virtual or real).
            guard canShard, let population = scenario.population, slice.count <= population.rooms else {
                throw RoomLinkError(
                    code: .invalidInput,
                    field: "shard",
                    message: "a slice needs a population scenario that splits by room, with at least as many rooms "
                        + "as slices"
                )
            }
            let run = Shard<Dialect>(group: group, origin: group.now)
            let play: @Sendable () async throws -> Void = {
                try await self.play(
                    run,
                    shard: slice.index,
                    of: slice.count,
                    events: events,
                    progress: progress,
                    wallStart: wallStart,
                    all: [run]
                )
            }
            watch([run], group: group, wallStart: wallStart)
            defer { unwatch() }
            if let simulation = group as? SimulationRuntime { try await simulation.run(play) } else { try await play() }
            reportEnd(progress, of: [run], wallStart: wallStart)
            var report = report([run], group: group, wallStart: wallStart, usageStart: usageStart, rssStart: rssStart)
            report.slice = slice
            return report
        }
        guard let simulation = group as? SimulationRuntime else {
            // Real time: one world on the group's loops.
            let run = Shard<Dialect>(group: group, origin: group.now)
            watch([run], group: group, wallStart: wallStart)
            defer { unwatch() }
            try await play(run, shard: 0, of: 1, events: events, progress: progress, wallStart: wallStart, all: [run])
            reportEnd(progress, of: [run], wallStart: wallStart)
            return report([run], group: group, wallStart: wallStart, usageStart: usageStart, rssStart: rssStart)
        }
        let count = events == nil ? shardCount : 1
        var simulations = [simulation]
        for _ in 1..<max(1, count) { simulations.append(SimulationRuntime(seed: simulation.seed)) }
        defer { for extra in simulations.dropFirst() { extra.shutdown() } }
        let shards = simulations.map { Shard<Dialect>(group: $0, origin: $0.now) }
        watch(shards, group: group, wallStart: wallStart)
        defer { unwatch() }
        // Each simulation plays its share of the rooms on its own thread: the shares never talk to each other.
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for (index, shard) in shards.enumerated() {
                let simulation = simulations[index]
                tasks.addTask {
                    try await simulation.run {
                        try await self.play(
                            shard,
                            shard: index,
                            of: shards.count,
                            events: events,
                            progress: index == 0 ? progress : nil,
                            wallStart: wallStart,
                            all: shards
                        )
                    }
                }
            }
            try await tasks.waitForAll()
        }
        reportEnd(progress, of: shards, wallStart: wallStart)
        return report(shards, group: group, wallStart: wallStart, usageStart: usageStart, rssStart: rssStart)
    }

    /// How many simulations this run uses: ``shards`` when the scenario can be split by room, otherwise one.
    private var shardCount: Int {
        guard shards > 1, canShard, let population = scenario.population else { return 1 }
        // With capacity modelled, the rooms of one node share its queue: a node is played whole by one shard.
        return min(shards, population.rooms, scenario.server.isModelled ? scenario.server.nodes : .max)
    }

    /// The shard that plays population room `index` of `shards`: by index, or — capacity modelled — by its node.
    static func shard(ofRoom index: Int, server: ServerPolicy, shards: Int) -> Int {
        guard shards > 1 else { return 0 }
        guard server.isModelled else { return shard(ofRoomByIndex: index, shards: shards) }
        return server.node(of: "room-\(index)") % shards
    }

    /// The shard of population room `index` when rooms go to shards by their index (no modelled server to place
    /// them): arithmetic alone, for a caller that asks of every participant (``ScenarioWorld/runs(_:)``).
    @inline(__always)
    static func shard(ofRoomByIndex index: Int, shards: Int) -> Int { index % shards }

    /// Whether the scenario splits into independent shares of rooms: only population users, each staying in its own
    /// room (no entry names a room for them), so that no message crosses from one share to another.
    public var canShard: Bool {
        guard scenario.users.isEmpty, scenario.population != nil else { return false }
        return scenario.timeline.allSatisfy { entry in
            switch entry.action {
            case .login(let room, _), .logout(let room), .kick(let room): room == nil
            case .switchRoom, .requestReconnect: false
            default: true
            }
        }
    }
}
