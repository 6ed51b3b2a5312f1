import Foundation
import RoomLink
import RoomLinkNetwork
import RoomLinkTestSupport
import Testing

/// The same scenario in virtual time and against a real server over loopback tells every user the same things in
/// the same order (`roomlink run --compare-with-virtual`): ZEGO's three situations, Agora's 4/10/20 s marks,
/// LiveKit's quick and full reconnections.
///
/// The sequences and their timing (never earlier than virtual time) are compared exactly when no loop stalled for
/// long enough to change the story (a stall of real time is a stall of scenario time: a loop held up past a timeout
/// lets it expire, or a server's late deadline keeps a session alive); see `StallWatch`.
@Suite(.hangLimit(minutes: 10))
struct SimulationAgreesWithRealityTests {
    static let scale = 0.02

    static func example(_ name: String) throws -> Scenario {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("examples/\(name).json")
        return try Scenario(json: Data(contentsOf: url))
    }

    /// The scenarios, cut to what they show (a shorter end; ZEGO's 20-minute give-up made 3 minutes).
    static func scenarios() throws -> [(String, Scenario)] {
        var situation1 = try example("situation-1-short-outage")
        situation1.end = .seconds(120)
        var situation2 = try example("situation-2-long-outage")
        situation2.end = .seconds(330)
        var situation3 = try example("situation-3-no-recovery")
        situation3.timings["retryTimeout"] = .seconds(180)
        situation3.timeline = situation3.timeline.map { entry in
            var entry = entry
            if entry.at == .seconds(25 * 60) { entry.at = .seconds(200) }
            if entry.at == .seconds(26 * 60) { entry.at = .seconds(210) }
            return entry
        }
        situation3.end = .seconds(240)
        var agora = try example("agora-timeline")
        agora.timeline.removeAll { $0.at > .seconds(200) }
        agora.end = .seconds(200)
        var livekit = try example("livekit-reconnect")
        livekit.end = .seconds(200)
        livekit.timeline.removeAll { $0.at > .seconds(150) }
        return [
            ("zego situation 1", situation1), ("zego situation 2", situation2), ("zego situation 3", situation3),
            ("agora 4/10/20 s", agora), ("livekit quick and full", livekit),
        ]
    }

    /// A scenario that acts from the server's side (a kick) cannot play against a server without its admin API; and
    /// a run never opens more connections than the process may.
    @Test func playingAgainstAServerChecksWhatItNeeds() async throws {
        let kicks = try Self.example("kicks")
        try await LibeventLoopGroup.withLoopGroup(configuration: .init(loopCount: 1)) { group in
            let address = try SocketAddress(parsing: "127.0.0.1:9")
            var runner = try ScenarioRunner(scenario: kicks)
            let noAdmin = #expect(throws: RoomLinkError.self) {
                try runner.playAgainst(TCPServerTarget(servers: [address]), on: group)
            }
            #expect(noAdmin?.field == "admin" && noAdmin?.message.contains("kick") == true)
            #expect(runner.remote == nil)

            var crowd = try ScenarioRunner(
                scenario: Scenario(
                    json: Data(
                        #"""
                        { "population": { "clients": 100000000, "rooms": 1 }, "timeline": [], "end": "1m" }
                        """#.utf8
                    )
                )
            )
            let tooMany = #expect(throws: RoomLinkError.self) {
                try crowd.playAgainst(TCPServerTarget(servers: [address]), on: group)
            }
            #expect(tooMany?.field == "server" && tooMany?.message.contains("open-file limit") == true)
        }
    }

    @Test(arguments: 0..<5)
    func theRealServerTellsTheSameStory(_ index: Int) async throws {
        let (name, scenario) = try Self.scenarios()[index]
        let virtual = EventCollector()
        _ = try await SimulationRuntime.withSimulation(seed: scenario.seed) {
            try await ScenarioRunner(scenario: scenario).run(on: $0, events: virtual)
        }

        let configuration = LibeventLoopGroup.Configuration(loopCount: 2, timeScale: Self.scale)
        let serverGroup = try LibeventLoopGroup(configuration: configuration)
        defer { serverGroup.shutdown() }
        let timings = scenario.dialect.engineTimings(overrides: scenario.timings)
        let server = NetworkServer(
            group: serverGroup,
            configuration: .init(
                dialect: scenario.dialect,
                timings: timings.server,
                heartbeatInterval: timings.heartbeatInterval,
                auth: scenario.auth
            )
        )
        let address = try await server.listen(on: SocketAddress(host: "127.0.0.1", port: 0))
        let admin = try await server.startAdmin(on: SocketAddress(host: "127.0.0.1", port: 0), token: nil)
        try StallWatch.start(on: serverGroup, every: .milliseconds(500))

        let real = EventCollector()
        let (stall, violations) = try await LibeventLoopGroup.withLoopGroup(configuration: configuration) { group in
            try StallWatch.start(on: group, every: .milliseconds(500))
            var runner = try ScenarioRunner(scenario: scenario)
            // What `roomlink run --server --server-admin` does.
            try runner.playAgainst(TCPServerTarget(servers: [address], admin: admin), on: group)
            let report = try await runner.run(on: group, events: real)
            // The longest any loop of either side stalled, in scenario time.
            let stall = max(group.timerLateness.maxMs, serverGroup.timerLateness.maxMs) / Self.scale + 500
            return (stall, report.violations)
        }
        await server.shutdown()

        let comparison = RunComparison(virtual: virtual.all, real: real.all)
        #expect(comparison.matched > 0)
        // The scenarios' closest calls are seconds apart (an outage against a timeout): a stall under a second
        // cannot change them. A longer one can, even towards earlier: a server whose deadline timer ran seconds
        // late still holds a session its client resumes, and the client is back sooner than in virtual time.
        if stall < 1_000 {
            // A real millisecond is 50 scenario milliseconds here, and the two loop groups stamp events from their
            // own clocks: a fraction of a real millisecond (25 scenario ms, the loops' 0.5 ms tick) is noise.
            // Agora's client counts a silence from the last frame it received, up to one and a half data intervals
            // before the fault (`RunComparison.earliness(for:)`, what `--compare-with-virtual` allows).
            let earliness = RunComparison.earliness(for: scenario.dialect).milliseconds - 5 + 25
            #expect(comparison.minOffsetMs > -earliness, "\(name): never earlier than in virtual time")
            #expect(comparison.sameSequences, "\(name): \(comparison.mismatches)")
            #expect(violations == 0, "\(name): the oracle checks a real run as it checks a simulated one")
        } else {
            print("\(name): a loop stalled \(Int(stall)) ms of scenario time; sequences not compared exactly")
        }
    }
}
