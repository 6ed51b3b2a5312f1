import ArgumentParser
import Foundation
import RoomLink

/// `roomlink-bench sweep`: the capacity model's map (docs/server-capacity.md, "The map"), regenerated.
struct Sweep: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The capacity model across load, retry policy and protection: the map the docs are built from.",
        discussion: """
            Offered load from 0.5 to 8 times one node's capacity, four retry policies (no, full, equal, decorrelated \
            jitter), four protections (none, --shed-expired, --admission at 80 % of capacity, --max-queue 4s), for a \
            ZEGO storm and an Agora partition: 160 virtual-time runs (the first logins at half the capacity, the fault \
            30 s after them, 7 minutes after it), two at a time. Each cell: calls, \
            wasted work, goodput, time until 99 % were back, and whether the system recovered.
            """
    )

    @Option(help: "Clients at ratio 1: what the node serves in the fault's 10 s (2,500: 4 ms a login).")
    var unit = 2_500
    @Option(help: "Write the map (SVG) here.") var map: String?
    @Option(help: "Write the tables (Markdown) here.") var markdown: String?
    @Flag(help: "Print one JSON object per cell instead of text.") var json = false

    func run() async throws {
        let sweep = CapacitySweep(unit: unit)
        var plan: [(CapacitySweep.Fault, Double, String, CapacitySweep.Protection)] = []
        for fault in CapacitySweep.Fault.allCases {
            for protection in CapacitySweep.Protection.allCases {
                for (policy, _) in CapacitySweep.policies {
                    for ratio in CapacitySweep.ratios { plan.append((fault, ratio, policy, protection)) }
                }
            }
        }
        var cells: [CapacitySweep.Cell] = []
        // Two cells at a time: each is one simulation on one thread.
        var next = plan.makeIterator()
        try await withThrowingTaskGroup(of: CapacitySweep.Cell.self) { group in
            for _ in 0..<LibeventLoopGroup.coreCount {
                guard let (fault, ratio, policy, protection) = next.next() else { break }
                group.addTask {
                    try await sweep.run(fault: fault, ratio: ratio, policy: policy, protection: protection)
                }
            }
            while let cell = try await group.next() {
                cells.append(cell)
                if json {
                    printJSON(cell)
                } else {
                    print(
                        "\(cell.fault.rawValue) ×\(cell.ratio) \(cell.policy), \(cell.protection.rawValue): "
                            + "\(cell.clients) clients, \(cell.calls) calls, \(cell.wasted) wasted, \(cell.goodput) "
                            + "goodput, \(cell.shed) shed, \(cell.refused) refused; 99 % back "
                            + (cell.secondsTo99PercentBack.map { String(format: "%.1f s", $0) } ?? "never")
                            + (cell.recovered ? ", recovered" : ", did not recover")
                            + (cell.sustainedOverload ? ", SUSTAINED OVERLOAD" : "")
                    )
                }
                if let (fault, ratio, policy, protection) = next.next() {
                    group.addTask {
                        try await sweep.run(fault: fault, ratio: ratio, policy: policy, protection: protection)
                    }
                }
            }
        }
        if let map {
            let title =
                "The capacity model's map: one node, 1 worker (\(unit) logins in 10 s), every client back at once"
            try Data(CapacitySweep.svg(cells, title: title).utf8).write(to: URL(fileURLWithPath: map))
        }
        if let markdown { try Data(CapacitySweep.markdown(cells).utf8).write(to: URL(fileURLWithPath: markdown)) }
    }
}
