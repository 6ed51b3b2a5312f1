import Foundation
import RoomLink
import RoomLinkTestSupport
import Testing

/// A population entry's participants, armed one at a time in virtual time, act where arming them all at the start
/// would have put them: among the timeline's other entries at the same instant, in the timeline's order.
@Suite(.hangLimit(minutes: 10))
struct TimelineCursorTests {
    /// Who logs in at 2 s, in order: a population user (logins every second from 0 s, each armed when the one before
    /// it fired) and the named user N, whose login was armed at the start, after the population's entry.
    @Test
    func populationParticipantsKeepTheirPlaceAmongTheTimelinesEntries() async throws {
        let (events, report) = try await ScenarioHarness.run(
            """
            { "population": { "clients": 4, "rooms": 1 }, "users": [ { "id": "N" } ],
              "timeline": [ { "at": "2s", "user": "N", "action": "login", "room": "room-0" },
                            { "at": "0s", "user": "*", "action": "login", "over": "4s" } ],
              "end": "10s" }
            """
        )
        #expect(report.violations == 0, "\(report.violationSample)")
        let logins = events.entries.filter {
            $0.time == .zero.advanced(by: .seconds(2)) && $0.line.string("reason") == "logining"
        }.map(\.user)
        // The population's entry comes first in the timeline (it starts first), so its participant's place does too.
        #expect(logins.count == 2 && logins.first != "N" && logins.last == "N", "\(logins)")
    }
}
