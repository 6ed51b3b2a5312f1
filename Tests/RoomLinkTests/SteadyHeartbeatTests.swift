import Foundation
import RoomLink
import RoomLinkTestSupport
import Testing

/// The load report keeps the heartbeat round trips after the fill apart from the whole run's: the fill is the
/// population's login window and the seconds after it in which logins were still being accepted.
@Suite(.hangLimit(minutes: 10))
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

    /// The generator's own timer lateness is kept apart after the fill too: a generator behind only while the rooms
    /// filled is told from one that never kept up (`RunReport.keptUpAfterFill`).
    @Test func timerLatenessAfterTheFillIsKeptApart() throws {
        let lateness = LockedBox(LatencyRecorder())
        func late(_ milliseconds: Int64, times: Int) {
            lateness.withLock { for _ in 0..<times { $0.record(nanoseconds: milliseconds * 1_000_000) } }
        }
        let statistics = ConnectionStatistics(fillEnds: .seconds(10), timerLateness: { lateness.withLock { $0 } })
        late(200, times: 50)  // behind while the rooms fill
        for second in 2...11 {
            statistics.loginAnswered(after: .milliseconds(5), accepted: true, at: Self.at(Double(second) + 0.5))
        }
        statistics.heartbeatAnswered(after: .milliseconds(2), at: Self.at(12.5))
        late(300, times: 5)  // still before the steady state is known (second 12 has not ended)
        statistics.heartbeatAnswered(after: .milliseconds(2), at: Self.at(13.5))  // it is now: from 13 s
        late(1, times: 100)
        late(2, times: 20)
        let report = ConnectionReport(statistics.tally(end: 21))
        #expect(report.steadyFrom == 13)
        let steady = try #require(report.steadyTimerLateness)
        #expect(steady.count == 120)
        #expect(steady.maxMs < 3)
        // The whole run's recorder still has every timer; the window's is what came after.
        #expect(lateness.withLock { $0.count } == 175)
        #expect(RunReport.keptUp(timerLateness: steady, timeScale: 1, latency: .zero))
        #expect(!RunReport.keptUp(timerLateness: lateness.withLock { $0.summary }, timeScale: 1, latency: .zero))

        // Without a steady state apart, or without the lateness watched, there is none.
        #expect(ConnectionReport(Self.filled(fillEnds: .seconds(10)).tally(end: 21)).steadyTimerLateness == nil)
        let endless = ConnectionStatistics(fillEnds: nil, timerLateness: { lateness.withLock { $0 } })
        endless.heartbeatAnswered(after: .milliseconds(2), at: Self.at(13.5))
        #expect(ConnectionReport(endless.tally(end: 21)).steadyTimerLateness == nil)
    }

    /// A window of a recorder: what was recorded since an earlier copy, bucket by bucket.
    @Test func aRecorderSinceAnEarlierCopyHoldsTheLaterDurations() {
        var recorder = LatencyRecorder()
        for value in [1, 5, 5, 900] { recorder.record(nanoseconds: Int64(value) * 1_000_000) }
        let earlier = recorder
        for value in [5, 7, 7] { recorder.record(nanoseconds: Int64(value) * 1_000_000) }
        // Bucket by bucket (three significant digits): 5 ms once, 7 ms twice, nothing of the earlier copy's.
        let window = recorder.since(earlier).summary
        #expect(window.count == 3)
        #expect(abs(window.p50Ms - 7) < 0.01 && abs(window.p99Ms - 7) < 0.01)
        #expect(recorder.since(earlier).since(LatencyRecorder()).summary == window)
        var rebuilt = earlier
        rebuilt.merge(recorder.since(earlier))
        #expect(rebuilt.summary.count == recorder.summary.count && rebuilt.summary.p90Ms == recorder.summary.p90Ms)
        #expect(recorder.since(recorder).count == 0)
        #expect(recorder.since(LatencyRecorder()) == recorder)
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
