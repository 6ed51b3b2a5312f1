import Foundation
import RoomLink
import RoomLinkTestSupport
import Testing

@Suite(.hangLimit(minutes: 10))
struct ScenarioTests {
    static func parse(_ json: String) throws -> Scenario {
        try Scenario(json: Data(json.utf8))
    }

    @Test
    func theSpecExampleReadsAsWritten() throws {
        let scenario = try Self.parse(
            """
            {
              "dialect": "zego",
              "seed": 42,
              "network": { "latency": "50ms", "jitter": "0ms", "loss": 0.0 },
              "users": [ { "id": "A" }, { "id": "B", "userStatusNotify": true } ],
              "population": { "clients": 0, "rooms": 0 },
              "timeline": [
                { "at": "0s",   "user": "A", "action": "login", "room": "r1" },
                { "at": "0s",   "user": "B", "action": "login", "room": "r1" },
                { "at": "10s",  "user": "A", "action": "networkDown" },
                { "at": "70s",  "user": "A", "action": "networkUp" }
              ],
              "end": "30m"
            }
            """
        )
        #expect(scenario.dialect == .zego && scenario.seed == 42)
        #expect(scenario.network.latency == .milliseconds(50) && scenario.network.loss == 0)
        #expect(scenario.users.map(\.id) == ["A", "B"])
        #expect(scenario.users[0].userID == "A" && scenario.users[0].roomMode == .single)
        #expect(!scenario.users[0].userStatusNotify && scenario.users[1].userStatusNotify)
        #expect(scenario.population == Scenario.Population(clients: 0, rooms: 0))
        #expect(scenario.end == .seconds(1_800))
        #expect(
            scenario.timeline == [
                .init(at: .zero, target: .user("A"), action: .login(room: "r1", token: nil)),
                .init(at: .zero, target: .user("B"), action: .login(room: "r1", token: nil)),
                .init(at: .seconds(10), target: .user("A"), action: .networkDown),
                .init(at: .seconds(70), target: .user("A"), action: .networkUp),
            ]
        )
    }

    @Test
    func theTimelineIsSortedByTimeKeepingTheFileOrderForEqualTimes() throws {
        let scenario = try Self.parse(
            """
            { "users": [{"id": "A"}, {"id": "B"}], "end": "1m", "timeline": [
                { "at": "20s", "user": "A", "action": "networkUp" },
                { "at": "5s", "user": "B", "action": "login", "room": "r" },
                { "at": "5s", "user": "A", "action": "login", "room": "r" } ] }
            """
        )
        #expect(scenario.timeline.map(\.target) == [.user("B"), .user("A"), .user("A")])
    }

    @Test
    func populationEntriesTakeAFractionAndAWindow() throws {
        let scenario = try Self.parse(
            """
            { "population": {"clients": 1000, "rooms": 10}, "end": "30m", "timeline": [
                { "at": "1m", "user": "*", "action": "blackhole", "fraction": 0.3, "over": "10s" },
                { "at": "2m", "user": "*", "action": "networkUp" } ] }
            """
        )
        #expect(scenario.timeline[0].target == .population(fraction: 0.3, over: .seconds(10)))
        #expect(scenario.timeline[1].target == .population(fraction: 1, over: .zero))
    }

    @Test
    func partitionEntriesNameARoomOrAShareOfThePopulationsRooms() throws {
        let scenario = try Self.parse(
            """
            { "population": {"clients": 100, "rooms": 10}, "end": "30m", "timeline": [
                { "at": "1m", "action": "partition", "rooms": "*", "fraction": 0.3, "offset": 0.1, "for": {"exponential": "20s"} },
                { "at": "2m", "action": "partition", "room": "lobby" },
                { "at": "3m", "action": "heal", "room": "lobby" } ] }
            """
        )
        #expect(scenario.timeline.map(\.action) == [.partition, .partition, .heal])
        #expect(
            scenario.timeline.map(\.target) == [
                .populationRooms(fraction: 0.3, offset: 0.1), .room("lobby"), .room("lobby"),
            ]
        )
        #expect(scenario.timeline[0].length == .exponential(mean: .seconds(20)))
    }

    @Test
    func aTimingOfAnotherDialectIsIgnoredAndARetryObjectBecomesAPolicy() throws {
        let scenario = try Self.parse(
            """
            { "dialect": "zego", "end": "1m",
              "timings": { "pingInterval": "5s", "serverHeartbeatTimeout": "30s" },
              "retry": { "strategy": "exponential", "base": "500ms", "cap": "8s", "jitter": "equal", "maxElapsed": "5m" } }
            """
        )
        #expect(scenario.timings == ["serverHeartbeatTimeout": .seconds(30)])
        #expect(
            scenario.retry
                == (try RetryPolicy(
                    schedule: .exponential(base: .milliseconds(500), cap: .seconds(8), jitter: .equal),
                    maxElapsed: .seconds(300)
                ))
        )
    }

    static let badScenarios: [(String, String)] = [
        ("{ \"end\": ", "scenario:"),
        ("[]", "scenario:"),
        ("{}", "end:"),
        ("{ \"end\": \"1m\", \"colour\": \"blue\" }", "colour:"),
        ("{ \"end\": \"1m\", \"dialect\": \"skype\" }", "dialect:"),
        ("{ \"end\": \"soon\" }", "end:"),
        ("{ \"end\": \"1m\", \"seed\": -1 }", "seed:"),
        ("{ \"end\": \"1m\", \"seed\": 1.5 }", "seed:"),
        ("{ \"end\": \"1m\", \"network\": { \"loss\": 2 } }", "network.loss:"),
        ("{ \"end\": \"1m\", \"network\": { \"latency\": 50 } }", "network.latency:"),
        ("{ \"end\": \"1m\", \"users\": [ {\"id\": \"A\"}, {\"id\": \"A\"} ] }", "users[1].id:"),
        ("{ \"end\": \"1m\", \"users\": [ {\"name\": \"A\"} ] }", "users[0].name:"),
        ("{ \"end\": \"1m\", \"users\": [ {\"id\": \"A\", \"roomMode\": \"triple\"} ] }", "users[0].roomMode:"),
        (
            "{ \"end\": \"1m\", \"users\": [ {\"id\": \"A\", \"userStatusNotify\": \"yes\"} ] }",
            "users[0].userStatusNotify:"
        ),
        ("{ \"end\": \"1m\", \"users\": [ {\"id\": \"A\", \"maxMemberCount\": 0} ] }", "users[0].maxMemberCount:"),
        ("{ \"end\": \"1m\", \"population\": { \"clients\": 10, \"rooms\": 0 } }", "population.rooms:"),
        ("{ \"end\": \"1m\", \"timings\": { \"bogus\": \"1s\" } }", "timings.bogus:"),
        (
            "{ \"end\": \"1m\", \"timings\": { \"serverHeartbeatTimeout\": \"ninety\" } }",
            "timings.serverHeartbeatTimeout:"
        ),
        ("{ \"end\": \"1m\", \"retry\": { \"strategy\": \"linear\" } }", "retry.strategy:"),
        (
            "{ \"end\": \"1m\", \"retry\": { \"strategy\": \"decorrelated\", \"base\": \"2s\", \"cap\": \"1s\" } }",
            "retry.cap:"
        ),
        ("{ \"end\": \"1m\", \"retry\": { \"preset\": \"fastest\" } }", "retry.preset:"),
        ("{ \"end\": \"1m\", \"retry\": { \"preset\": \"phoenix\", \"base\": \"1s\" } }", "retry.base:"),
        ("{ \"end\": \"1m\", \"retry\": { \"preset\": \"fullJitter\", \"cap\": \"1s\" } }", "retry.base:"),
        ("{ \"end\": \"1m\", \"retry\": { \"preset\": \"socketIO\", \"jitter\": \"full\" } }", "retry.jitter:"),
        (
            "{ \"end\": \"1m\", \"retry\": { \"preset\": \"equalJitter\", \"base\": \"2s\", \"cap\": \"1s\" } }",
            "retry.cap:"
        ),
        ("{ \"end\": \"1m\", \"users\": [ {\"id\": \"A\", \"role\": \"host\"} ] }", "users[0].role:"),
        (
            "{ \"end\": \"1m\", \"users\": [{\"id\": \"A\"}], \"timeline\": [ {\"at\": \"1s\", \"user\": \"A\", \"action\": \"login\", \"room\": \"r\", \"for\": \"5s\"} ] }",
            "timeline[0].for:"
        ),
        (
            "{ \"end\": \"1m\", \"users\": [{\"id\": \"A\"}], \"timeline\": [ {\"at\": \"1s\", \"user\": \"A\", \"action\": \"networkDown\", \"for\": {\"uniform\": [\"2s\", \"1s\"]}} ] }",
            "timeline[0].for.uniform:"
        ),
        (
            "{ \"end\": \"1m\", \"users\": [{\"id\": \"A\"}], \"timeline\": [ {\"at\": \"1s\", \"user\": \"A\", \"action\": \"networkDown\", \"for\": {\"gaussian\": \"1s\"}} ] }",
            "timeline[0].for:"
        ),
        (
            "{ \"end\": \"1m\", \"population\": {\"clients\": 5, \"rooms\": 1}, \"timeline\": [ {\"at\": \"1s\", \"user\": \"*\", \"action\": \"networkUp\", \"fraction\": 0.5, \"offset\": 0.6} ] }",
            "timeline[0].offset:"
        ),
        (
            "{ \"end\": \"1m\", \"users\": [{\"id\": \"A\"}], \"timeline\": [ {\"at\": \"1s\", \"user\": \"A\", \"action\": \"setClientRole\"} ] }",
            "timeline[0].role:"
        ),
        (
            "{ \"end\": \"1m\", \"users\": [{\"id\": \"A\"}], \"timeline\": [ {\"at\": \"soon\", \"user\": \"A\", \"action\": \"networkUp\"} ] }",
            "timeline[0].at:"
        ),
        (
            "{ \"end\": \"1m\", \"users\": [{\"id\": \"A\"}], \"timeline\": [ {\"at\": \"2m\", \"user\": \"A\", \"action\": \"networkUp\"} ] }",
            "timeline[0].at:"
        ),
        (
            "{ \"end\": \"1m\", \"users\": [{\"id\": \"A\"}], \"timeline\": [ {\"at\": \"1s\", \"user\": \"Z\", \"action\": \"networkUp\"} ] }",
            "timeline[0].user:"
        ),
        (
            "{ \"end\": \"1m\", \"users\": [{\"id\": \"A\"}], \"timeline\": [ {\"at\": \"1s\", \"user\": \"A\", \"action\": \"dance\"} ] }",
            "timeline[0].action:"
        ),
        (
            "{ \"end\": \"1m\", \"users\": [{\"id\": \"A\"}], \"timeline\": [ {\"at\": \"1s\", \"user\": \"A\", \"action\": \"login\"} ] }",
            "timeline[0].room:"
        ),
        (
            "{ \"end\": \"1m\", \"users\": [{\"id\": \"A\"}], \"timeline\": [ {\"at\": \"1s\", \"user\": \"A\", \"action\": \"switchRoom\", \"from\": \"r1\"} ] }",
            "timeline[0].to:"
        ),
        (
            "{ \"end\": \"1m\", \"users\": [{\"id\": \"A\"}], \"timeline\": [ {\"at\": \"1s\", \"user\": \"A\", \"action\": \"networkUp\", \"fraction\": 0.5} ] }",
            "timeline[0].fraction:"
        ),
        (
            "{ \"end\": \"1m\", \"users\": [{\"id\": \"A\"}], \"timeline\": [ {\"at\": \"1s\", \"user\": \"*\", \"action\": \"networkUp\"} ] }",
            "timeline[0].user:"
        ),
        (
            "{ \"end\": \"1m\", \"population\": {\"clients\": 5, \"rooms\": 1}, \"timeline\": [ {\"at\": \"1s\", \"user\": \"*\", \"action\": \"networkUp\", \"fraction\": 1.5} ] }",
            "timeline[0].fraction:"
        ),
        (
            "{ \"end\": \"1m\", \"users\": [{\"id\": \"A\"}], \"timeline\": [ {\"at\": \"1s\", \"user\": \"A\", \"action\": \"networkUp\", \"when\": \"now\"} ] }",
            "timeline[0].when:"
        ),
        (
            "{ \"end\": \"1m\", \"users\": [{\"id\": \"A\"}], \"timeline\": [ {\"at\": \"1s\", \"user\": \"A\", \"action\": \"partition\", \"room\": \"r\"} ] }",
            "timeline[0].user:"
        ),
        (
            "{ \"end\": \"1m\", \"timeline\": [ {\"at\": \"1s\", \"action\": \"partition\"} ] }",
            "timeline[0].room:"
        ),
        (
            "{ \"end\": \"1m\", \"timeline\": [ {\"at\": \"1s\", \"action\": \"partition\", \"rooms\": \"*\"} ] }",
            "timeline[0].rooms:"
        ),
        (
            "{ \"end\": \"1m\", \"timeline\": [ {\"at\": \"1s\", \"action\": \"heal\", \"room\": \"r\", \"for\": \"5s\"} ] }",
            "timeline[0].for:"
        ),
        (
            "{ \"end\": \"1m\", \"users\": [{\"id\": \"A\"}], \"timeline\": [ {\"at\": \"1s\", \"user\": \"A\", \"action\": \"networkUp\", \"rooms\": \"*\"} ] }",
            "timeline[0].rooms:"
        ),
    ]

    @Test(arguments: badScenarios)
    func aMalformedScenarioNamesTheFieldAndWhatWasExpected(json: String, path: String) {
        let error = #expect(throws: RoomLinkError.self) { try Self.parse(json) }
        #expect(
            error?.message.hasPrefix(path) == true,
            "expected an error at \(path), got: \(String(describing: error?.message))"
        )
        #expect(error?.message.contains("expected") == true)
    }

    @Test
    func retryPresetsAreReadByNameWithTheirParametersAndLimits() throws {
        func retry(_ json: String) throws -> RetryPolicy? {
            try Self.parse(#"{ "end": "1m", "retry": \#(json) }"#).retry
        }
        #expect(try retry(#"{ "preset": "liveKitSwift" }"#) == .liveKitSwift)
        #expect(try retry(#"{ "preset": "socketIO" }"#) == .socketIO)
        #expect(try retry(#"{ "preset": "phoenix", "maxAttempts": 5 }"#)?.maxAttempts == 5)
        #expect(try retry(#"{ "preset": "liveKitJS", "maxElapsed": "30s" }"#)?.maxAttempts == 10, "keeps its limit")
        #expect(
            try retry(#"{ "preset": "decorrelatedJitter", "base": "100ms", "cap": "10s" }"#)
                == .decorrelatedJitter(base: .milliseconds(100), cap: .seconds(10))
        )
        for name in RetryPolicy.presets.keys {
            #expect(try retry(#"{ "preset": "\#(name)" }"#) == RetryPolicy.presets[name])
        }
    }

    @Test
    func theNewActionsAndTheRoleAreRead() throws {
        let scenario = try Self.parse(
            """
            { "dialect": "agora", "end": "1m", "users": [ { "id": "A", "role": "audience" } ],
              "timeline": [ { "at": "1s", "user": "A", "action": "setClientRole", "role": "broadcaster" },
                            { "at": "2s", "user": "A", "action": "setCloudProxy" },
                            { "at": "3s", "user": "A", "action": "networkChange" } ] }
            """
        )
        #expect(scenario.users[0].role == .audience)
        #expect(
            scenario.timeline.map(\.action) == [
                .vendor(VendorCall("setClientRole", arguments: ["role": "broadcaster"])),
                .vendor(VendorCall("setCloudProxy")),
                .networkChange,
            ]
        )
    }
}
