import Foundation
import RoomLink
import RoomLinkTestSupport
import Testing

/// The faults a load plan knows, each a type of its own in the registry, and the scenario a plan builds: the same
/// value as the file `--save-scenario` writes reads back to, so that `roomlink run` replays exactly what ran.
@Suite(.hangLimit(minutes: 10))
struct LoadFaultTests {
    /// One spec per registered kind.
    static let specs: [String: String] = [
        "outages": "0.1@50s:10s..30s/20s", "storm": "0.5@30s:10s", "partition": "0.25@80s:~20s",
        "flapping": "0.05:20s:0.3@20s..100s", "kickStorm": "0.1@70s/5s", "tokenWave": "0.05@90s/5s",
        "churn": "3:20s@65s..95s",
    ]

    @Test
    func everyRegisteredKindIsReadByNameAsItsOwnFlagReadsIt() throws {
        let run = LoadPlan.Span(start: .seconds(10), end: .seconds(120))
        #expect(Set(LoadPlan.faultKinds.map { $0.name }) == Set(Self.specs.keys))
        for kind in LoadPlan.faultKinds {
            let spec = try #require(Self.specs[kind.name])
            let byName = try LoadPlan.fault("\(kind.name)=\(spec)", run: run)
            let direct = try LoadPlan.read(kind, spec, field: kind.name, run: run)
            #expect(type(of: byName) == kind)
            #expect(byName.description == direct.description)
            #expect(byName.field == kind.name)
        }
    }

    @Test
    func anUnknownNameOrABadSpecIsNamedByTheField() {
        let run = LoadPlan.Span(start: .zero, end: .seconds(60))
        for text in ["nope=1", "storm", "=0.5@1s:1s", "storm=0.5@1s"] {
            do {
                _ = try LoadPlan.fault(text, field: "--fault", run: run)
                Issue.record("\(text) was read")
            } catch {
                #expect(error.field == "--fault", "\(text): \(error)")
            }
        }
    }

    /// Random plans of every kind: the scenario the plan builds is the one its saved file reads back to.
    @Test
    func aPlansScenarioIsTheOneItsSavedFileReadsBackTo() throws {
        var random = SeededRandom(seed: 42)
        for _ in 0..<200 {
            var plan = LoadPlan(
                clients: Int.random(in: 1...500, using: &random),
                rooms: 1,
                duration: .seconds(Int64.random(in: 120...600, using: &random))
            )
            plan.rooms = Int.random(in: 1...plan.clients, using: &random)
            plan.dialect = Scenario.Dialect.allCases.randomElement(using: &random)!
            plan.seed = UInt64.random(in: 0...1000, using: &random)
            plan.loginOver = .seconds(Int64.random(in: 1...60, using: &random))
            plan.notify = Bool.random(using: &random)
            plan.network = Scenario.Network(
                latency: .milliseconds(Int64.random(in: 0...200, using: &random)),
                jitter: .milliseconds(Int64.random(in: 0...50, using: &random)),
                loss: Double(Int.random(in: 0...10, using: &random)) / 100
            )
            if Bool.random(using: &random) { plan.timings["heartbeatInterval"] = .seconds(5) }
            if Bool.random(using: &random) {
                plan.retryJSON = #"{ "preset": "fullJitter", "base": "1s", "cap": "30s" }"#
            }
            for _ in 0..<Int.random(in: 0...5, using: &random) {
                let kind = LoadPlan.faultKinds.randomElement(using: &random)!
                plan.faults.append(try LoadPlan.read(kind, Self.specs[kind.name]!, field: kind.name, run: plan.span))
            }
            let built = try plan.scenario()
            let saved = try Scenario(json: Data(plan.scenarioJSON().utf8))
            #expect(built == saved)
        }
    }
}
