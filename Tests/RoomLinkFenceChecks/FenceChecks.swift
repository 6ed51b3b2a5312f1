import RoomLinkEngine
import RoomLinkRuntime
import RoomLinkSimulation

/// The invariants of the storage types the simulation's speed lives in, each exercised through the owner that keeps
/// it: `UnretainedReference` (an environment's entry points, an interned retry policy, a simulation's lanes),
/// `ParallelArrayAddresses`, and the simulated network's loads ahead of a room or a client.
///
/// Each check throws ``Failure`` when what it sees is wrong. A broken promise about memory — an owner that lets go
/// of an object an unretained reference still names — shows under AddressSanitizer as a heap use-after-free report,
/// which stops the process: CI builds `roomlink-fence-checks` with `--sanitize=address` and runs every check, and
/// `EngineFenceTests` runs the same checks in the plain and ThreadSanitizer suites.
public enum FenceChecks {
    /// What a check saw that it should not have.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// One invariant's check.
    public struct Check: Sendable, CustomStringConvertible {
        public let name: String
        /// Whether the check plays clients' traffic in a simulation: one thread, where ThreadSanitizer has nothing
        /// to find and a parallel suite under it makes every hop of the test's task wait.
        public var simulatesTraffic = false
        public let run: @Sendable () async throws -> Void
        public var description: String { name }

        init(name: String, simulatesTraffic: Bool = false, run: @escaping @Sendable () async throws -> Void) {
            self.name = name
            self.simulatesTraffic = simulatesTraffic
            self.run = run
        }
    }

    /// Every check, in the order the runner takes them.
    public static let all: [Check] = [
        Check(name: "an environment keeps the entry points its clients reach unretained", run: environmentEntryPoints),
        Check(name: "an interned retry policy outlives every rules value", run: internedRetryPolicy),
        Check(name: "parallel array addresses follow the arrays; a stale one is harmless", run: parallelArrayAddresses),
        Check(
            name: "a simulation's lanes and network outlive their clients' traffic",
            simulatesTraffic: true,
            run: lanesAndNetwork
        ),
    ]

    static func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws {
        if !condition { throw Failure(description: message()) }
    }

    /// A client transport that refuses everything.
    final class Idle: ClientTransport {
        func open(toRoom roomID: String, for client: any ClientEndpoint) -> (any RoomChannel)? { nil }
        func send(
            _ message: ClientMessage,
            on channel: any RoomChannel,
            from client: any ClientEndpoint
        )
            -> SendOutcome
        { .refused }
        func closed(_ channel: any RoomChannel, session: SessionID, from client: any ClientEndpoint) {}
        func abandon(_ channel: any RoomChannel, from client: any ClientEndpoint) {}
    }

    /// The environment owns the dialect's entry points its unretained reference names: with every other reference
    /// to the environment's parts gone, each client still enters the engine through it — a login, a retry's timer —
    /// and the entry point is the dialect's.
    static func environmentEntryPoints() async throws {
        try await SimulationRuntime.withSimulation(seed: 3) { simulation in
            try await simulation.run {
                var clients: [ZegoClient] = []
                do {
                    // The environment is made in a scope of its own: the clients hold it, nothing else does.
                    let environment = ZegoClient.Environment(transport: Idle())
                    for index in 0..<50 {
                        clients.append(ZegoClient(id: "c\(index)", loop: simulation, environment: environment))
                    }
                }
                for client in clients {
                    try expect(await client.loginRoom("r") == .success, "\(client.userID) could not begin to log in")
                }
                // The idle transport refuses every login and timers retry them: each retry enters the engine
                // through the environment's unretained entry points.
                try await simulation.sleep(for: .seconds(30))
                for client in clients {
                    try expect(await client.phase(of: "r") != nil, "\(client.userID) lost its room")
                    await client.shutdown()
                }
            }
        }
    }

    /// An interned retry policy is never freed: rules made from one policy share one object, which outlives every
    /// rules value that named it.
    static func internedRetryPolicy() throws {
        let policy = try RetryPolicy(
            schedule: .exponential(base: .milliseconds(123), cap: .seconds(7), multiplier: 2, jitter: .none),
            maxAttempts: 9
        )
        var identity: ObjectIdentifier?
        do {
            let rules = RoomClientState.Rules(Zego.self, timings: ZegoTimings.default.engine, retryPolicy: policy)
            identity = rules.sharedRetryPolicy.withObject { ObjectIdentifier($0) }
        }
        let again = RoomClientState.Rules(Zego.self, timings: ZegoTimings.default.engine, retryPolicy: policy)
        try expect(again.sharedRetryPolicy.withObject { ObjectIdentifier($0) } == identity, "a second object")
        try expect(again.retryPolicy == policy, "the rules read another policy")
        try expect(again.sharedRetryPolicy.object.policy == policy, "the interned object holds another policy")
    }

    /// The notes follow both arrays as they grow and shrink, and a prefetch of a stale note — the arrays moved and
    /// freed — reads nothing (AddressSanitizer sees no access).
    static func parallelArrayAddresses() throws {
        var keys: [String] = []
        var records: [UInt64] = []
        var addresses = ParallelArrayAddresses<String, UInt64>()
        try expect(addresses.noted == [0, 0], "noted before anything was")
        addresses.prefetch(slot: 0)  // nothing noted: nothing loaded
        for index in 0..<1_000 {
            keys.append("user-\(index)")
            records.append(UInt64(index))
            addresses.note(keys, records)
            try expect(
                addresses.noted == ParallelArrayAddresses.addresses(of: keys, records),
                "the notes lag the arrays after \(index + 1) elements"
            )
            try expect(!addresses.noted.contains(0), "an array noted as having no storage")
            addresses.prefetch(slot: Int32(index))
        }
        let stale = addresses
        keys = []
        records = []  // the noted storage is freed
        stale.prefetch(slot: 500)
        stale.prefetch(slot: 1_000_000)  // far past the end
        addresses.note(keys, records)
        try expect(addresses.noted != stale.noted, "the notes did not follow the arrays' release")
    }

    /// Clients come and go while their heartbeats and logins ride the simulation's lanes (held by the simulation,
    /// called through unretained references) and the simulated network loads rooms and clients ahead of each
    /// delivery (by address, never read): those that left are released while the others' traffic goes on, and the
    /// room ends up holding exactly those that stayed.
    static func lanesAndNetwork() async throws {
        try await SimulationRuntime.withSimulation(seed: 5) { simulation in
            let network = SimulatedNetwork(conditions: .init(latency: .milliseconds(30)), seed: 5)
            let server = RoomServer(group: simulation, transport: network)
            try await simulation.run {
                let environment = ZegoClient.Environment(
                    transport: network,
                    timings: ZegoTimings(heartbeatInterval: .seconds(1))
                )
                var staying: [(client: ZegoClient, room: String)] = []
                do {
                    var leaving: [(client: ZegoClient, room: String)] = []
                    for index in 0..<60 {
                        let client = ZegoClient(id: "u\(index)", loop: simulation, environment: environment)
                        let room = "r\(index % 2)"
                        _ = await client.loginRoom(room)
                        if index.isMultiple(of: 3) {
                            leaving.append((client, room))
                        } else {
                            staying.append((client, room))
                        }
                    }
                    try await simulation.sleep(for: .seconds(20))
                    for (client, room) in leaving { await client.logoutRoom(room) }
                    try await simulation.sleep(for: .milliseconds(500))
                    for (client, _) in leaving { await client.shutdown() }
                }
                // The leavers are gone (the last references were the array above); the others beat on.
                try await simulation.sleep(for: .seconds(40))
                for (client, room) in staying {
                    try expect(await client.phase(of: room) == .joined, "\(client.userID) is not in \(room)")
                }
                var members: Set<String> = []
                for room in ["r0", "r1"] { members.formUnion(await server.serverRoom(room).memberIDs) }
                let expected = Set(staying.map(\.client.userID))
                try expect(members == expected, "the rooms hold \(members.count) members, not the \(expected.count)")
                for (client, _) in staying { await client.shutdown() }
            }
        }
    }
}
