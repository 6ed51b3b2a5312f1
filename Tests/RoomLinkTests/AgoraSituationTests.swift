import Foundation
import RoomLink
import RoomLinkRuntime
import RoomLinkTestSupport
import Testing

/// contract §3's Agora timeline in virtual time, with both users' logs and times, and every state and reason.
///
/// Times follow from the defaults: 50 ms latency each way and 100 ms join processing (joined at 200 ms), peers told
/// 100 ms after the server registers a change (300 ms), `interrupted` 4 s after data stops, `lost` 10 s after that,
/// peers see `dropped` 20 s after the server's last data, `failed/joinFailed` 20 min after `interrupted`.
@Suite(.hangLimit(minutes: 10))
struct AgoraSituationTests {
    /// Users A and B in channel c1 (B joins first), plus `timeline`.
    static func scenario(_ timeline: String, end: String = "30m", users: String? = nil, extra: String = "") -> String {
        """
        { "dialect": "agora", "seed": 1, "network": { "latency": "50ms" }, \(extra)
          "users": \(users ?? #"[ { "id": "A" }, { "id": "B" } ]"#),
          "timeline": [
            { "at": "0s", "user": "B", "action": "login", "room": "c1" },
            { "at": "0s", "user": "A", "action": "login", "room": "c1" }\(timeline.isEmpty ? "" : ",") \(timeline) ],
          "end": "\(end)" }
        """
    }

    static let joinedA = [
        "0 A c1 connectionState connecting connecting", "200 A c1 connectionState connected joinSuccess",
        "200 A c1 joinChannelSuccess", "200 A c1 userJoined B",
    ]
    static let joinedB = [
        "0 B c1 connectionState connecting connecting", "200 B c1 connectionState connected joinSuccess",
        "200 B c1 joinChannelSuccess", "300 B c1 userJoined A",
    ]

    /// Every call and fault with a reason of its own: roles, a network change, a proxy, a second join, a bad
    /// token, a kick, an expired token, a token renewed while reconnecting, a join that times out.
    static let callsAndFaults =
        Self.scenario(
            """
            { "at": "1s", "user": "C", "action": "login", "room": "c1" },
            { "at": "2s", "user": "A", "action": "setClientRole", "role": "audience" },
            { "at": "3s", "user": "A", "action": "setClientRole", "role": "broadcaster" },
            { "at": "4s", "user": "A", "action": "networkChange" },
            { "at": "5s", "user": "A", "action": "setCloudProxy" },
            { "at": "6s", "user": "C", "action": "login", "room": "c1" },
            { "at": "7s", "user": "D", "action": "login", "room": "c1" },
            { "at": "8s", "user": "E", "action": "login", "room": "c1" },
            { "at": "9s", "user": "F", "action": "login", "room": "c1" },
            { "at": "10s", "user": "F", "action": "kick", "room": "c1" },
            { "at": "11s", "user": "E", "action": "expireToken" },
            { "at": "12s", "user": "B", "action": "networkDown" },
            { "at": "20s", "user": "B", "action": "renewToken", "token": "b" },
            { "at": "21s", "user": "B", "action": "networkUp" },
            { "at": "60s", "user": "G", "action": "networkDown" },
            { "at": "60s", "user": "G", "action": "login", "room": "c1" }
            """,
            end: "5m",
            users: """
                [ { "id": "A", "token": "a" }, { "id": "B", "token": "b" }, { "id": "C", "token": "c" },
                  { "id": "D", "token": "wrong" }, { "id": "E", "token": "e" }, { "id": "F", "token": "f" },
                  { "id": "G", "userID": "A", "token": "a" } ]
                """,
            extra:
                #""auth": { "A": "a", "B": "b", "C": "c", "D": "d", "E": "e", "F": "f" }, "timings": { "joinTimeout": "1m" },"#
        )

    /// A second device with A's user ID, and a server that drops B before B notices its 3 s outage.
    static let sameUidAndKeepAlive =
        Self.scenario(
            """
            { "at": "5s", "user": "G", "action": "login", "room": "c1" },
            { "at": "10s", "user": "B", "action": "blackhole" },
            { "at": "13s", "user": "B", "action": "networkUp" }
            """,
            end: "1m",
            users: #"[ { "id": "A" }, { "id": "B" }, { "id": "G", "userID": "A" } ]"#,
            extra: #""timings": { "peerOfflineAfter": "2s" },"#
        )

    @Test
    func theTimelineInterruptedAtFourSecondsLostAtTenDroppedAtTwentyFailedAtTwentyMinutes() async throws {
        let (events, report) = try await ScenarioHarness.run(
            Self.scenario(#"{ "at": "10s", "user": "A", "action": "networkDown" }"#)
        )
        #expect(
            events.lines(of: "A") == Self.joinedA + [
                "14000 A c1 connectionState reconnecting interrupted", "24000 A c1 connectionState reconnecting lost",
                "24000 A c1 connectionLost", "1214000 A c1 connectionState failed joinFailed",
            ]
        )
        // The server sees A's data stop at 10.05 s and drops A 20 s later; B hears 150 ms after that.
        #expect(events.lines(of: "B") == Self.joinedB + ["30200 B c1 userOffline A dropped"])
        #expect(report.violations == 0, "\(report.violationSample)")
    }

    @Test
    func anOutageUnderFourSecondsIsInvisibleAndUnderTwentyOnlyTheUserSeesIt() async throws {
        let (events, report) = try await ScenarioHarness.run(
            Self.scenario(
                """
                { "at": "10s", "user": "A", "action": "networkDown" },
                { "at": "13s", "user": "A", "action": "networkUp" },
                { "at": "30s", "user": "A", "action": "blackhole" },
                { "at": "38s", "user": "A", "action": "networkUp" }
                """,
                end: "1m"
            )
        )
        #expect(
            events.lines(of: "A") == Self.joinedA + [
                "34000 A c1 connectionState reconnecting interrupted",
                "38200 A c1 connectionState connected rejoinSuccess", "38200 A c1 rejoinChannelSuccess",
            ]
        )
        #expect(events.lines(of: "B") == Self.joinedB, "B sees nothing of outages under 20 s")
        #expect(report.violations == 0, "\(report.violationSample)")
    }

    @Test
    func aLongOutageDropsTheUserForPeersAndTheRejoinBringsItBack() async throws {
        let (events, report) = try await ScenarioHarness.run(
            Self.scenario(
                """
                { "at": "10s", "user": "A", "action": "networkDown" },
                { "at": "60s", "user": "A", "action": "networkUp" },
                { "at": "90s", "user": "B", "action": "logout" }
                """,
                end: "2m"
            )
        )
        #expect(
            events.lines(of: "A") == Self.joinedA + [
                "14000 A c1 connectionState reconnecting interrupted", "24000 A c1 connectionState reconnecting lost",
                "24000 A c1 connectionLost", "60200 A c1 connectionState connected rejoinSuccess",
                "60200 A c1 rejoinChannelSuccess", "90200 A c1 userOffline B quit",
            ]
        )
        #expect(
            events.lines(of: "B") == Self.joinedB + [
                "30200 B c1 userOffline A dropped", "60300 B c1 userJoined A",
                "90000 B c1 connectionState disconnected leaveChannel",
            ]
        )
        #expect(report.violations == 0, "\(report.violationSample)")
    }

    @Test
    func kicksSameUidTokensRolesProxiesAndAddressChangesHaveTheirReasons() async throws {
        let (events, report) = try await ScenarioHarness.run(Self.callsAndFaults)
        let lines = events.lines
        func has(_ line: String) { #expect(lines.contains(line), "missing \(line)") }
        has("2200 B c1 userOffline A becomeAudience")
        has("3200 B c1 userJoined A")
        has("4000 A c1 connectionState reconnecting clientIpAddressChanged")
        has("4200 A c1 connectionState connected rejoinSuccess")
        has("5000 A c1 connectionState reconnecting settingProxyServer")
        has("6000 C c1 connectionState failed rejectedByServer")
        has("7200 D c1 connectionState disconnected invalidToken")
        has("10050 F c1 connectionState failed bannedByServer")
        has("11050 E c1 tokenPrivilegeWillExpire")
        has("41050 E c1 connectionState failed tokenExpired")
        has("20000 B c1 connectionState reconnecting renewToken")
        has("21200 B c1 connectionState connected rejoinSuccess")
        has("120000 G c1 connectionState failed joinFailed")
        #expect(!lines.contains { $0.contains("A c1 connectionState failed sameUidLogin") }, "G never joined")
        #expect(report.violations == 0, "\(report.violationSample)")
    }

    @Test
    func theOlderSessionOfAUidFailsAndAServerTimeoutDuringAShortOutageIsAKeepAliveTimeout() async throws {
        let (events, report) = try await ScenarioHarness.run(Self.sameUidAndKeepAlive)
        #expect(events.lines(of: "A").contains("5200 A c1 connectionState failed sameUidLogin"))
        #expect(events.lines(of: "B").contains("13100 B c1 connectionState reconnecting keepAliveTimeout"))
        #expect(events.lines(of: "B").contains("13300 B c1 connectionState connected rejoinSuccess"))
        #expect(report.violations == 0, "\(report.violationSample)")
    }

    @Test
    func refusedCallsReportTheirReasonAndReturnAgorasCodes() async throws {
        try await SimulationRuntime.withSimulation(seed: 1) { simulation in
            try await simulation.run {
                let network = SimulatedNetwork(conditions: Scenario.Network(), seed: 1)
                let server = RoomServer(group: simulation, transport: network, timings: .agora)
                let events = EventCollector()
                let client = AgoraClient(
                    id: "A",
                    loop: simulation.loops[0],
                    environment: AgoraClient.Environment(transport: network, sink: events.typed())
                )
                #expect(await client.joinChannel("c1", appID: "not-an-app-id") == -101)
                #expect(await client.joinChannel("bad/name") == -102)
                #expect(await client.joinChannel(String(repeating: "x", count: 65)) == -102)
                #expect(await client.renewToken("t") == -2)
                #expect(await client.joinChannel("c1") == 0)
                try await simulation.sleep(for: .seconds(1))
                #expect(await client.joinChannel("c2") == -17)
                #expect(await client.roomIDs.isEmpty, "a rejected second join fails the connection")
                #expect(await client.leaveChannel() == 0)
                await client.shutdown()
                #expect(await client.joinChannel("c1") == -7)
                #expect(
                    events.lines == [
                        "0 A c1 connectionState failed invalidAppId",
                        "0 A bad/name connectionState failed invalidChannelName",
                        "0 A \(String(repeating: "x", count: 65)) connectionState failed invalidChannelName",
                        "0 A c1 connectionState connecting connecting",
                        "200 A c1 connectionState connected joinSuccess",
                        "200 A c1 joinChannelSuccess", "1000 A c1 connectionState failed rejectedByServer",
                    ]
                )
                _ = server
            }
        }
    }

    @Test
    func everyStateAndReasonIsReachedByTheseTests() async throws {
        // The scenarios of the tests above, run again: this test fails if one of them stops reaching a reason.
        var reached: Set<String> = []
        let runs = [
            Self.scenario(#"{ "at": "10s", "user": "A", "action": "networkDown" }"#), Self.callsAndFaults,
            Self.sameUidAndKeepAlive, Self.scenario(#"{ "at": "1s", "user": "B", "action": "logout" }"#),
        ]
        for json in runs {
            let (events, _) = try await ScenarioHarness.run(json)
            for entry in events.entries where entry.line.type == "connectionState" {
                reached.insert("state " + (entry.line.string("state") ?? ""))
                reached.insert("reason " + (entry.line.string("reason") ?? ""))
            }
        }
        // The App ID and channel-name checks are calls, tested above; every other reason comes out of a scenario.
        let expected =
            Set(AgoraConnectionState.allCases.map { "state \($0)" })
            .union(
                AgoraConnectionChangedReason.allCases
                    .filter { ![.invalidAppId, .invalidChannelName].contains($0) }
                    .map { "reason \($0)" }
            )
        #expect(expected.subtracting(reached).isEmpty, "not reached: \(expected.subtracting(reached).sorted())")
    }
}
