import Foundation
import RoomLink
import RoomLinkTestSupport
import Testing

/// The Agora and LiveKit oracles on good logs (the engine's own) and on logs broken one rule at a time.
@Suite(.hangLimit(minutes: 10), .skippedUnderThreadSanitizer)
struct DialectOracleTests {
    /// The scenario and the JSON log of a run.
    static func run(_ json: String) async throws -> (Scenario, [String]) {
        let scenario = try Scenario(json: Data(json.utf8))
        let (events, report) = try await ScenarioHarness.run(scenario)
        #expect(report.violations == 0, "\(report.violationSample)")
        return (scenario, events.jsonLines)
    }

    static func rules(_ scenario: Scenario, _ lines: [String]) throws -> Set<String> {
        let events = try LoggedEvent.read(jsonLines: Data(lines.joined(separator: "\n").utf8))
        return Set(scenario.makeOracle().check(events).map(\.rule))
    }

    /// `lines` with the first line containing every one of `parts` replaced by `transform` of it (removed if nil).
    static func edit(_ lines: [String], _ parts: [String], _ transform: (String) -> String?) -> [String] {
        guard let index = lines.firstIndex(where: { line in parts.allSatisfy { line.contains($0) } }) else {
            Issue.record("no line with \(parts)")
            return lines
        }
        var edited = lines
        if let replacement = transform(lines[index]) { edited[index] = replacement } else { edited.remove(at: index) }
        return edited
    }

    static func retime(_ line: String, to ms: Double) -> String {
        line.replacingOccurrences(of: #"^\{"t_ms":[0-9.]+"#, with: "{\"t_ms\":\(ms)", options: .regularExpression)
    }

    @Test
    func theAgoraOracleCatchesEachBrokenRule() async throws {
        let (scenario, log) = try await Self.run(
            AgoraSituationTests.scenario(
                """
                { "at": "10s", "user": "A", "action": "networkDown" },
                { "at": "60s", "user": "A", "action": "networkUp" },
                { "at": "2m", "user": "A", "action": "networkDown" }
                """
            )
        )
        #expect(try Self.rules(scenario, log).isEmpty)
        let interrupted = [#""user":"A""#, #""reason":"interrupted""#]
        let cases: [(String, [String])] = [
            ("reason", Self.edit(log, interrupted) { $0.replacingOccurrences(of: "reconnecting", with: "connected") }),
            ("transition", Self.edit(log, [#""user":"A""#, #""reason":"connecting""#]) { _ in nil }),
            ("companion", Self.edit(log, [#""user":"A""#, #""reason":"lost""#]) { _ in nil }),
            ("lostAfter", Self.edit(log, [#""user":"A""#, #""reason":"lost""#]) { Self.retime($0, to: 30_000) }),
            ("retryTimeout", Self.edit(log, [#""reason":"joinFailed""#]) { Self.retime($0, to: 600_000) }),
            (
                "afterEnd",
                log + [#"{"t_ms":1700000.0,"user":"A","room":"c1","type":"userJoined","peer":"B"}"#]
            ),
            ("interrupted", Self.edit(log, interrupted) { Self.retime($0, to: 20_000) }),
            ("presence", Self.edit(log, [#""user":"B""#, #""type":"userOffline""#]) { _ in nil }),
            ("rejoin", Self.edit(log, [#""user":"B""#, #""type":"userJoined""#, #""t_ms":60300"#]) { _ in nil }),
        ]
        for (rule, broken) in cases {
            let found = try Self.rules(scenario, broken)
            #expect(found.contains(rule), "\(rule) not found; found \(found)")
        }
    }

    @Test
    func theLiveKitOracleCatchesEachBrokenRule() async throws {
        let (scenario, log) = try await Self.run(
            LiveKitSituationTests.scenario(
                """
                { "at": "10s", "user": "A", "action": "networkDown" },
                { "at": "14s", "user": "A", "action": "networkUp" },
                { "at": "30s", "user": "A", "action": "networkDown" },
                { "at": "55s", "user": "A", "action": "networkUp" },
                { "at": "90s", "user": "A", "action": "networkDown" },
                { "at": "5m", "user": "B", "action": "logout" }
                """
            )
        )
        #expect(try Self.rules(scenario, log).isEmpty)
        let reconnecting = [#""user":"A""#, #""state":"reconnecting""#]
        let cases: [(String, [String])] = [
            (
                "transition",
                Self.edit(log, reconnecting) {
                    $0.replacingOccurrences(of: #""from":"connected""#, with: #""from":"connecting""#)
                }
            ),
            (
                "mode",
                Self.edit(log, [#""user":"A""#, #""mode":"quick""#]) {
                    $0.replacingOccurrences(of: "quick", with: "full")
                }
            ),
            (
                "quickSilence",
                Self.edit(log, [#""user":"A""#, #""type":"reconnectStarted""#]) {
                    $0 + "\n" + #"{"t_ms":10000.0,"user":"A","room":"r1","type":"participantDisconnected","peer":"B"}"#
                }.flatMap { $0.split(separator: "\n").map(String.init) }
            ),
            (
                "disconnect",
                Self.edit(log, [#""reason":"clientInitiated""#]) {
                    $0.replacingOccurrences(of: "clientInitiated", with: "duplicateIdentity")
                }
            ),
            (
                "giveUp",
                Self.edit(
                    Self.edit(log, [#""reason":"connectionTimeout""#]) { Self.retime($0, to: 95_000) },
                    [#""state":"disconnected","from":"reconnecting""#]
                ) { Self.retime($0, to: 95_000) }
            ),
            ("presence", Self.edit(log, [#""user":"B""#, #""type":"participantDisconnected""#]) { _ in nil }),
            ("rejoin", Self.edit(log, [#""user":"B""#, #""type":"participantConnected""#, #""t_ms":6"#]) { _ in nil }),
        ]
        for (rule, broken) in cases {
            let found = try Self.rules(scenario, broken)
            #expect(found.contains(rule), "\(rule) not found; found \(found)")
        }
    }

    @Test
    func theExamplesOfEveryDialectPassTheirOracle() async throws {
        for name in ["agora-timeline.json", "livekit-reconnect.json"] {
            let (_, report) = try await ScenarioHarness.runExample(name)
            #expect(report.violations == 0, "\(name): \(report.violationSample)")
            #expect(report.events > 20)
        }
    }
}
