import Foundation
import RoomLinkTestSupport
import Testing

@testable import RoomLink
@testable import RoomLinkEngine
@testable import RoomLinkScenarios

/// Each input that once crashed, hung or was silently accepted (issue "Hostile input"): now a named error.
@Suite(.hangLimit(minutes: 10))
struct HostileInputTests {
    static func scenario(_ json: String) throws(RoomLinkError) -> Scenario { try Scenario(json: Data(json.utf8)) }

    static func error(_ json: String) -> RoomLinkError? {
        do {
            _ = try scenario(json)
            return nil
        } catch {
            return error
        }
    }

    // MARK: - Numbers and durations past 64 bits

    @Test(arguments: ["1e300", "9223372036854775808", "-1e19"])
    func anEventLogNumberPastSixtyFourBitsIsNamedNotATrap(_ number: String) {
        let line = #"{"t_ms":0,"user":"A","type":"roomState","code":\#(number)}"#
        let error = #expect(throws: RoomLinkError.self) { try LoggedEvent.read(jsonLines: Data(line.utf8)) }
        #expect(error?.code == .invalidInput)
        #expect(error?.field == "events line 1.code", "\(String(describing: error))")
    }

    @Test(arguments: ["-1", "1e300"])
    func anEventLogTimeOutsideItsRangeIsNamed(_ time: String) {
        let line = #"{"t_ms":\#(time),"user":"A","type":"roomState"}"#
        let error = #expect(throws: RoomLinkError.self) { try LoggedEvent.read(jsonLines: Data(line.utf8)) }
        #expect(error?.field == "events line 1.t_ms")
    }

    @Test
    func hugeDurationsAreRefusedAndTheExponentialTailIsCapped() {
        let base = #"{ "users": [ { "id": "A" } ], "end": "10m", "timeline": [ "#
        let outage = #"{ "at": "1m", "user": "A", "action": "networkDown", "for": { "exponential": "2562047h" } }"#
        #expect(Self.error(base + outage + "] }")?.field == "timeline[0].for.exponential")
        #expect(Self.error(#"{ "end": "2562047h" }"#)?.field == "end")
        #expect(Self.error(#"{ "end": "25h" }"#)?.message.contains("at most 24h") == true)
        var random = SeededRandom(seed: 1)
        for _ in 0..<10_000 {
            let draw = OutageLength.exponential(mean: .seconds(24 * 3_600)).draw(using: &random)
            #expect(draw >= .zero && draw <= ScenarioLimits.maximumDuration)
        }
    }

    // MARK: - Flags

    @Test(arguments: [
        "--outages /", "--kick-storm /", "--token-wave /", "--flapping @", "--churn @", "--churn 5@", "--storm 0.5@",
        "--storm 0.5@1m:", "--outages 0.1@1m:~2562047h", "--partition 0.5@1m:~2562047h", "--flapping 0.1:1ns:0.5",
        "--timing =5s", "--retry fullJitter::",
    ])
    func aMalformedFlagIsNamedWithItsForm(_ flag: String) {
        let parts = flag.split(separator: " ", maxSplits: 1).map(String.init)
        let error = #expect(throws: RoomLinkError.self) {
            switch parts[0] {
            case "--outages": _ = try OutagesFault(parts[1], field: parts[0])
            case "--kick-storm": _ = try KickStormFault(parts[1], field: parts[0])
            case "--token-wave": _ = try TokenWaveFault(parts[1], field: parts[0])
            case "--flapping":
                _ = try FlappingFault(parts[1], field: parts[0], run: .init(start: .zero, end: .seconds(600)))
            case "--churn": _ = try ChurnFault(parts[1], field: parts[0], run: .init(start: .zero, end: .seconds(600)))
            case "--storm": _ = try StormFault(parts[1], field: parts[0])
            case "--partition": _ = try PartitionFault(parts[1], field: parts[0])
            case "--timing": _ = try LoadPlan.timing(parts[1], field: parts[0])
            case "--retry": _ = try LoadPlan.retryJSON(parts[1], field: parts[0])
            default: Issue.record("no parser for \(parts[0])")
            }
        }
        #expect(error?.code == .invalidInput)
        #expect(error?.field == parts[0])
    }

    @Test
    func aLoadPlanPastTheLimitsIsNamedByField() {
        #expect(throws: RoomLinkError.self) {
            try LoadPlan(clients: 1_000_000_000, rooms: 1, duration: .seconds(60)).scenario()
        }
        let long = #expect(throws: RoomLinkError.self) {
            try LoadPlan(clients: 10, rooms: 1, duration: .seconds(1_000 * 3_600)).scenario()
        }
        #expect(long?.field == "duration")
    }

    // MARK: - Populations that cannot fit

    @Test
    func aPopulationThatCannotFitIsRefusedBeforeAnythingIsBuilt() async throws {
        let huge = #"{ "population": { "clients": 1000000000, "rooms": 1 }, "end": "1m" }"#
        #expect(Self.error(huge)?.field == "population.clients", "past the hard maximum")
        let fits = try Self.scenario(#"{ "population": { "clients": 1000, "rooms": 10 }, "end": "1m" }"#)
        var runner = try ScenarioRunner(scenario: fits)
        runner.memoryLimit = 1_000 * ScenarioLimits.estimatedBytesPerClient - 1
        let error = await #expect(throws: RoomLinkError.self) {
            try await SimulationRuntime.withSimulation(seed: 1) { try await runner.run(on: $0) }
        }
        #expect(error?.field == "population.clients")
        #expect(error?.message.contains("1000 clients (≈ 2.0 MiB)") == true, "\(String(describing: error))")
        runner.memoryLimit = 1_000 * ScenarioLimits.estimatedBytesPerClient
        let report = try await SimulationRuntime.withSimulation(seed: 1) { try await runner.run(on: $0) }
        #expect(report.clients == 1_000)
    }

    /// Agora's and LiveKit's clients keep their peers' names and cost about three times a ZEGO client's memory: the
    /// same population and limit that fit for ZEGO are refused for them, naming what each client is estimated at.
    @Test(arguments: ["agora", "livekit"])
    func aDialectThatKeepsPeersIsEstimatedAtItsOwnSize(dialect: String) throws {
        let scenario = try Self.scenario(
            #"{ "dialect": "\#(dialect)", "population": { "clients": 1000, "rooms": 10 }, "end": "1m" }"#
        )
        var runner = try ScenarioRunner(scenario: scenario)
        runner.memoryLimit = 1_000 * ScenarioLimits.estimatedBytesPerClient
        let error = #expect(throws: RoomLinkError.self) { try runner.check() }
        #expect(error?.field == "population.clients")
        #expect(error?.message.contains("≈ \(2 * ScenarioLimits.estimatedBytesPerClient) B each") == true)
        runner.memoryLimit = 1_000 * ScenarioLimits.estimatedBytesPerClient(for: scenario.dialect)
        #expect(throws: Never.self) { try runner.check() }
    }

    @Test
    func heartbeatLoadsHaveBounds() {
        #expect(throws: RoomLinkError.self) {
            try HeartbeatLoad(clients: 10, period: .nanoseconds(1), duration: .seconds(1))
        }
        #expect(throws: RoomLinkError.self) {
            try HeartbeatLoad(clients: 10, period: .seconds(1), duration: .seconds(1_000 * 3_600))
        }
        #expect(throws: RoomLinkError.self) {
            try HeartbeatLoad(clients: 1_000_000_000, period: .seconds(1), duration: .seconds(60))
        }
    }

    @Test(arguments: ["heartbeatInterval", "attemptTimeout", "serverHeartbeatTimeout"])
    func intervalsAndTimeoutsAreAtLeastAMillisecondButDelaysMayBeZero(_ name: String) throws {
        let error = Self.error(#"{ "timings": { "\#(name)": "1ns" }, "end": "1m" }"#)
        #expect(error?.field == "timings.\(name)")
        _ = try Self.scenario(#"{ "timings": { "userUpdateDelay": "0", "loginProcessing": "0" }, "end": "1m" }"#)
    }

    // MARK: - Strict JSON

    @Test(arguments: [
        (#"{ "end": "1m", }"#, "a trailing comma before }"),
        (#"{ "end": "1m", "timeline": [ 1, ] }"#, "a trailing comma before ]"),
        (#"{ "end": "1m" } x"#, "text after the JSON value"),
        (#"{ "end": "1m" // soon }"#, "expected , or } in an object"),
        (#"{ 'end': "1m" }"#, "expected a key in quotes"),
        (#"{ "seed": 01, "end": "1m" }"#, "a number with a leading zero"),
        (#"{ "seed": NaN, "end": "1m" }"#, "unexpected character 'N'"),
        ("{ \"end\": \"1\u{1}m\" }", "a control character"),
        (#"{ "end": "1m"#, "a string that never ends"),
        (#"{ "end": "\x" }"#, "an unknown escape"),
        (#"{ "end": "\ud800" }"#, "a lone surrogate"),
    ])
    func textThatIsNotStrictJSONIsRefusedSayingWhere(_ text: String, _ reason: String) {
        let error = Self.error(text)
        #expect(error?.code == .invalidInput)
        #expect(error?.message.contains(reason) == true, "\(String(describing: error))")
        #expect(error?.message.contains("line 1, column ") == true)
    }

    @Test
    func aKeyWrittenTwiceIsNamedByItsPath() {
        #expect(Self.error(#"{ "end": "1m", "end": "2m" }"#)?.field == "end")
        let nested = #"{ "users": [ { "id": "A" }, { "id": "B", "id": "C" } ], "end": "1m" }"#
        #expect(Self.error(nested)?.field == "users[1].id")
        let line = #"{"t_ms":0,"user":"A","user":"B","type":"roomState"}"#
        let error = #expect(throws: RoomLinkError.self) { try LoggedEvent.read(jsonLines: Data(line.utf8)) }
        #expect(error?.field == "events line 1.user")
    }

    @Test
    func deepNestingIsRefusedWithoutExhaustingTheStack() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(Self.error(deep)?.message.contains("nesting deeper than 256 levels") == true)
    }

    @Test
    func strictJSONStillReadsEverythingJSONAllows() throws {
        let text = #"{"a":[1,-0.5,2e3,1E-2,true,false,null,"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"],"b":{}, "c":[] }"#
        let value = try StrictJSONParser.parse(Array(text.utf8))
        guard case .object(let fields) = value, case .array(let items)? = fields["a"] else {
            Issue.record("not an object with an array: \(value)")
            return
        }
        #expect(items[0] == .number(1) && items[1] == .number(-0.5) && items[2] == .number(2_000))
        #expect(items[3] == .number(0.01) && items[4] == .bool(true) && items[6] == .null)
        #expect(items[7] == .string("\"\\/\u{8}\u{c}\n\r\té😀"))
        #expect(fields["b"] == .object([:]) && fields["c"] == .array([]))
    }
}

/// Valid scenarios pass their own oracle, and the oracle's cost does not depend on policy parameters.
@Suite(.hangLimit(minutes: 10), .skippedUnderThreadSanitizer)
struct OracleOnValidScenariosTests {
    static func run(_ json: String) async throws -> RunReport {
        let scenario = try Scenario(json: Data(json.utf8))
        return try await SimulationRuntime.withSimulation(seed: scenario.seed) {
            try await ScenarioRunner(scenario: scenario).run(on: $0)
        }
    }

    /// A named user's outage with a length (`"for"`) ends when the runner brings the network back; peers of a short
    /// one see nothing. (Every dialect's oracle once expected them to see a departure.)
    @Test(
        arguments: ["zego", "agora", "livekit"],
        [#""5s""#, #"{ "uniform": ["1s", "3m"] }"#, #"{ "exponential": "40s" }"#]
    )
    func anOutageWithALengthPassesTheOracle(_ dialect: String, _ length: String) async throws {
        for seed in 1...4 {
            let report = try await Self.run(
                """
                { "dialect": "\(dialect)", "seed": \(seed), "users": [ { "id": "A" }, { "id": "B", "userStatusNotify": true } ],
                  "timeline": [ { "at": "0s", "user": "A", "action": "login", "room": "r1" },
                    { "at": "0s", "user": "B", "action": "login", "room": "r1" },
                    { "at": "10s", "user": "A", "action": "networkDown", "for": \(length) } ],
                  "end": "6m" }
                """
            )
            #expect(report.violations == 0, "seed \(seed): \(report.violationSample)")
        }
    }

    /// Agora with keep-alive pings still reports `interrupted` 4 s after its data stopped, not at the first ping that
    /// cannot leave.
    @Test(arguments: ["networkDown", "blackhole"])
    func agoraWithKeepAlivesPassesTheOracle(_ outage: String) async throws {
        let report = try await Self.run(
            """
            { "dialect": "agora", "users": [ { "id": "A" }, { "id": "B" } ], "timings": { "keepAliveInterval": "5s" },
              "timeline": [ { "at": "0s", "user": "A", "action": "login", "room": "c1" },
                { "at": "0s", "user": "B", "action": "login", "room": "c1" },
                { "at": "10s", "user": "A", "action": "\(outage)" }, { "at": "40s", "user": "A", "action": "networkUp" } ],
              "end": "2m" }
            """
        )
        #expect(report.violations == 0, "\(report.violationSample)")
        #expect(report.eventsByReason["interrupted"] == 1)
    }

    /// LiveKit's give-up window for a billion attempts is the first ten thousand added one by one and the rest at
    /// the last bounds: computed once, in closed form, equal to the sum over every attempt.
    @Test
    func liveKitsGiveUpWindowIsComputedOnceWhateverMaxAttempts() throws {
        let schedule = RetryPolicy.Schedule.exponential(
            base: .milliseconds(100),
            cap: .seconds(5),
            multiplier: 2,
            jitter: .full
        )
        func bruteForce(_ attempts: Int) -> (Double, Double) {
            (1...attempts).reduce((0.0, 0.0)) { sum, attempt in
                let bounds = schedule.delayBounds(beforeAttempt: attempt)
                return (sum.0 + bounds.lowerBound.milliseconds, sum.1 + bounds.upperBound.milliseconds + 5_000)
            }
        }
        for attempts in [1, 12, 20_000] {
            let policy = try RetryPolicy(schedule: schedule, maxAttempts: attempts)
            let window = try #require(LiveKitOracle.giveUpWindow(policy: policy, attemptTimeout: .seconds(5)))
            let expected = bruteForce(attempts)
            #expect(abs(window.earliest - expected.0) < 1e-6 && abs(window.latest - expected.1) < 1e-3)
        }
        let billion = try RetryPolicy(schedule: schedule, maxAttempts: 1_000_000_000)
        let window = try #require(LiveKitOracle.giveUpWindow(policy: billion, attemptTimeout: .seconds(5)))
        #expect(window.latest > 0.999 * 1e9 * 10_000, "every attempt: up to 5 s delay and 5 s timeout")
    }
}
