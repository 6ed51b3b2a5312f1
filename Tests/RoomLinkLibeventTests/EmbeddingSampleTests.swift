import RoomLink
import RoomLinkTestSupport
import Testing

// The "Embedding the Engine" article's sample (Sources/RoomLinkEngine/Docs.docc/Embedding.md), verbatim apart from `print`
// → collecting; DocSampleTests checks that the article still shows these lines.

/// Logs Alice in, drops her network for 30 s, and returns what her app was told (and the room's members then).
func aliceLosesHerNetwork(on group: some RuntimeLoopGroup) async throws -> ([Stamped<ZegoEvent>], [String]) {
    let network = SimulatedNetwork(conditions: .init(latency: .milliseconds(50)), seed: 42)
    let server = RoomServer(group: group, transport: network)
    let environment = ZegoClient.Environment(transport: network)
    let alice = ZegoClient(id: "alice", loop: group.loop(for: "alice"), environment: environment)
    let bob = ZegoClient(id: "bob", loop: group.loop(for: "bob"), environment: environment)
    let changes = await alice.events()

    await bob.loginRoom("room-1")
    await alice.loginRoom("room-1", config: ZegoRoomConfig(isUserStatusNotify: true))
    let clock = group.loops[0]
    try await clock.sleep(for: .seconds(10))
    network.setLink(.down, for: alice)  // the phone loses its network…
    try await clock.sleep(for: .seconds(30))
    network.setLink(.up, for: alice)  // …and finds it again

    var seen: [Stamped<ZegoEvent>] = []
    for await change in changes {
        seen.append(change)  // article: print(change.time, change.sequence, change.event)
        if case .roomStateChanged(_, let reason, _, _) = change.event,
            [.reconnected, .loginFailed, .reconnectFailed, .kickOut].contains(reason)
        {
            break
        }
    }
    let members = await server.serverRoom("room-1").memberIDs  // article: print(…)
    await alice.shutdown()  // ends the stream
    return (seen, members)
}

// A limit to catch hangs, not to time anything: ThreadSanitizer on two shared cores runs these several times slower.
@Suite(.hangLimit(minutes: 10))
struct EmbeddingSampleTests {
    static func reasons(_ events: [Stamped<ZegoEvent>]) -> [String] {
        events.map {
            switch $0.event {
            case .roomStateChanged(_, let reason, _, _): reason.description
            case .roomUserUpdate(_, let update, let users): "\(update.rawValue) \(users)"
            case .roomTokenWillExpire: "tokenWillExpire"
            }
        }
    }

    @Test
    func inVirtualTimeAliceReconnectsAndSeesBob() async throws {
        let (events, members) = try await SimulationRuntime.withSimulation(seed: 42) { simulation in
            try await simulation.run { try await aliceLosesHerNetwork(on: simulation) }
        }
        #expect(members == ["bob", "alice"], "a 30 s outage is shorter than the server's timeout")
        #expect(
            Self.reasons(events) == ["logining", "logined", "add [\"bob\"]", "reconnecting", "reconnected"]
        )
        #expect(events.map(\.time.milliseconds) == [0, 120, 120, 10_000, 40_120])
        #expect(events.map(\.sequence) == [0, 1, 2, 3, 4])
    }

    @Test
    func onLibeventLoopsTheSameStoryRunsInScaledRealTime() async throws {
        // 20 times faster than life: the 5 s attempt timeout, the shortest in play, is 250 real milliseconds.
        let scale = 0.05
        let run = { (group: LibeventLoopGroup) async throws -> ([Stamped<ZegoEvent>], Double) in
            try StallWatch.start(on: group, every: .milliseconds(500))
            let (events, _) = try await aliceLosesHerNetwork(on: group)
            // A stall of a loop makes its watch late by the stall less one watch period (500 ms of scenario time).
            return (events, group.timerLateness.maxMs / scale + 500)
        }
        let result = try await LibeventLoopGroup.withLoopGroup(configuration: .init(timeScale: 0.05)) { group in
            try await run(group)
        }
        let (events, longestStall) = result
        // What no stall can shift: the login starts the story, and events come in order.
        #expect(Self.reasons(events).first == "logining")
        #expect(events.map(\.sequence) == Array(0..<UInt64(events.count)))
        #expect(events.map(\.time) == events.map(\.time).sorted())
        // The story itself, when no loop stalled for a scenario second (a stalled server loop can let an attempt
        // time out while its answer waits, and the story changes as it would for a real client).
        guard longestStall < 1_000 else { return }
        #expect(
            Self.reasons(events) == ["logining", "logined", "add [\"bob\"]", "reconnecting", "reconnected"],
            "longest stall \(longestStall) ms"
        )
    }
}
