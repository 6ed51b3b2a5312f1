import Foundation
import RoomLink
import RoomLinkTestSupport
import Testing

@Suite(.hangLimit(minutes: 10))
struct ZegoOracleTests {
    /// A and B in r1, B notified of peers; A's network fails at 10 s and comes back at `upAt` (never if nil).
    static func scenario(upAt: String?) throws -> Scenario {
        let up = upAt.map { #", { "at": "\#($0)", "user": "A", "action": "networkUp" }"# } ?? ""
        return try Scenario(
            json: Data(
                """
                { "users": [ { "id": "A" }, { "id": "B", "userStatusNotify": true } ], "end": "30m",
                  "timeline": [
                    { "at": "0s", "user": "A", "action": "login", "room": "r1" },
                    { "at": "0s", "user": "B", "action": "login", "room": "r1" },
                    { "at": "10s", "user": "A", "action": "networkDown" }\(up) ] }
                """.utf8
            )
        )
    }

    static func state(_ ms: Double, _ user: String, _ reason: String, _ code: Int) -> String {
        #"{"t_ms":\#(ms),"user":"\#(user)","room":"r1","type":"roomState","reason":"\#(reason)","code":\#(code)}"#
    }

    static func update(_ ms: Double, _ user: String, _ kind: String, _ peer: String) -> String {
        #"{"t_ms":\#(ms),"user":"\#(user)","room":"r1","type":"userUpdate","update":"\#(kind)","users":["\#(peer)"]}"#
    }

    static let loggedIn = [
        state(0, "A", "logining", 0), state(0, "B", "logining", 0), state(120, "A", "logined", 0),
        state(120, "B", "logined", 0), update(220, "B", "add", "A"),
    ]

    static func check(_ scenario: Scenario, _ lines: [String]) throws -> [Violation] {
        let events = try LoggedEvent.read(jsonLines: Data(lines.joined(separator: "\n").utf8))
        return ZegoOracle(scenario: scenario).check(events)
    }

    // MARK: - The three situations of contract §2, as they should be

    @Test
    func situationOneARecoversWithinNinetySecondsAndBSeesNothing() throws {
        let log =
            Self.loggedIn + [
                Self.state(10_000, "A", "reconnecting", 1_002_051), Self.state(70_050, "A", "reconnected", 0),
            ]
        #expect(try Self.check(Self.scenario(upAt: "70s"), log) == [])
    }

    @Test
    func situationTwoBSeesDeleteAtNinetySecondsAndAddAfterTheReconnect() throws {
        let log =
            Self.loggedIn + [
                Self.state(10_000, "A", "reconnecting", 1_002_051), Self.update(100_100, "B", "delete", "A"),
                Self.state(200_050, "A", "reconnected", 0), Self.update(200_150, "B", "add", "A"),
            ]
        #expect(try Self.check(Self.scenario(upAt: "200s"), log) == [])
    }

    @Test
    func situationThreeAGivesUpAtTwentyMinutes() throws {
        let log =
            Self.loggedIn + [
                Self.state(10_000, "A", "reconnecting", 1_002_051), Self.update(100_100, "B", "delete", "A"),
                Self.state(1_210_000, "A", "reconnectFailed", 1_002_053),
            ]
        #expect(try Self.check(Self.scenario(upAt: nil), log) == [])
    }

    // MARK: - Each rule catches its breach

    static let badLogs: [(String, String?, [String])] = [
        ("transition", "70s", [state(0, "A", "logined", 0)]),
        ("code", "70s", loggedIn + [state(10_000, "A", "reconnecting", 0)]),
        (
            "retryTimeout", nil,
            loggedIn + [
                state(10_000, "A", "reconnecting", 1_002_051), update(100_100, "B", "delete", "A"),
                state(1_000_000, "A", "reconnectFailed", 1_002_053),
            ]
        ),
        ("afterEnd", "70s", loggedIn + [state(5_000, "A", "kickOut", 1_002_055), state(6_000, "A", "reconnected", 0)]),
        ("afterEnd", "70s", loggedIn + [state(5_000, "B", "kickOut", 1_002_050), update(6_000, "B", "add", "C")]),
        (
            "presence", "70s",
            loggedIn + [
                state(10_000, "A", "reconnecting", 1_002_051), update(40_000, "B", "delete", "A"),
                state(70_050, "A", "reconnected", 0),
            ]
        ),
        (
            "presence", "200s",
            loggedIn + [state(10_000, "A", "reconnecting", 1_002_051), state(200_050, "A", "reconnected", 0)]
        ),
        (
            "rejoin", "200s",
            loggedIn + [
                state(10_000, "A", "reconnecting", 1_002_051), update(100_100, "B", "delete", "A"),
                state(200_050, "A", "reconnected", 0),
            ]
        ),
    ]

    @Test(arguments: badLogs)
    func eachRuleReportsItsBreach(rule: String, upAt: String?, log: [String]) throws {
        let violations = try Self.check(Self.scenario(upAt: upAt), log)
        #expect(violations.map(\.rule).contains(rule), "expected a \(rule) violation, got \(violations)")
    }

    @Test
    func aLineThatIsNotAnEventIsRejectedWithItsNumber() {
        let error = #expect(throws: RoomLinkError.self) {
            try LoggedEvent.read(jsonLines: Data("\(Self.loggedIn[0])\n{\"user\":\"A\"}\n".utf8))
        }
        #expect(error?.message.hasPrefix("events line 2.t_ms:") == true)
    }

    /// A state the contract does not know is kept by its name, whatever the table keeps it as, and named again when
    /// the next line leaves it — for a scenario's own user and for a population's (`u<i>` in `room-<j>`, whose
    /// entries the oracle packs).
    @Test
    func anUnknownStateIsNamedWhenTheNextLineLeavesIt() throws {
        for (user, room) in [("A", "r1"), ("u7", "room-3")] {
            func line(_ ms: Double, _ reason: String) -> String {
                #"{"t_ms":\#(ms),"user":"\#(user)","room":"\#(room)","type":"roomState","reason":"\#(reason)","code":0}"#
            }
            let log = [line(0, "logining"), line(50, "hovering"), line(120, "logined")]
            let violations = try Self.check(Self.scenario(upAt: nil), log)
            let messages = violations.filter { $0.rule == "transition" }.map(\.message)
            #expect(
                messages == [
                    "logining → hovering is not a ZEGO state sequence",
                    "hovering → logined is not a ZEGO state sequence",
                ],
                "\(user)"
            )
        }
    }
}
