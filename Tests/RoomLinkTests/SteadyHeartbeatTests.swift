import Foundation
import RoomLink
import Testing

/// The load report keeps the heartbeat round trips after the fill apart from the whole run's: the fill is the
/// population's login window and the seconds after it in which logins were still being accepted.
@Suite(.timeLimit(.minutes(1)))
struct SteadyHeartbeatTests {
    static func at(_ seconds: Double) -> RuntimeInstant { RuntimeInstant(nanoseconds: Int64(seconds * 1e9)) }

    /// Logins accepted in seconds 2…11 of a window ending at 10 s; heartbeats of 500 ms in the fill and 2 ms after.
    static func filled(fillEnds: Duration?) -> ConnectionStatistics {
        let statistics = ConnectionStatistics(fillEnds: fillEnds)
        for second in 2...11 {
            statistics.loginAnswered(after: .milliseconds(5), accepted: true, at: at(Double(second) + 0.5))
            statistics.heartbeatAnswered(after: .milliseconds(500), at: at(Double(second) + 0.6))
        }
        // Second 12 has no login: the fill ended with it, and the steady state begins at 13.
        statistics.heartbeatAnswered(after: .milliseconds(500), at: at(12.5))
        for second in 13...20 {
            statistics.heartbeatAnswered(after: .milliseconds(2), at: at(Double(second) + 0.5))
        }
        // A login refused after the fill does not move it (a refusal is not an accepted login).
        statistics.loginAnswered(after: .milliseconds(1), accepted: false, at: at(15.2))
        return statistics
    }

    @Test func roundTripsAfterTheFillAreKeptApart() throws {
        let report = ConnectionReport(Self.filled(fillEnds: .seconds(10)).tally(end: 21))
        #expect(report.steadyFrom == 13)
        let steady = try #require(report.steadyHeartbeatRoundTrip)
        #expect(steady.count == 8)
        #expect(steady.maxMs < 3)
        #expect(report.heartbeatRoundTrip.count == 19)
        #expect(report.heartbeatRoundTrip.p99Ms > 400)
        #expect(report.summary.contains("after the fill (from 13 s)"))
    }

    @Test func aRunWithoutALoginWindowHasNoSteadyStateApart() {
        let report = ConnectionReport(Self.filled(fillEnds: nil).tally(end: 21))
        #expect(report.steadyFrom == nil && report.steadyHeartbeatRoundTrip == nil)
        #expect(report.heartbeatRoundTrip.count == 19)
        #expect(!report.summary.contains("after the fill"))
    }

    @Test func loginsThatNeverStopLeaveNoSteadyState() {
        let statistics = ConnectionStatistics(fillEnds: .seconds(2))
        for second in 0..<30 {
            statistics.loginAnswered(after: .milliseconds(5), accepted: true, at: Self.at(Double(second) + 0.1))
            statistics.heartbeatAnswered(after: .milliseconds(7), at: Self.at(Double(second) + 0.2))
        }
        let report = ConnectionReport(statistics.tally(end: 30))
        #expect(report.steadyFrom == nil && report.steadyHeartbeatRoundTrip == nil)
    }

    /// Generators' tallies merge: the steady state begins at the latest generator's, and a tally written before the
    /// steady state was kept apart still decodes.
    @Test func talliesMergeAndOldOnesDecode() throws {
        var merged = Self.filled(fillEnds: .seconds(10)).tally(end: 21)
        let later = ConnectionStatistics(fillEnds: .seconds(10))
        later.loginAnswered(after: .milliseconds(5), accepted: true, at: Self.at(10.5))
        later.loginAnswered(after: .milliseconds(5), accepted: true, at: Self.at(11.5))
        later.loginAnswered(after: .milliseconds(5), accepted: true, at: Self.at(12.5))
        later.heartbeatAnswered(after: .milliseconds(3), at: Self.at(16.5))
        merged.add(later.tally(end: 21))
        #expect(merged.steadyFrom == 14)
        #expect(ConnectionReport(merged).steadyHeartbeatRoundTrip?.count == 9)

        var json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(merged)) as! [String: Any]
        json["steadyHeartbeatRoundTrip"] = nil
        json["steadyFrom"] = nil
        let old = try JSONDecoder().decode(ConnectionTally.self, from: JSONSerialization.data(withJSONObject: json))
        #expect(old.steadyFrom == nil && old.heartbeatRoundTrip == merged.heartbeatRoundTrip)
    }
}
