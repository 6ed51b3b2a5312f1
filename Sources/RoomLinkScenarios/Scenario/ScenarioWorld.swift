internal import Foundation

/// Everything a run's timers touch, immutable once built: one share's server, network, clients and the
/// population's seeded orders (see ``ScenarioRunner``).
final class ScenarioWorld<Dialect: RoomDialect>: Sendable {
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
    /// The index of the population's first user in `clients` (the named users come before).
    let populationStart: Int
    /// Whether population rooms go to shards by index modulo `shards` (not by a modelled server's node).
    let shardsRoomsByIndex: Bool
    /// The population in seeded shuffled order (indices into `clients`): four bytes each, as a population has at
    /// most 100,000,000 users (each shard's world keeps the whole order, so a word each took 8 MB a shard at 1M).
    let shuffled: [UInt32]
    /// The population's rooms in their own seeded shuffled order (room `i` is `room-<i>`).
    let shuffledRooms: [Int]
    let seed: UInt64
    let end: Duration
    /// The load statistics, told of each outage (for the peer-sees-leave latency).
    let statistics: LoadStatistics?

    /// How many population users a room holds at most: user `i` is in `room-<i mod rooms>`.
    static func roomSize(of population: Scenario.Population) -> Int? {
        population.rooms > 0 ? (population.clients + population.rooms - 1) / population.rooms : nil
    }

    /// Whether this world runs participant `index` (`clients[index]` is not `nil`), from the index alone where the
    /// population's rooms go to shards by index: a timeline cursor asks it of every participant of a population
    /// entry, half of them another shard's, and reading the array (80 MB at ten million) missed the cache each time.
    @inline(__always)
    func runs(_ participant: Int) -> Bool {
        guard shards > 1, shardsRoomsByIndex, let population, participant >= populationStart else {
            return clients[participant] != nil
        }
        let room = (participant - populationStart) % population.rooms
        return ScenarioRunner.shard(ofRoomByIndex: room, shards: shards) == shard
    }

    init(
        scenario: Scenario,
        group: any RuntimeLoopGroup,
        forward: (any EventSink<EventLogLine>)?,
        statistics: LoadStatistics?,
        logsAttempts: Bool = false,
        network makeNetwork: (ScenarioRunner.NetworkPlan) -> any RoomTransport & NetworkFaults,
        remote: ScenarioRunner.RemoteServer? = nil,
        tokens: ScenarioRunner.TokenPlan? = nil,
        shard: Int = 0,
        of shards: Int = 1
    ) {
        self.statistics = statistics
        self.shard = shard
        self.shards = shards
        var judged = scenario
        if tokens != nil { judged.tokensExpireOnTheirOwn = true }
        recorder = ScenarioRecorder(
            scenario: judged,
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
                tokens: tokens?.verified,
                policy: scenario.server,
                expectedRoomSize: scenario.population.flatMap(Self.roomSize(of:))
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
            logsAttempts: logsAttempts,
            tokens: tokens.map { TokenSupply(source: $0.source(group.loops), observer: $0.statistics) }
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
        self.populationStart = populationStart
        shardsRoomsByIndex = !scenario.server.isModelled
        population = scenario.population.flatMap { $0.clients > 0 ? $0 : nil }
        var random = SeededRandom(seed: scenario.seed, stream: StableHash.fnv1a("population"))
        // The same order as shuffling `Int`s: a shuffle's draws depend on the count alone.
        shuffled = Array(UInt32(populationStart)..<UInt32(populationStart + (population?.clients ?? 0)))
            .shuffled(using: &random)
        if let population {
            clients.append(contentsOf: repeatElement(nil, count: population.clients))
            // Made in the shuffle's order, the order they log in, so their heartbeats (and a storm's slice of them)
            // come round in the order of their addresses: a run's clients are gigabytes, and in the order of their
            // indices each beat touched memory far from the last one's.
            for participant in shuffled {
                let index = Int(participant) - populationStart
                let room = index % population.rooms
                guard ScenarioRunner.shard(ofRoom: room, server: scenario.server, shards: shards) == shard else {
                    continue
                }
                clients[Int(participant)] = RoomClient(
                    id: Scenario.Population.userName(index),
                    loop: group.loop(for: population.room(ofUser: index)),
                    environment: environment,
                    seed: scenario.seed
                )
            }
        }
        var roomRandom = SeededRandom(seed: scenario.seed, stream: StableHash.fnv1a("rooms"))
        shuffledRooms = Array(0..<(population?.rooms ?? 0)).shuffled(using: &roomRandom)
        seed = scenario.seed
        end = scenario.end
        self.clients = clients
        self.clientCount = clients.reduce(0) { $0 + ($1 == nil ? 0 : 1) }
        self.named = named
    }
}
