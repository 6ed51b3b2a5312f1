import Foundation
import Testing

@testable import RoomLinkScenarios

/// The per-connection table the oracles and the load statistics keep: population pairs packed in a word, every other
/// pair by its names — and never two pairs in one entry.
@Suite
struct UserRoomTableTests {
    /// Names that look like the population's but are not its spelling, beside ones that are.
    static let pairs = [
        ("u1", "room-1"), ("u01", "room-1"), ("u1", "room-01"), ("u1 ", "room-1"), ("U1", "room-1"),
        ("u1234567890", "room-1"), ("u123456789", "room-2"), ("user1", "room-1"), ("u", "room-"), ("u1", "Room-1"),
        ("u-1", "room-1"), ("u0", "room-0"), ("", ""), ("alice", "r1"), ("u1", "room-1\u{0}"),
    ]

    @Test
    func everyPairIsItsOwnEntry() {
        var table = UserRoomTable<Int>()
        for (index, (user, room)) in Self.pairs.enumerated() { table[user, room] = index }
        #expect(table.count == Self.pairs.count)
        for (index, (user, room)) in Self.pairs.enumerated() { #expect(table[user, room] == index) }
        #expect(table["u2", "room-1"] == nil)
        #expect(table["u1", "room-2"] == nil)
    }

    @Test
    func aUserAloneIsNotAnyOfItsPairs() {
        var table = UserRoomTable<Int>()
        for (index, (user, room)) in Self.pairs.enumerated() { table[user, room] = index }
        table[user: "u1"] = 100
        table[user: "alice"] = 101
        #expect(table[user: "u1"] == 100 && table["u1", "room-1"] == 0 && table[user: "u01"] == nil)
        #expect(table[user: "alice"] == 101 && table["alice", "r1"] == Self.pairs.count - 2)
        #expect(table.count == Self.pairs.count + 2)
        #expect(table.removeValue(user: "u1") == 100 && table[user: "u1"] == nil && table["u1", "room-1"] == 0)
    }

    @Test
    func updatesAndRemovalsAnswerWhatWasThere() {
        var table = UserRoomTable<String>()
        for (user, room) in [("u7", "room-3"), ("alice", "r1")] {
            #expect(table.updateValue("a", user: user, room: room) == nil)
            #expect(table.updateValue("b", user: user, room: room) == "a")
            #expect(table.removeValue(user: user, room: room) == "b")
            #expect(table.removeValue(user: user, room: room) == nil)
            table[user, room] = "c"
            table[user, room] = nil
            #expect(table[user, room] == nil)
        }
        #expect(table.count == 0)
    }

    /// Through the ZEGO oracle: `u01` logging in does not make `u1` (same room) logged in.
    @Test
    func theOracleKeepsLookAlikeUsersApart() throws {
        let scenario = try Scenario(json: Data(#"{ "users": [], "end": "1m", "timeline": [] }"#.utf8))
        func state(_ user: String, _ reason: String) -> String {
            #"{"t_ms":0,"user":"\#(user)","room":"room-1","type":"roomState","reason":"\#(reason)","code":0}"#
        }
        let lines = [state("u01", "logining"), state("u01", "logined"), state("u1", "logined")]
        let events = try LoggedEvent.read(jsonLines: Data(lines.joined(separator: "\n").utf8))
        let violations = ZegoOracle(scenario: scenario).check(events)
        #expect(violations.map(\.user) == ["u1"])
        #expect(violations.map(\.rule) == ["transition"])
    }
}
