import Foundation
import RoomLink

/// What `scale` measured.
struct ScaleResult: Codable, Sendable {
    var kind = "scale"
    var clients: Int
    var rooms: Int
    var scenarioSeconds: Double
    var userStatusNotify: Bool
    var events: Int
    var violations: Int
    var wallSeconds: Double
    var eventsPerWallSecond: Double
    var peakRSSBytes: Int
    /// RSS before the run started (the process, its libraries, the scenario).
    var baselineRSSBytes: Int
    /// (peak RSS − baseline) / clients.
    var bytesPerClient: Int
}

/// Where a client's memory goes: RSS added per client by each stage, for `clients` clients in `rooms` rooms.
struct MemoryBreakdown: Codable, Sendable {
    var kind = "memoryBreakdown"
    var clients: Int
    var rooms: Int
    /// A `ZegoClient` actor and its place in the population (no room, no stream).
    var clientActorBytes: Int
    /// `events()` called on each: an `AsyncStream` nobody iterates yet.
    var idleStreamBytes: Int
    /// A consumer task waiting in `for await` on each stream.
    var consumerTaskBytes: Int
    /// Logged in (no stream): the client's room session, its heartbeat timer, the server's member record and
    /// deadline list entries, the messages in flight.
    var loggedInBytes: Int
    /// Logged in with user-status notification in rooms of `clients / rooms` members: the peer list on each client.
    var peerListBytes: Int
}

enum ScaleCases {
    /// The scale scenario: a population logging in over the first minute, then two outage waves — 30 % lose their
    /// network for a minute at 5 min (shorter than the server's timeout), and 20 % fall into a blackhole for three
    /// minutes at 15 min (longer) — until `duration`.
    static func scenario(clients: Int, rooms: Int, duration: Duration, notify: Bool, seed: UInt64) throws -> Scenario {
        let json = """
            { "dialect": "zego", "seed": \(seed),
              "network": { "latency": "40ms", "jitter": "20ms", "loss": 0.001 },
              "population": { "clients": \(clients), "rooms": \(rooms), "userStatusNotify": \(notify) },
              "timeline": [
                { "at": "0s",  "user": "*", "action": "login", "over": "60s" },
                { "at": "5m",  "user": "*", "action": "networkDown", "fraction": 0.3, "over": "10s" },
                { "at": "6m",  "user": "*", "action": "networkUp", "fraction": 0.3, "over": "10s" },
                { "at": "15m", "user": "*", "action": "blackhole", "fraction": 0.2, "over": "30s" },
                { "at": "18m", "user": "*", "action": "networkUp", "fraction": 0.2, "over": "30s" } ],
              "end": "\(Int(duration.seconds))s" }
            """
        return try Scenario(json: Data(json.utf8))
    }

    static func run(_ scenario: Scenario) async throws -> ScaleResult {
        let baseline = ProcessUsage.currentRSSBytes()
        let runner = try ScenarioRunner(scenario: scenario)
        let report = try await SimulationRuntime.withSimulation(seed: scenario.seed) { simulation in
            try await runner.run(on: simulation)
        }
        let clients = report.clients
        return ScaleResult(
            clients: clients,
            rooms: report.rooms,
            scenarioSeconds: report.scenarioSeconds,
            userStatusNotify: scenario.population?.userStatusNotify ?? false,
            events: report.events,
            violations: report.violations,
            wallSeconds: report.wallSeconds,
            eventsPerWallSecond: report.eventsPerWallSecond,
            peakRSSBytes: report.peakRSSBytes,
            baselineRSSBytes: baseline,
            bytesPerClient: (report.peakRSSBytes - baseline) / max(1, clients)
        )
    }

    /// Builds the population stage by stage in one simulation and reads RSS after each.
    static func breakdown(clients: Int, rooms: Int) async throws -> MemoryBreakdown {
        try await SimulationRuntime.withSimulation(seed: 1) { simulation in
            try await simulation.run {
                func rss() -> Int { ProcessUsage.currentRSSBytes() }
                func perClient(_ from: Int, _ to: Int) -> Int { (to - from) / clients }
                let network = SimulatedNetwork(conditions: .init(latency: .milliseconds(40)), seed: 1)
                let server = RoomServer(group: simulation, transport: network)
                let environment = ZegoClient.Environment(transport: network)
                // Stages that only add come first, so that memory freed by a later stage is not counted twice.
                let start = rss()
                let listened = (0..<clients).map {
                    ZegoClient(id: "s\($0)", loop: simulation, environment: environment)
                }
                let actors = rss()
                var streams: [AsyncStream<Stamped<ZegoEvent>>] = []
                streams.reserveCapacity(clients)
                for client in listened { streams.append(await client.events()) }
                let withStreams = rss()
                let consumers = streams.map { stream in
                    Task(executorPreference: simulation) { for await _ in stream {} }
                }
                try await simulation.sleep(for: .milliseconds(1))
                let withConsumers = rss()
                // A second population logs in (no streams): sessions, timers, members.
                let population = (0..<clients).map {
                    ZegoClient(id: Scenario.Population.userName($0), loop: simulation, environment: environment)
                }
                let beforeLogin = rss()
                for (index, client) in population.enumerated() {
                    await client.loginRoom("room-\(index % rooms)")
                }
                try await simulation.sleep(for: .seconds(65))  // logged in, heartbeats sent and answered
                let loggedIn = rss()
                // A third logs in with notification on, in rooms of its own: the same plus a peer list each.
                let notified = (0..<clients).map {
                    ZegoClient(id: "n\($0)", loop: simulation, environment: environment)
                }
                for (index, client) in notified.enumerated() {
                    await client.loginRoom("notify-\(index % rooms)", config: ZegoRoomConfig(isUserStatusNotify: true))
                }
                try await simulation.sleep(for: .seconds(65))
                let notifiedIn = rss()
                for client in listened + population + notified { await client.shutdown() }
                for consumer in consumers { await consumer.value }
                _ = server.roomCount
                return MemoryBreakdown(
                    clients: clients,
                    rooms: rooms,
                    clientActorBytes: perClient(start, actors),
                    idleStreamBytes: perClient(actors, withStreams),
                    consumerTaskBytes: perClient(withStreams, withConsumers),
                    loggedInBytes: perClient(beforeLogin, loggedIn),
                    peerListBytes: perClient(loggedIn, notifiedIn) - perClient(withConsumers, beforeLogin)
                        - perClient(beforeLogin, loggedIn)
                )
            }
        }
    }
}
