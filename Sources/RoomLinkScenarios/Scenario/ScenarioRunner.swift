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

    /// What a run asks of its network: the scenario's conditions and seed, on the loops of one share.
    public struct NetworkPlan: Sendable {
        /// The scenario's `network`.
        public var conditions: Scenario.Network
        /// The scenario's seed.
        public var seed: UInt64
        /// The loops the share runs on.
        public var group: any RuntimeLoopGroup
    }

    /// A `SimulatedNetwork` with the plan's conditions. In real time, same-loop messages ride each loop's delay
    /// line (the order of one instant's arrivals is the clock's there); virtual time keeps a timer per message, so a
    /// run replays its recorded order exactly.
    public static func simulatedNetwork(_ plan: NetworkPlan) -> any RoomTransport & NetworkFaults {
        SimulatedNetwork(
            conditions: plan.conditions,
            seed: plan.seed,
            batchingOn: plan.group is SimulationRuntime ? [] : plan.group.loops
        )
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
        if let population = scenario.population {
            try ScenarioLimits.checkMemory(clients: population.clients, limit: memoryLimit, field: "population.clients")
        }
        if remote != nil, group is SimulationRuntime {
            throw RoomLinkError(code: .invalidInput, message: "a run against a remote server needs the real clock")
        }
        return try await run(
            scenario.dialect.engine,
            on: group,
            events: events,
            progress: progress.map { Progress(report: $0, interval: progressInterval) }
        )
    }

    /// Where and how often a run reports its progress.
    private struct Progress: Sendable {
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
            if let simulation = group as? SimulationRuntime { try await simulation.run(play) } else { try await play() }
            reportEnd(progress, of: [run], wallStart: wallStart)
            var report = report([run], group: group, wallStart: wallStart, usageStart: usageStart, rssStart: rssStart)
            report.slice = slice
            return report
        }
        guard let simulation = group as? SimulationRuntime else {
            // Real time: one world on the group's loops.
            let run = Shard<Dialect>(group: group, origin: group.now)
            try await play(run, shard: 0, of: 1, events: events, progress: progress, wallStart: wallStart, all: [run])
            reportEnd(progress, of: [run], wallStart: wallStart)
            return report([run], group: group, wallStart: wallStart, usageStart: usageStart, rssStart: rssStart)
        }
        let count = events == nil ? shardCount : 1
        var simulations = [simulation]
        for _ in 1..<max(1, count) { simulations.append(SimulationRuntime(seed: simulation.seed)) }
        defer { for extra in simulations.dropFirst() { extra.shutdown() } }
        let shards = simulations.map { Shard<Dialect>(group: $0, origin: $0.now) }
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
        return server.isModelled ? server.node(of: "room-\(index)") % shards : index % shards
    }

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

    /// When a run's faults (outages, partitions, kicks, token expiries) began and ended, from the scenario's start.
    struct FaultSpan: Sendable {
        var first: Duration?
        var last: Duration?

        mutating func note(_ time: Duration) {
            first = min(first ?? time, time)
            last = max(last ?? time, time)
        }

        mutating func merge(_ other: FaultSpan) {
            if let time = other.first { note(time) }
            if let time = other.last { note(time) }
        }
    }

    /// One simulation's (or the real clock's) part of a run: its group, its world once built, its statistics.
    private final class Shard<Dialect: RoomDialect>: Sendable {
        let group: any RuntimeLoopGroup
        private let start: LockedBox<RuntimeInstant>
        private let built = LockedBox<World<Dialect>?>(nil)
        private let stopped = LockedBox(false)

        /// The span of the timeline's faults this shard scheduled.
        private let faultSpan = LockedBox(FaultSpan())
        var faults: FaultSpan {
            get { faultSpan.withLock { $0 } }
            set { faultSpan.withLock { $0 = newValue } }
        }

        /// Whether the shard stopped before the scenario's end (``RunInterruption``).
        var interrupted: Bool {
            get { stopped.withLock { $0 } }
            set { stopped.withLock { $0 = newValue } }
        }

        init(group: any RuntimeLoopGroup, origin: RuntimeInstant) {
            self.group = group
            self.start = LockedBox(origin)
        }

        /// The scenario's time zero on this shard's clock.
        var origin: RuntimeInstant {
            get { start.withLock { $0 } }
            set { start.withLock { $0 = newValue } }
        }

        var world: World<Dialect>? {
            get { built.withLock { $0 } }
            set { built.withLock { $0 = newValue } }
        }
    }

    /// Builds one shard's world on its group, plays the timeline's entries that concern it, and waits for the end.
    private func play<Dialect: RoomDialect>(
        _ shard: Shard<Dialect>,
        shard index: Int,
        of count: Int,
        events: (any EventSink<EventLogLine>)?,
        progress: Progress?,
        wallStart: ContinuousClock.Instant,
        all shards: [Shard<Dialect>]
    ) async throws {
        let buildStart = shard.group.now
        // A modelled server's report judges recovery from the load statistics' series.
        let statistics =
            collectsLoadStatistics || scenario.server.isModelled ? LoadStatistics(origin: buildStart) : nil
        let world = World<Dialect>(
            scenario: scenario,
            group: shard.group,
            forward: events,
            statistics: statistics,
            logsAttempts: logsAttempts,
            network: network,
            remote: remote,
            shard: index,
            of: count
        )
        if !(shard.group is SimulationRuntime) {
            // Real time ran while the world was built (a second for a million clients; at scale 0.01 that is 100
            // scenario seconds): the scenario starts once it is built, after a lead for the timeline's timers to be
            // armed (from here, through each loop's inbox: measured at about the build's time, so twice that), instead
            // of finding its first minutes already past.
            let built = shard.group.now
            shard.origin = built.advanced(by: max(buildStart.duration(to: built) * 2, .milliseconds(10)))
        }
        let origin = shard.origin
        statistics?.start(at: origin)
        remote?.connections?.start(at: origin)
        world.server?.nodes?.start(at: origin)
        shard.world = world
        world.recorder.start(at: origin)
        var faults = FaultSpan()
        for (index, entry) in scenario.timeline.enumerated() {
            let isFault = entry.action.isFault
            if isFault { faults.note(entry.at) }
            for (position, roomID) in world.rooms(of: entry).enumerated() where world.owns(room: roomID) {
                let healed = try world.schedule(entry, index: index, room: roomID, position: position, origin: origin)
                if isFault { faults.note(healed.map { origin.duration(to: $0) } ?? scenario.end) }
            }
            for (participant, offset) in world.targets(of: entry, index: index) {
                guard let client = world.clients[participant] else { continue }
                let deadline = origin.advanced(by: entry.at + offset)
                if isFault { faults.note(entry.at + offset) }
                _ = try client.loop.schedule(at: deadline) {
                    client.assumeIsolated { world.perform(entry.action, by: participant, client: $0) }
                }
                // An outage with a length: this user's network comes back after its own draw.
                if let length = entry.length {
                    let back = deadline.advanced(
                        by: scenario.outageDraw(length, entry: index, participant: participant)
                    )
                    guard back < origin.advanced(by: scenario.end) else {
                        if isFault { faults.note(scenario.end) }
                        continue
                    }
                    if isFault { faults.note(origin.duration(to: back)) }
                    _ = try client.loop.schedule(at: back) {
                        client.assumeIsolated { world.perform(.networkUp, by: participant, client: $0) }
                    }
                }
            }
        }
        shard.faults = faults
        // Progress (the first shard reports for all): a task on the global executor samples the run every wall
        // interval (the clocks and the statistics are safe to read from any thread), and once more at the end.
        let end = scenario.end
        let sampler = progress.map { progress in
            Task.detached {
                var previous = (time: ContinuousClock.now, events: 0)
                while !Task.isCancelled {
                    try? await Task.sleep(for: progress.interval)
                    let sample = Self.sample(shards, since: previous, wallStart: wallStart, end: end)
                    previous = (ContinuousClock.now, sample.events)
                    if Task.isCancelled || sample.scenarioSeconds >= sample.scenarioEnd { break }  // the end reports
                    progress.report(sample)
                }
            }
        }
        // Every loop must reach the end, not only the first: on the real clock a loop that was preempted still has
        // the timers due before the end to fire (each loop fires in deadline order, so its sleep ends after them).
        let loops = shard.group.loops
        if let interruption {
            // The wait is a task of its own that the interruption cancels; it runs on the first loop, as the wait
            // below would, so virtual time sees the same timers armed at the same instant.
            let waiter = Task(executorPreference: loops[0]) {
                for loop in loops { try await loop.sleep(until: origin.advanced(by: end)) }
            }
            interruption.onInterrupt { waiter.cancel() }
            do {
                try await waiter.value
            } catch is CancellationError {
                shard.interrupted = true
            }
        } else {
            for loop in loops { try await loop.sleep(until: origin.advanced(by: end)) }
        }
        sampler?.cancel()
        world.recorder.close()
        // The last sample is the caller's (``reportEnd(_:of:wallStart:)``), once every shard is at the end: waiting
        // for the others here, inside a simulation's run, would be waiting on something the simulation cannot
        // deliver, and a simulation with nothing left to do calls that a stall.
    }

    /// The last progress sample of a run whose shards have all returned (none when it was interrupted).
    private func reportEnd<Dialect: RoomDialect>(
        _ progress: Progress?,
        of shards: [Shard<Dialect>],
        wallStart: ContinuousClock.Instant
    ) {
        guard let progress, !shards.contains(where: \.interrupted) else { return }
        progress.report(Self.sample(shards, since: (wallStart, 0), wallStart: wallStart, end: scenario.end))
    }

    /// The report of a run from its shards.
    private func report<Dialect: RoomDialect>(
        _ shards: [Shard<Dialect>],
        group: any RuntimeLoopGroup,
        wallStart: ContinuousClock.Instant,
        usageStart: ProcessUsage,
        rssStart: Int
    ) -> RunReport {
        let worlds = shards.compactMap(\.world)
        let wall = ContinuousClock.now - wallStart
        let usage = ProcessUsage.current()
        var summary = worlds[0].recorder.summary()
        for world in worlds.dropFirst() { summary.merge(world.recorder.summary()) }
        let clients = worlds.reduce(0) { $0 + $1.clientCount }
        let tallies = worlds.compactMap(\.statistics).map { $0.tally(end: scenario.end.seconds) }
        let load =
            collectsLoadStatistics && !tallies.isEmpty
            ? LoadStatistics.report(merging: tallies, end: scenario.end.seconds, clients: clients) : nil
        let serversLoad =
            load
            ?? (tallies.isEmpty
                ? nil : LoadStatistics.report(merging: tallies, end: scenario.end.seconds, clients: clients))
        let loops = group as? any TimerLatenessReporting
        let lateness = loops?.timerLateness
        return RunReport(
            dialect: scenario.dialect.rawValue,
            clock: group is SimulationRuntime ? "virtual" : "real",
            seed: scenario.seed,
            clients: clients,
            rooms: worlds.reduce(0) { $0 + ($1.server?.roomCount ?? $1.remoteRoomCount) },
            events: summary.events,
            eventsPerPeer: summary.eventsPerPeer,
            eventsByType: summary.byType,
            eventsByState: summary.byState,
            eventsByReason: summary.byReason,
            eventsByCode: summary.byCode,
            messages: worlds.reduce(0) { $0 + $1.network.deliveredCount },
            violations: summary.violations.count,
            violationSample: summary.violations.prefix(20).map(\.description),
            droppedEvents: 0,
            wallSeconds: wall.seconds,
            scenarioSeconds: shards.contains(where: \.interrupted)
                ? shards.map { $0.origin.duration(to: $0.group.now).seconds }.min().map {
                    min(max(0, $0), scenario.end.seconds)
                } ?? 0
                : scenario.end.seconds,
            eventsPerWallSecond: wall > .zero ? Double(summary.events) / wall.seconds : 0,
            peakRSSBytes: usage.peakRSSBytes,
            peakRSSBytesPerClient: clients > 0 ? usage.peakRSSBytes / clients : 0,
            bytesPerClient: clients > 0 ? max(0, usage.peakRSSBytes - rssStart) / clients : 0,
            cpuSeconds: usage.cpuSeconds - usageStart.cpuSeconds,
            shards: shards.count,
            timerLateness: lateness,
            keptUp: lateness.map { lateness in
                RunReport.keptUp(
                    timerLateness: lateness,
                    timeScale: loops?.scenarioSecondsPerSecond ?? 1,
                    latency: scenario.network.latency
                )
            },
            load: load,
            interrupted: shards.contains(where: \.interrupted),
            servers: serverReport(worlds: worlds, shards: shards, load: serversLoad),
            timerLatenessTally: loops?.timerLatenessTally,
            connections: remote?.connections.map { ConnectionReport($0.tally(end: scenario.end.seconds)) }
        )
    }

    /// The servers' report, when their capacity is modelled: each node's statistics merged over the shards (a node
    /// is played by one shard; the others' copies are empty).
    private func serverReport<Dialect: RoomDialect>(
        worlds: [World<Dialect>],
        shards: [Shard<Dialect>],
        load: LoadReport?
    ) -> ServerReport? {
        guard scenario.server.isModelled else { return nil }
        var nodes = Array(repeating: ServerNodeStatistics(origin: .zero), count: scenario.server.nodes)
        for world in worlds {
            for (index, statistics) in (world.server?.nodes?.statistics ?? []).enumerated() {
                nodes[index].merge(statistics)
            }
        }
        var faults = FaultSpan()
        for shard in shards { faults.merge(shard.faults) }
        return ServerReport(
            policy: scenario.server,
            nodes: nodes,
            load: load,
            firstFault: faults.first?.seconds,
            lastFaultEnd: faults.last?.seconds,
            end: scenario.end.seconds
        )
    }

    /// A progress sample of a run: counts summed over its shards, scenario time of the one furthest behind.
    private static func sample<Dialect: RoomDialect>(
        _ shards: [Shard<Dialect>],
        since previous: (time: ContinuousClock.Instant, events: Int),
        wallStart: ContinuousClock.Instant,
        end: Duration
    ) -> LoadProgress {
        let now = ContinuousClock.now
        var counts = (online: 0, reconnecting: 0, failed: 0, attempts: 0)
        var events = 0
        var scenarioSeconds = end.seconds
        for shard in shards {
            scenarioSeconds = min(
                scenarioSeconds,
                Double(shard.group.now.nanoseconds - shard.origin.nanoseconds) / 1e9
            )
            guard let world = shard.world else {
                scenarioSeconds = 0
                continue
            }
            events += world.recorder.eventCount
            if let part = world.statistics?.snapshot() {
                counts.online += part.online
                counts.reconnecting += part.reconnecting
                counts.failed += part.failed
                counts.attempts += part.attempts
            }
        }
        let elapsed = (now - previous.time).seconds
        return LoadProgress(
            scenarioSeconds: max(0, scenarioSeconds),
            scenarioEnd: end.seconds,
            wallSeconds: (now - wallStart).seconds,
            online: counts.online,
            reconnecting: counts.reconnecting,
            failed: counts.failed,
            attempts: counts.attempts,
            events: events,
            eventsPerSecond: elapsed > 0 ? Double(events - previous.events) / elapsed : 0,
            rssBytes: ProcessUsage.currentRSSBytes(),
            latePeakMs: (shards.first?.group as? any TimerLatenessReporting).map {
                $0.takeLatenessPeak() / .milliseconds(1)
            }
        )
    }

    /// Everything a run's timers touch, immutable once built.
    private final class World<Dialect: RoomDialect>: Sendable {
        let recorder: ScenarioRecorder<Dialect.Event>
        let network: any ClientTransport & NetworkFaults
        /// The server, when it runs in this process; `nil` against a remote one.
        let server: RoomServer?
        /// Where the scenario's kicks, reconnect requests and token expiries go: the server, or a remote one's admin
        /// API.
        let administration: any RoomAdministration
        let group: any RuntimeLoopGroup
        /// Named users first, in the scenario's order, then the population (`u0`, `u1`, …); `nil` for users of
        /// another shard.
        let clients: [RoomClient<Dialect>?]
        /// The clients this world runs.
        let clientCount: Int
        /// This world's shard, and how many there are: it runs the population rooms whose index modulo `shards` is
        /// `shard` (and the named users, in shard 0).
        let shard: Int
        let shards: Int
        /// The join options of each named user, by index.
        let namedOptions: [JoinOptions]
        /// Participant indices by named user ID.
        let named: [String: Int]
        /// The population (its users' rooms and join options derive from their index), if any.
        let population: Scenario.Population?
        /// The population in seeded shuffled order (indices into `clients`).
        let shuffled: [Int]
        /// The population's rooms in their own seeded shuffled order (room `i` is `room-<i>`).
        let shuffledRooms: [Int]
        let seed: UInt64
        let end: Duration
        /// The load statistics, told of each outage (for the peer-sees-leave latency).
        let statistics: LoadStatistics?

        init(
            scenario: Scenario,
            group: any RuntimeLoopGroup,
            forward: (any EventSink<EventLogLine>)?,
            statistics: LoadStatistics?,
            logsAttempts: Bool = false,
            network makeNetwork: (ScenarioRunner.NetworkPlan) -> any RoomTransport & NetworkFaults,
            remote: ScenarioRunner.RemoteServer? = nil,
            shard: Int = 0,
            of shards: Int = 1
        ) {
            self.statistics = statistics
            self.shard = shard
            self.shards = shards
            recorder = ScenarioRecorder(
                scenario: scenario,
                forward: forward,
                users: scenario.users.count + (scenario.population?.clients ?? 0) / max(1, shards)
            )
            self.group = group
            let plan = ScenarioRunner.NetworkPlan(conditions: scenario.network, seed: scenario.seed, group: group)
            let timings = Dialect.Timings(overrides: scenario.timings)
            if let remote {
                network = remote.network(plan)
                server = nil
                administration = remote.administration
            } else {
                let local = makeNetwork(plan)
                let server = RoomServer(
                    group: group,
                    transport: local,
                    timings: timings.engine.server,
                    auth: scenario.auth,
                    policy: scenario.server
                )
                network = local
                self.server = server
                administration = server
            }
            let environment = RoomClient<Dialect>.Environment(
                transport: network,
                timings: timings,
                retryPolicy: scenario.retry ?? Dialect.defaultRetryPolicy,
                sink: recorder,
                observer: statistics,
                logsAttempts: logsAttempts
            )
            var clients: [RoomClient<Dialect>?] = []
            var named: [String: Int] = [:]
            for user in scenario.users {
                named[user.id] = clients.count
                guard shard == 0 else {
                    clients.append(nil)
                    continue
                }
                clients.append(
                    RoomClient(
                        id: user.id,
                        userID: user.userID,
                        roomMode: user.roomMode,
                        loop: group.loop(for: user.id),
                        environment: environment,
                        seed: scenario.seed
                    )
                )
            }
            namedOptions = scenario.users.map {
                JoinOptions(
                    token: $0.token,
                    notifiesPeers: $0.userStatusNotify,
                    maxMemberCount: $0.maxMemberCount,
                    hidden: $0.role == .audience
                )
            }
            let populationStart = clients.count
            population = scenario.population.flatMap { $0.clients > 0 ? $0 : nil }
            if let population {
                clients.reserveCapacity(clients.count + population.clients)
                for index in 0..<population.clients {
                    let room = index % population.rooms
                    guard ScenarioRunner.shard(ofRoom: room, server: scenario.server, shards: shards) == shard else {
                        clients.append(nil)
                        continue
                    }
                    clients.append(
                        RoomClient(
                            id: Scenario.Population.userName(index),
                            loop: group.loop(for: population.room(ofUser: index)),
                            environment: environment,
                            seed: scenario.seed
                        )
                    )
                }
            }
            var random = SeededRandom(seed: scenario.seed, stream: StableHash.fnv1a("population"))
            shuffled = Array(populationStart..<clients.count).shuffled(using: &random)
            var roomRandom = SeededRandom(seed: scenario.seed, stream: StableHash.fnv1a("rooms"))
            shuffledRooms = Array(0..<(population?.rooms ?? 0)).shuffled(using: &roomRandom)
            seed = scenario.seed
            end = scenario.end
            self.clients = clients
            self.clientCount = clients.reduce(0) { $0 + ($1 == nil ? 0 : 1) }
            self.named = named
        }

        /// The rooms a remote server was asked to hold: the population's.
        var remoteRoomCount: Int { population?.rooms ?? 0 }

        /// Whether this world's shard runs the room `roomID` (population rooms are `room-<index>`; any other room
        /// belongs to shard 0).
        func owns(room roomID: String) -> Bool {
            guard shards > 1 else { return true }
            guard roomID.hasPrefix("room-"), let index = Int(roomID.dropFirst(5)) else { return shard == 0 }
            return ScenarioRunner.shard(ofRoom: index, server: server?.nodes?.policy ?? .unlimited, shards: shards)
                == shard
        }

        /// The participants an entry acts on, each with its offset from the entry's time.
        func targets(of entry: Scenario.Entry, index: Int) -> [(Int, Duration)] {
            switch entry.target {
            case .user(let id):
                return named[id].map { [($0, .zero)] } ?? []
            case .population(let fraction, let over, let offset):
                let picked = Self.share(fraction, offset: offset, of: shuffled)
                let step = picked.isEmpty ? .zero : over / picked.count
                return picked.enumerated().map { ($0.element, step * $0.offset) }
            case .room, .populationRooms:
                return []
            }
        }

        /// The rooms a `partition` or `heal` entry acts on (none for an entry that acts on users).
        func rooms(of entry: Scenario.Entry) -> [String] {
            switch entry.target {
            case .user, .population: return []
            case .room(let roomID): return [roomID]
            case .populationRooms(let fraction, let offset):
                // Population user `i` is in `room-<i mod rooms>` (``Scenario/Population/room(ofUser:)``).
                return Self.share(fraction, offset: offset, of: shuffledRooms).map { "room-\($0)" }
            }
        }

        /// Cuts off or heals `roomID` at the entry's time, on the room's loop; a partition with a length heals after
        /// the room's own draw (stream: the entry's index and the room's position in it).
        func schedule(
            _ entry: Scenario.Entry,
            index: Int,
            room roomID: String,
            position: Int,
            origin: RuntimeInstant
        ) throws -> RuntimeInstant? {
            let room = server?.serverRoom(roomID)
            let loop = room?.loop ?? group.loop(for: roomID)
            let (network, statistics) = (network, statistics)
            let cutOff = entry.action == .partition
            let deadline = origin.advanced(by: entry.at)
            _ = try loop.schedule(at: deadline) {
                network.setPartitioned(cutOff, room: roomID)
                // A remote server's members are its own: the statistics hear of outages its clients see.
                guard cutOff, let statistics, let room else { return }
                // Every member's connection to the room goes now.
                let now = room.loop.now
                for user in room.assumeIsolated({ $0.memberIDs }) { statistics.outageBegan(user: user, at: now) }
            }
            guard cutOff, let length = entry.length else { return deadline }
            var random = SeededRandom(
                seed: seed,
                stream: UInt64(index) &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(position) &+ 0x5EED
            )
            let healed = deadline.advanced(by: length.draw(using: &random))
            guard healed < origin.advanced(by: end) else { return nil }
            _ = try loop.schedule(at: healed) { network.setPartitioned(false, room: roomID) }
            return healed
        }

        /// The `fraction` of `order` that starts `offset` into it.
        private static func share(_ fraction: Double, offset: Double, of order: [Int]) -> ArraySlice<Int> {
            let start = min(order.count, Int((Double(order.count) * offset).rounded()))
            let count = min(order.count - start, Int((Double(order.count) * fraction).rounded()))
            return order[start..<(start + count)]
        }

        /// Carries out `action` for participant `index`, on its client's loop.
        func perform(_ action: Scenario.Action, by index: Int, client: isolated RoomClient<Dialect>) {
            switch action {
            case .login(let room, let token):
                // A population user's room and options derive from its index; a named user's are in the scenario.
                let populationIndex = index - namedOptions.count
                var options =
                    populationIndex < 0
                    ? namedOptions[index] : JoinOptions(notifiesPeers: population?.userStatusNotify ?? false)
                if let token { options.token = token }
                guard let room = room ?? (populationIndex < 0 ? nil : population?.room(ofUser: populationIndex))
                else { return }
                Dialect.apply(.join(room: room, options: options), on: client)
            case .logout(let room):
                Dialect.apply(.leave(room: room), on: client)
            case .switchRoom(let from, let to):
                Dialect.apply(.switchRoom(from: from, to: to), on: client)
            case .networkDown:
                statistics?.outageBegan(user: client.userID, at: client.loop.now)
                network.setLink(.down, for: client)
            case .networkUp:
                network.setLink(.up, for: client)
            case .blackhole:
                statistics?.outageBegan(user: client.userID, at: client.loop.now)
                network.setLink(.blackhole, for: client)
            case .networkChange:
                client.networkChanged()
            case .kick(let room):
                // A population entry without a room kicks each user out of its own room.
                guard let room = room ?? population?.room(ofUser: index - namedOptions.count) else { return }
                administration.kickOut(roomID: room, userIDs: [client.userID])
            case .requestReconnect(let room):
                administration.requestReconnect(roomID: room, userIDs: [client.userID])
            case .expireToken:
                administration.expireToken(userID: client.userID, inRooms: client.roomIDs)
            case .renewToken(let token):
                Dialect.apply(.renewToken(token), on: client)
            case .vendor(let call):
                Dialect.apply(.vendor(call), on: client)
            case .partition, .heal:
                return  // acts on rooms (see `schedule(_:index:room:position:origin:)`)
            }
        }
    }
}
