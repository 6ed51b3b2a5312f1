import Foundation
import RoomLinkTestSupport
import Testing

@testable import RoomLinkScenarios

/// Comparing a real run's event log with its virtual one, on hand-written logs.
@Suite(.hangLimit(minutes: 10))
struct RunComparisonTests {
    static func event(_ user: String, _ time: Double, _ reason: String, users: [String]? = nil) -> LoggedEvent {
        LoggedEvent(
            time: time,
            user: user,
            room: "r1",
            type: users == nil ? "roomState" : "userUpdate",
            strings: users == nil ? ["reason": reason] : ["update": reason],
            lists: users.map { ["users": $0] } ?? [:]
        )
    }

    @Test func theSameStoryLaterAgreesWithinTheTolerance() {
        let virtual = [Self.event("A", 0, "logining"), Self.event("A", 120, "logined"), Self.event("B", 0, "logining")]
        let real = [Self.event("B", 3, "logining"), Self.event("A", 2, "logining"), Self.event("A", 300, "logined")]
        let comparison = RunComparison(virtual: virtual, real: real)
        #expect(comparison.sameSequences)
        #expect(comparison.matched == 3)
        #expect(comparison.maxLateMs == 180)
        #expect(comparison.agrees(tolerance: .milliseconds(200)))
        #expect(!comparison.agrees(tolerance: .milliseconds(100)))
    }

    @Test func anEarlyEventOrAnotherStoryDoesNotAgree() {
        let virtual = [Self.event("A", 100, "logined")]
        #expect(!RunComparison(virtual: virtual, real: [Self.event("A", 50, "logined")]).agrees(tolerance: .seconds(2)))
        let other = RunComparison(virtual: virtual, real: [Self.event("A", 100, "loginFailed")])
        #expect(
            other.mismatches == [
                .init(
                    user: "A",
                    index: 0,
                    virtual: "roomState room=r1 reason=logined",
                    real: "roomState room=r1 reason=loginFailed"
                )
            ]
        )
        let missing = RunComparison(virtual: virtual + [Self.event("A", 200, "reconnecting")], real: virtual)
        #expect(missing.mismatches.first?.real == nil)
    }

    /// Two events the virtual run gave one user at one instant may come in either order.
    @Test func simultaneousEventsMayComeInEitherOrder() {
        let virtual = [Self.event("A", 10, "add", users: ["B"]), Self.event("A", 10, "add", users: ["C"])]
        let swapped = [Self.event("A", 12, "add", users: ["C"]), Self.event("A", 11, "add", users: ["B"])]
        #expect(RunComparison(virtual: virtual, real: swapped).sameSequences)
        let apart = [Self.event("A", 10, "add", users: ["B"]), Self.event("A", 20, "add", users: ["C"])]
        #expect(!RunComparison(virtual: apart, real: Array(apart.reversed())).sameSequences)
    }

    /// What `--compare-with-virtual` prints comes from the library: the verdict, the offsets, the first difference.
    @Test func theSummarySaysTheVerdictAndTheFirstDifference() {
        let virtual = [Self.event("A", 0, "logining"), Self.event("A", 120, "logined")]
        let late = RunComparison(
            virtual: virtual,
            real: [Self.event("A", 2, "logining"), Self.event("A", 300, "logined")]
        )
        #expect(late.summary(tolerance: .milliseconds(200)).hasSuffix("(tolerance 200ms, 5ms early) — agrees\n"))
        #expect(
            late.summary(tolerance: .milliseconds(100)).hasSuffix("(tolerance 100ms, 5ms early) — does NOT agree\n")
        )
        #expect(late.summary(tolerance: .seconds(1)).contains("median +180 ms, earliest +2 ms, latest +180 ms"))
        let other = RunComparison(virtual: virtual, real: [Self.event("A", 0, "loginFailed")])
        #expect(other.summary(tolerance: .seconds(1)).contains("the sequences differ:\n  A #0: virtual roomState"))
    }

    /// A client that watches the server's data over a socket counts a silence from the last frame it received, up to
    /// one and a half data intervals before the fault: Agora's events may come that much early; others' 5 ms.
    @Test func aDialectThatWatchesItsDataMayBeEarlyByItsDataPaceAlone() {
        let virtual = [Self.event("A", 0, "logining"), Self.event("A", 4_000, "interrupted")]
        let early = RunComparison(
            virtual: virtual,
            real: [Self.event("A", 2, "logining"), Self.event("A", 3_400, "interrupted")]
        )
        #expect(RunComparison.earliness(for: .agora) == .milliseconds(755))
        #expect(RunComparison.earliness(for: .zego) == .milliseconds(5))
        #expect(RunComparison.earliness(for: .livekit) == .milliseconds(5))
        #expect(early.agrees(tolerance: .seconds(2), earliness: RunComparison.earliness(for: .agora)))
        #expect(!early.agrees(tolerance: .seconds(2), earliness: RunComparison.earliness(for: .zego)))
        let tooEarly = RunComparison(
            virtual: virtual,
            real: [Self.event("A", 0, "logining"), Self.event("A", 3_000, "interrupted")]
        )
        #expect(!tooEarly.agrees(tolerance: .seconds(2), earliness: RunComparison.earliness(for: .agora)))
    }

    /// The virtual run a real one is compared with: the scenario's own events, in virtual time.
    @Test func theVirtualEventsAreTheScenariosRunInVirtualTime() async throws {
        let scenario = try Scenario(
            json: Data(
                #"{ "users": [{"id": "A"}], "timeline": [{"at": "0s", "user": "A", "action": "login", "room": "r1"}], "end": "5s" }"#
                    .utf8
            )
        )
        let events = try await ScenarioRunner(scenario: scenario).virtualEvents()
        #expect(events.map { $0.strings["reason"] } == ["logining", "logined"])
        #expect(events.allSatisfy { $0.user == "A" && $0.room == "r1" })
    }
}
