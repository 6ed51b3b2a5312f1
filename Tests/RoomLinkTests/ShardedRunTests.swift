import Foundation
import RoomLink
import RoomLinkRuntime
import RoomLinkScenarios
import RoomLinkTestSupport
import Testing

/// A population split over generator processes (`roomlink load --shard I/N`): the slices are disjoint and make up the
/// population, and their reports merge into exactly the report of one run over them all.
@Suite(.hangLimit(minutes: 10))
struct ShardedRunTests {
    static func plan() throws -> Scenario {
        // Small enough to run many times under ThreadSanitizer; every fault still touches several rooms.
        var plan = LoadPlan(clients: 300, rooms: 10, duration: .seconds(180))
        plan.loginOver = .seconds(10)
        plan.notify = true
        plan.faults = [
            try StormFault("0.5@40s:30s", field: "--storm"),
            try OutagesFault("0.1@80s:10s..30s", field: "--outages"),
            try PartitionFault("0.25@130s:20s", field: "--partition"),
        ]
        return try plan.scenario()
    }

    static func run(
        _ scenario: Scenario,
        slice: RunSlice? = nil,
        shards: Int = 1
    ) async throws -> (events: RoomLinkScenarios.EventCollector, report: RunReport) {
        var runner = try ScenarioRunner(scenario: scenario)
        runner.collectsLoadStatistics = true
        runner.slice = slice
        runner.shards = shards
        let collector = RoomLinkScenarios.EventCollector()
        let report = try await SimulationRuntime.withSimulation(seed: scenario.seed) { simulation in
            try await runner.run(on: simulation, events: shards > 1 ? nil : collector)
        }
        return (collector, report)
    }

    @Test func theSlicesOfAPopulationAreDisjointAndMakeItUp() async throws {
        let scenario = try Self.plan()
        let whole = try await Self.run(scenario)
        var users: [Set<String>] = []
        var events = 0
        for index in 0..<3 {
            let part = try await Self.run(scenario, slice: RunSlice(index: index, count: 3))
            users.append(Set(part.events.all.map(\.user)))
            events += part.report.events
            #expect(part.report.slice == RunSlice(index: index, count: 3))
            #expect(part.report.violations == 0)
        }
        #expect(users[0].isDisjoint(with: users[1]) && users[1].isDisjoint(with: users[2]))
        #expect(users[0].union(users[1]).union(users[2]) == Set(whole.events.all.map(\.user)))
        #expect(events == whole.report.events)
        // Each user's events in a slice are the whole run's (rooms never talk across slices).
        let sliceEvents = try await Self.run(scenario, slice: RunSlice(index: 1, count: 3)).events.all
        let inSlice = Set(sliceEvents.map(\.user))
        #expect(sliceEvents == whole.events.all.filter { inSlice.contains($0.user) })
    }

    /// Merging the slices' reports — after a trip through JSON, as between processes — gives the counts, series and
    /// percentiles of one process running the same slices (in-process shards).
    @Test func mergedReportsAreExact() async throws {
        let scenario = try Self.plan()
        let oneProcess = try await Self.run(scenario, shards: 2).report
        var parts: [RunReport] = []
        for index in 0..<2 {
            let report = try await Self.run(scenario, slice: RunSlice(index: index, count: 2)).report
            parts.append(try JSONDecoder().decode(RunReport.self, from: try JSONEncoder().encode(report)))
        }
        let merged = try RunReport.merged(parts)
        #expect(merged.clients == oneProcess.clients)
        #expect(merged.events == oneProcess.events)
        #expect(merged.eventsByType == oneProcess.eventsByType)
        #expect(merged.eventsByReason == oneProcess.eventsByReason)
        #expect(merged.messages == oneProcess.messages)
        #expect(merged.load == oneProcess.load)
        #expect((merged.load?.reconnections ?? 0) > 100, "the storm's reconnections are in it")
        #expect(merged.parts == 2)
        // Merging in another grouping changes nothing.
        #expect(try RunReport.merged([parts[1], parts[0]]).load == merged.load)
        // The generators kept up after the fill only if every one did; a report that does not say leaves it unsaid.
        func keptUpAfterFill(_ verdicts: Bool?...) throws -> Bool? {
            var reports = parts
            for index in reports.indices { reports[index].keptUpAfterFill = verdicts[index] }
            return try RunReport.merged(reports).keptUpAfterFill
        }
        #expect(try keptUpAfterFill(true, true) == true)
        #expect(try keptUpAfterFill(true, false) == false)
        #expect(try keptUpAfterFill(nil, true) == true)
        #expect(try keptUpAfterFill(nil, nil) == nil)
    }

    @Test func reportsOfDifferentRunsDoNotMerge() async throws {
        let scenario = try Self.plan()
        let part = try await Self.run(scenario, slice: RunSlice(index: 0, count: 2)).report
        var other = part
        other.seed += 1
        #expect(throws: RoomLinkError.self) { try RunReport.merged([part, other]) }
        #expect(throws: RoomLinkError.self) { try RunReport.merged([part, part]) }  // the same slice twice
        #expect(throws: RoomLinkError.self) { try RunReport.merged([]) }
        #expect(throws: RoomLinkError.self) { try RunSlice(parsing: "2/2", field: "--shard") }
        #expect(throws: RoomLinkError.self) { try RunSlice(parsing: "1", field: "--shard") }
    }
}
