internal import Foundation

extension RunComparison {
    /// The comparison said for a person (what `roomlink run --compare-with-virtual` prints): how many events matched,
    /// where the sequences differ, the offsets, and whether the runs agree within `tolerance`.
    public func summary(tolerance: Duration, earliness: Duration = .milliseconds(5)) -> String {
        func ms(_ value: Double) -> String { String(format: "%+.0f ms", value) }
        var text = "compare with virtual time: \(users) users, \(matched) events matched in order"
        if sameSequences {
            text += "; the same sequence for every user\n"
        } else {
            text += "; the sequences differ:\n"
            for mismatch in mismatches { text += "  \(mismatch)\n" }
        }
        text += "  real − virtual: median \(ms(medianOffsetMs)), earliest \(ms(minOffsetMs)), "
        text += "latest \(ms(maxLateMs)) (tolerance \(tolerance.roomLinkText), \(earliness.roomLinkText) early)"
        text += agrees(tolerance: tolerance, earliness: earliness) ? " — agrees\n" : " — does NOT agree\n"
        return text
    }
}

extension ScenarioRunner {
    /// The events of the scenario played in virtual time (at once, one simulation): what a run against a real
    /// server is compared with (``RunComparison/init(virtual:real:)``).
    ///
    /// - Throws: What ``run(on:events:progress:progressInterval:)`` throws.
    public func virtualEvents() async throws -> [LoggedEvent] {
        let collector = EventCollector()
        var virtual = self
        virtual.shards = 1
        virtual.interruption = nil
        _ = try await SimulationRuntime.withSimulation(seed: scenario.seed) {
            try await virtual.run(on: $0, events: collector)
        }
        return collector.all
    }
}
