import Foundation
import RoomLink
import RoomLinkTestSupport
import Testing

/// A few cells of the capacity model's map (docs/server-capacity.md, "The map"), at a tenth of its scale: the node
/// serves 250 logins in the fault's 10 s instead of 2,500, so counts are a tenth and times the same.
@Suite(.hangLimit(minutes: 10))
struct CapacitySweepTests {
    static let sweep = CapacitySweep(unit: 250)

    @Test(.enabled(if: !Sanitizers.threadSanitizerIsOn, "one thread: nothing for ThreadSanitizer"))
    func pinnedCellsOfTheStorm() async throws {
        // Four times the capacity, no protection: the queue holds logins nobody waits for, whatever the jitter.
        let unprotected = try await Self.sweep.run(fault: .storm, ratio: 4, policy: "no jitter", protection: .none)
        #expect(unprotected.clients == 1_000)
        #expect(unprotected.sustainedOverload && !unprotected.recovered)
        #expect(unprotected.secondsTo99PercentBack == nil)
        #expect(unprotected.wasted > unprotected.goodput)
        // Shedding what cannot be answered in time brings it back; full jitter sooner and with fewer calls.
        let none = try await Self.sweep.run(fault: .storm, ratio: 4, policy: "no jitter", protection: .shedExpired)
        let full = try await Self.sweep.run(fault: .storm, ratio: 4, policy: "full jitter", protection: .shedExpired)
        #expect(none.recovered && full.recovered)
        #expect(full.calls < none.calls)
        let back = try #require(full.secondsTo99PercentBack)
        #expect(back < 60 && back < none.secondsTo99PercentBack ?? .infinity)
        #expect(full.wasted * 100 < full.goodput, "shedding wastes next to nothing")
        let markdown = CapacitySweep.markdown([unprotected, none, full])
        #expect(markdown.contains("| no jitter, none | ✗ never"))
        #expect(markdown.contains("| full jitter, shed-expired | \(String(format: "%.0f s", back)), "))
        let svg = CapacitySweep.svg([unprotected, none, full], title: "pinned")
        #expect(svg.hasPrefix("<svg") && svg.contains("#fad2cf") && svg.contains("#ceead6"))
    }

    @Test(.enabled(if: !Sanitizers.threadSanitizerIsOn, "one thread: nothing for ThreadSanitizer"))
    func aPartitionAtCapacityRecoversBehindAdmissionControl() async throws {
        let cell = try await Self.sweep.run(fault: .partition, ratio: 1, policy: "full jitter", protection: .admission)
        #expect(cell.clients == 250 && cell.recovered && !cell.sustainedOverload)
        #expect(cell.secondsTo99PercentBack != nil)
    }

    @Test
    func anUnknownPolicyIsNamed() async {
        await #expect(throws: RoomLinkError.self) {
            try await Self.sweep.run(fault: .storm, ratio: 1, policy: "jitterbug", protection: .none)
        }
    }
}
