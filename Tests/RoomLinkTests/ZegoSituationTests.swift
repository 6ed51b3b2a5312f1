import RoomLink
import RoomLinkTestSupport
import Testing

/// contract §2's three reconnection situations and the blackhole, in virtual time, with both users' logs and times.
///
/// Times follow from the defaults: 50 ms latency each way, 20 ms login processing (login at 120 ms), peers told
/// 100 ms after the server registers a change, heartbeats every 30 s, server timeout 90 s, retry timeout 20 min.
@Suite(.hangLimit(minutes: 10))
struct ZegoSituationTests {
    static let loggedIn = ["0 B r1 logining 0", "120 B r1 logined 0", "220 B r1 add A"]

    @Test
    func situationOneAShortOutageIsInvisibleToB() async throws {
        let (events, report) = try await ScenarioHarness.run(
            ScenarioHarness.twoUsers(
                """
                { "at": "10s", "user": "A", "action": "networkDown" },
                { "at": "70s", "user": "A", "action": "networkUp" }
                """
            )
        )
        #expect(
            events.lines(of: "A") == [
                "0 A r1 logining 0", "120 A r1 logined 0", "10000 A r1 reconnecting 1002051",
                "70120 A r1 reconnected 0",
            ]
        )
        #expect(events.lines(of: "B") == Self.loggedIn, "B receives nothing about A's outage")
        #expect(report.violations == 0, "\(report.violationSample)")
    }

    @Test
    func situationTwoBSeesALeaveAtNinetySecondsAndComeBackAfterTheReconnect() async throws {
        let (events, report) = try await ScenarioHarness.run(
            ScenarioHarness.twoUsers(
                """
                { "at": "10s", "user": "A", "action": "networkDown" },
                { "at": "5m", "user": "A", "action": "networkUp" }
                """
            )
        )
        #expect(
            events.lines(of: "A") == [
                "0 A r1 logining 0", "120 A r1 logined 0", "10000 A r1 reconnecting 1002051",
                "300120 A r1 reconnected 0",
            ]
        )
        // The server hears the connection close at 10.05 s and drops A 90 s later; B hears 150 ms after that.
        #expect(events.lines(of: "B") == Self.loggedIn + ["100200 B r1 delete A", "300220 B r1 add A"])
        #expect(report.violations == 0, "\(report.violationSample)")
    }

    @Test
    func situationThreeAGivesUpAtTwentyMinutesAndIsOutOfTheRoom() async throws {
        let (events, report) = try await ScenarioHarness.run(
            ScenarioHarness.twoUsers(
                """
                { "at": "10s", "user": "A", "action": "networkDown" },
                { "at": "25m", "user": "A", "action": "networkUp" }
                """
            )
        )
        #expect(
            events.lines(of: "A") == [
                "0 A r1 logining 0", "120 A r1 logined 0", "10000 A r1 reconnecting 1002051",
                "1210000 A r1 reconnectFailed 1002053",
            ],
            "nothing after the give-up, not even when the network returns at 25 min"
        )
        #expect(events.lines(of: "B") == Self.loggedIn + ["100200 B r1 delete A"])
        #expect(report.violations == 0, "\(report.violationSample)")
    }

    @Test
    func aBlackholeIsDetectedByMissedHeartbeatsAndTheServerCountsFromTheLastOne() async throws {
        let (events, report) = try await ScenarioHarness.run(
            ScenarioHarness.twoUsers(
                """
                { "at": "60s", "user": "A", "action": "blackhole" },
                { "at": "4m", "user": "A", "action": "networkUp" }
                """,
                end: "10m"
            )
        )
        // A beats at 30.12 s (answered at 30.22 s) and 60.12 s (lost). At 90.12 s it has heard nothing for 59.9 s,
        // over the 45 s detection: reconnecting. The server last heard A at 30.17 s: A leaves at 120.17 s.
        #expect(
            events.lines(of: "A") == [
                "0 A r1 logining 0", "120 A r1 logined 0", "90120 A r1 reconnecting 1002051",
                "240120 A r1 reconnected 0",
            ]
        )
        #expect(events.lines(of: "B") == Self.loggedIn + ["120320 B r1 delete A", "240220 B r1 add A"])
        #expect(report.violations == 0, "\(report.violationSample)")
    }

    @Test
    func aBlackholeShorterThanDetectionGoesUnnoticedByEveryone() async throws {
        let (events, _) = try await ScenarioHarness.run(
            ScenarioHarness.twoUsers(
                """
                { "at": "61s", "user": "A", "action": "blackhole" },
                { "at": "80s", "user": "A", "action": "networkUp" }
                """,
                end: "5m"
            )
        )
        #expect(events.lines(of: "A") == ["0 A r1 logining 0", "120 A r1 logined 0"])
        #expect(events.lines(of: "B") == Self.loggedIn)
    }

    @Test(.enabled(if: !Sanitizers.threadSanitizerIsOn, "one simulation thread: nothing for ThreadSanitizer"))
    func theSameSeedGivesTheSameLogAndAnotherSeedAnotherOne() async throws {
        let json = """
            { "seed": 5, "network": { "latency": "40ms", "jitter": "30ms", "loss": 0.02 },
              "population": { "clients": 200, "rooms": 4, "userStatusNotify": true },
              "timeline": [
                { "at": "0s", "user": "*", "action": "login", "over": "10s" },
                { "at": "1m", "user": "*", "action": "networkDown", "fraction": 0.5, "over": "5s" },
                { "at": "2m", "user": "*", "action": "networkUp", "fraction": 0.5, "over": "5s" },
                { "at": "3m", "user": "*", "action": "blackhole", "fraction": 0.2 },
                { "at": "6m", "user": "*", "action": "networkUp", "fraction": 0.2 } ],
              "end": "10m" }
            """
        let first = try await ScenarioHarness.run(json)
        let second = try await ScenarioHarness.run(json)
        let other = try await ScenarioHarness.run(json, seed: 6)
        #expect(first.events.jsonLines.count > 1_000)
        #expect(first.events.jsonLines == second.events.jsonLines)
        #expect(first.events.jsonLines != other.events.jsonLines)
        #expect(first.report.violations == 0, "\(first.report.violationSample)")
        #expect(first.report.eventsByReason["reconnected"] ?? 0 >= 100, "half of 200 reconnect after the outage")
    }
}
