import Foundation
import RoomLinkTestSupport
import Testing

@testable import RoomLink
@testable import RoomLinkEngine
@testable import RoomLinkScenarios

/// A run stopped early (a signal, a closed pipe) keeps every event it produced and says it was interrupted.
@Suite(.hangLimit(minutes: 10))
struct RunInterruptionTests {
    /// Interrupts the run once `count` events have been recorded, from inside the run (as a signal would, from
    /// another thread, at any moment).
    final class InterruptingSink: EventSink, Sendable {
        let interruption: RunInterruption
        let count: Int
        let seen = LockedBox(0)
        init(interruption: RunInterruption, after count: Int) {
            self.interruption = interruption
            self.count = count
        }
        func record(_ event: Stamped<EventLogLine>, from client: String) {
            if seen.withLock({
                $0 += 1
                return $0
            }) == count {
                interruption.interrupt(.requested("test"))
            }
        }
    }

    static let scenario =
        #"{ "population": { "clients": 2000, "rooms": 20 }, "end": "10m", "timeline": ["#
        + #" { "at": "0s", "user": "*", "action": "login", "over": "60s" },"#
        + #" { "at": "5m", "user": "*", "action": "networkDown", "fraction": 0.5, "for": "1m" } ] }"#

    @Test
    func aVirtualRunInterruptedMidwayReportsWhatItProducedAndStopsEarly() async throws {
        let interruption = RunInterruption()
        var runner = try ScenarioRunner(scenario: Scenario(json: Data(Self.scenario.utf8)))
        runner.interruption = interruption
        let sink = InterruptingSink(interruption: interruption, after: 1_000)
        let report = try await SimulationRuntime.withSimulation(seed: 1) { try await runner.run(on: $0, events: sink) }
        #expect(report.interrupted)
        #expect(interruption.reason == .requested("test"))
        #expect(report.scenarioSeconds < 10 * 60, "stopped before the end")
        #expect(report.events == sink.seen.withLock { $0 }, "every event produced was counted")
        #expect(report.events >= 1_000)
    }

    /// A signal that comes once the run has reached its end stopped nothing: the report says the run is whole, and
    /// so does the reason a program reads to say how the run ended (the CLI's message and exit status follow it).
    @Test
    func anInterruptionAfterTheEndStopsNothingAndSaysSo() async throws {
        let interruption = RunInterruption()
        var runner = try ScenarioRunner(
            scenario: Scenario(
                json: Data(#"{ "users": [{ "id": "A" }], "end": "1m", "timeline": [] }"#.utf8)
            )
        )
        runner.interruption = interruption
        let report = try await SimulationRuntime.withSimulation(seed: 1) { try await runner.run(on: $0) }
        interruption.interrupt(.signal(2))
        #expect(!report.interrupted)
        #expect(interruption.reason == .signal(2))
        #expect(interruption.cause(of: report) == nil)
        // And one that stopped a run is the reason it stopped.
        var stopped = report
        stopped.interrupted = true
        #expect(interruption.cause(of: stopped) == .signal(2))
    }

    // 2,000 clients for ten minutes in one simulation thread: nothing for ThreadSanitizer, at its ×30 cost.
    @Test(.skippedUnderThreadSanitizer)
    func aRunNobodyInterruptsPlaysToItsEnd() async throws {
        var runner = try ScenarioRunner(scenario: Scenario(json: Data(Self.scenario.utf8)))
        runner.interruption = RunInterruption()
        let report = try await SimulationRuntime.withSimulation(seed: 1) { try await runner.run(on: $0) }
        #expect(!report.interrupted)
        #expect(report.scenarioSeconds == 10 * 60)
    }

    @Test
    func anInterruptionBeforeTheRunStopsItOnceBuilt() async throws {
        let interruption = RunInterruption()
        interruption.interrupt(.signal(15))
        interruption.interrupt(.signal(2))  // only the first counts
        var runner = try ScenarioRunner(scenario: Scenario(json: Data(Self.scenario.utf8)))
        runner.interruption = interruption
        let report = try await SimulationRuntime.withSimulation(seed: 1) { try await runner.run(on: $0) }
        #expect(report.interrupted && report.scenarioSeconds < 10 * 60)
        #expect(interruption.reason == .signal(15))
    }

    @Test
    func aFailedWriteIsHeardOnceAndLaterLinesAreNotKeptInMemory() throws {
        let failures = LockedBox<[Int32]>([])
        let writer = try EventLogWriter<ZegoEvent>(path: "/dev/full") { number in
            failures.withLock { $0.append(number) }
        }
        let event = ZegoEvent.roomTokenWillExpire(roomID: "room-with-a-long-name", remainingSeconds: 30)
        for sequence in 0..<5_000 {
            writer.record(Stamped(time: .zero, sequence: UInt64(sequence), event: event), from: "A")
        }
        #expect(failures.withLock { $0 } == [ENOSPC])
        #expect(writer.lineCount < 5_000, "lines after the failure are dropped, not buffered")
        #expect(throws: RoomLinkError.ioFailure) { try writer.close() }
    }
}
