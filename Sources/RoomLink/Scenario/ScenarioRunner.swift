internal import Foundation

/// Runs a ``Scenario``: creates its clients and rooms on a loop group, plays its timeline, records every event, and
/// checks the log with the spec oracle.
///
/// On a ``SimulationRuntime`` the run is in virtual time and deterministic: the same scenario and seed give the
/// same event log, byte for byte. On a ``LibeventLoopGroup`` it runs in real (optionally scaled) time.
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

    /// Prepares a run.
    ///
    /// - Throws: ``RoomLinkError`` naming the user whose `id` is also the name of a population user (`u<i>`).
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
    /// - Parameter events: Receives every event in delivery order, with times since the scenario's start (an
    ///   ``EventLogWriter`` writes the event log).
    public func run(
        on group: any RuntimeLoopGroup,
        events: (any EventSink<EventLogLine>)? = nil,
        progress: (@Sendable (LoadProgress) -> Void)? = nil,
        progressInterval: Duration = .seconds(1)
    ) async throws
        -> RunReport
    {
        try await run(
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
        if let simulation = group as? SimulationRuntime {
            return try await simulation.run {
                try await self.play(Dialect.self, on: simulation, events: events, progress: progress)
            }
        }
        return try await play(Dialect.self, on: group, events: events, progress: progress)
    }

    private func play<Dialect: RoomDialect>(
        _ dialect: Dialect.Type,
        on group: any RuntimeLoopGroup,
        events: (any EventSink<EventLogLine>)?,
        progress: Progress?
    ) async throws -> RunReport {
        let wallStart = ContinuousClock.now
        let origin = group.now
        let statistics = collectsLoadStatistics ? LoadStatistics(origin: origin) : nil
        let world = World<Dialect>(scenario: scenario, group: group, forward: events, observer: statistics)
        world.recorder.start(at: origin)
        for (index, entry) in scenario.timeline.enumerated() {
            for (position, roomID) in world.rooms(of: entry).enumerated() {
                try world.schedule(entry, index: index, room: roomID, position: position, origin: origin)
            }
            for (participant, offset) in world.targets(of: entry, index: index) {
                let client = world.clients[participant]
                let deadline = origin.advanced(by: entry.at + offset)
                _ = try client.loop.schedule(at: deadline) {
                    client.assumeIsolated { world.perform(entry.action, by: participant, client: $0) }
                }
                // An outage with a length: this user's network comes back after its own draw.
                if let length = entry.length {
                    var random = SeededRandom(
                        seed: scenario.seed,
                        stream: UInt64(index) &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(participant)
                    )
                    let back = deadline.advanced(by: length.draw(using: &random))
                    guard back < origin.advanced(by: scenario.end) else { continue }
                    _ = try client.loop.schedule(at: back) {
                        client.assumeIsolated { world.perform(.networkUp, by: participant, client: $0) }
                    }
                }
            }
        }
        // Progress: a task on the global executor samples the run every wall interval (the simulation's clock and
        // the statistics are safe to read from any thread), and once more at the end.
        let sampler = progress.map { progress in
            Task.detached {
                var previous = (time: ContinuousClock.now, events: 0)
                while !Task.isCancelled {
                    try? await Task.sleep(for: progress.interval)
                    let sample = Self.sample(
                        world: world,
                        statistics: statistics,
                        origin: origin,
                        group: group,
                        since: previous,
                        wallStart: wallStart,
                        end: scenario.end
                    )
                    previous = (ContinuousClock.now, sample.events)
                    if Task.isCancelled || sample.scenarioSeconds >= sample.scenarioEnd { break }  // the end reports
                    progress.report(sample)
                }
            }
        }
        try await group.loops[0].sleep(until: origin.advanced(by: scenario.end))
        sampler?.cancel()
        if let progress {
            progress.report(
                Self.sample(
                    world: world,
                    statistics: statistics,
                    origin: origin,
                    group: group,
                    since: (wallStart, 0),
                    wallStart: wallStart,
                    end: scenario.end
                )
            )
        }
        world.recorder.close()
        let wall = ContinuousClock.now - wallStart
        let usage = ProcessUsage.current()
        let summary = world.recorder.summary()
        let clients = world.clients.count
        return RunReport(
            dialect: scenario.dialect.rawValue,
            clock: group is SimulationRuntime ? "virtual" : "real",
            seed: scenario.seed,
            clients: clients,
            rooms: world.server.roomCount,
            events: summary.events,
            eventsPerPeer: summary.eventsPerPeer,
            eventsByType: summary.byType,
            eventsByState: summary.byState,
            eventsByReason: summary.byReason,
            eventsByCode: summary.byCode,
            messages: world.network.deliveredCount,
            violations: summary.violations.count,
            violationSample: summary.violations.prefix(20).map(\.description),
            droppedEvents: 0,
            wallSeconds: wall.seconds,
            scenarioSeconds: scenario.end.seconds,
            eventsPerWallSecond: wall > .zero ? Double(summary.events) / wall.seconds : 0,
            peakRSSBytes: usage.peakRSSBytes,
            peakRSSBytesPerClient: clients > 0 ? usage.peakRSSBytes / clients : 0,
            load: statistics?.report(end: scenario.end.seconds)
        )
    }

    /// A progress sample of a run.
    private static func sample<Dialect: RoomDialect>(
        world: World<Dialect>,
        statistics: LoadStatistics?,
        origin: RuntimeInstant,
        group: any RuntimeLoopGroup,
        since previous: (time: ContinuousClock.Instant, events: Int),
        wallStart: ContinuousClock.Instant,
        end: Duration
    ) -> LoadProgress {
        let now = ContinuousClock.now
        let counts = statistics?.snapshot() ?? (online: 0, reconnecting: 0, failed: 0, attempts: 0)
        let events = world.recorder.eventCount
        let elapsed = (now - previous.time).seconds
        return LoadProgress(
            scenarioSeconds: min(end.seconds, Double(group.now.nanoseconds - origin.nanoseconds) / 1e9),
            scenarioEnd: end.seconds,
            wallSeconds: (now - wallStart).seconds,
            online: counts.online,
            reconnecting: counts.reconnecting,
            failed: counts.failed,
            attempts: counts.attempts,
            events: events,
            eventsPerSecond: elapsed > 0 ? Double(events - previous.events) / elapsed : 0,
            rssBytes: ProcessUsage.currentRSSBytes()
        )
    }

    /// Everything a run's timers touch, immutable once built.
    private final class World<Dialect: RoomDialect>: Sendable {
        let recorder: ScenarioRecorder<Dialect.Event>
        let network: SimulatedNetwork
        let server: RoomServer
        /// Named users first, in the scenario's order, then the population (`u0`, `u1`, …).
        let clients: [RoomClient<Dialect>]
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

        init(
            scenario: Scenario,
            group: any RuntimeLoopGroup,
            forward: (any EventSink<EventLogLine>)?,
            observer: (any EngineObserver)?
        ) {
            recorder = ScenarioRecorder(scenario: scenario, forward: forward)
            network = SimulatedNetwork(conditions: scenario.network, seed: scenario.seed)
            let timings = Dialect.Timings(overrides: scenario.timings)
            server = RoomServer(group: group, transport: network, timings: timings.engine.server, auth: scenario.auth)
            let environment = RoomClient<Dialect>.Environment(
                transport: network,
                timings: timings,
                retryPolicy: scenario.retry ?? Dialect.defaultRetryPolicy,
                sink: recorder,
                observer: observer
            )
            var clients: [RoomClient<Dialect>] = []
            var named: [String: Int] = [:]
            for user in scenario.users {
                named[user.id] = clients.count
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
            self.named = named
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
        ) throws {
            let loop = server.serverRoom(roomID).loop
            let network = network
            let cutOff = entry.action == .partition
            let deadline = origin.advanced(by: entry.at)
            _ = try loop.schedule(at: deadline) { network.setPartitioned(cutOff, room: roomID) }
            guard cutOff, let length = entry.length else { return }
            var random = SeededRandom(
                seed: seed,
                stream: UInt64(index) &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(position) &+ 0x5EED
            )
            let healed = deadline.advanced(by: length.draw(using: &random))
            guard healed < origin.advanced(by: end) else { return }
            _ = try loop.schedule(at: healed) { network.setPartitioned(false, room: roomID) }
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
                network.setLink(.down, for: client)
            case .networkUp:
                network.setLink(.up, for: client)
            case .blackhole:
                network.setLink(.blackhole, for: client)
            case .networkChange:
                client.networkChanged()
            case .kick(let room):
                // A population entry without a room kicks each user out of its own room.
                guard let room = room ?? population?.room(ofUser: index - namedOptions.count) else { return }
                server.kickOut(roomID: room, userIDs: [client.userID])
            case .requestReconnect(let room):
                server.requestReconnect(roomID: room, userIDs: [client.userID])
            case .expireToken:
                server.expireToken(userID: client.userID, inRooms: client.roomIDs)
            case .renewToken(let token):
                Dialect.apply(.renewToken(token), on: client)
            case .setClientRole(let role):
                Dialect.apply(.setClientRole(role), on: client)
            case .setCloudProxy:
                Dialect.apply(.setCloudProxy, on: client)
            case .partition, .heal:
                return  // acts on rooms (see `schedule(_:index:room:position:origin:)`)
            }
        }
    }
}
