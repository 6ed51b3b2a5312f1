internal import Foundation

/// The capacity model across its whole range (docs/server-capacity.md, "The map"): offered load from half the node's
/// capacity to eight times it, four retry policies, four protections, for a storm (ZEGO) and a partition (Agora).
/// Each cell is one virtual-time run; `roomlink-bench sweep` plays them all and draws the map, and a test pins a few.
///
/// One node with one worker serves `unit` logins in the fault's 10 s (at `unit` = 2,500, 4 ms a login: 250 a
/// second); a cell at `ratio` brings `ratio × unit` clients back at once. Scaling `unit` scales clients and capacity
/// together, and leaves every cell's shape alone (its counts scale, its times do not).
public struct CapacitySweep: Sendable {
    /// The fault a sweep's cells recover from.
    public enum Fault: String, Sendable, CaseIterable, Codable {
        /// Every ZEGO client loses its network for 10 s, and all come back at once.
        case storm
        /// Every Agora room is cut off from its clients for 10 s: only silence tells them.
        case partition
    }

    /// What protects the node.
    public enum Protection: String, Sendable, CaseIterable, Codable {
        case none
        /// `--shed-expired`: logins that cannot be answered in time are dropped unserved.
        case shedExpired = "shed-expired"
        /// `--admission`: a token bucket at 80 % of the node's capacity.
        case admission
        /// `--max-queue 4s`: a login that would wait longer than 4 s is answered busy.
        case maxQueue = "max-queue"
    }

    /// The retry policies: exponential backoff from 1 s, capped at 30 s, four ways.
    public static let policies: [(name: String, retry: String)] = [
        ("no jitter", #"{ "strategy": "exponential", "base": "1s", "cap": "30s", "jitter": "none" }"#),
        ("full jitter", "fullJitter:1s:30s"), ("equal jitter", "equalJitter:1s:30s"),
        ("decorrelated jitter", "decorrelatedJitter:1s:30s"),
    ]

    /// The ratios of offered load to capacity.
    public static let ratios: [Double] = [0.5, 1, 2, 4, 8]

    /// Clients at ratio 1: what the node serves in the fault's 10 s.
    public var unit: Int

    public init(unit: Int = 2_500) {
        self.unit = unit
    }

    /// One cell: where it is in the map, and what its run measured.
    public struct Cell: Sendable, Codable, Equatable {
        public var fault: Fault
        public var ratio: Double
        public var policy: String
        public var protection: Protection
        public var clients: Int
        /// Reconnection attempts after the first logins.
        public var calls: Int
        /// Completed logins that did not leave a client in its room, and those that did (goodput), and shed ones.
        public var wasted: Int
        public var goodput: Int
        public var shed: Int
        public var refused: Int
        /// From the peak of reconnecting clients until 99 % of it was back; `nil`: never.
        public var secondsTo99PercentBack: Double?
        /// Whether the system recovered after the fault (the report's verdict), and whether it was called a
        /// sustained overload.
        public var recovered: Bool
        public var sustainedOverload: Bool
    }

    /// The plan of the cell at `ratio`, `retry` (a `--retry` text), `protection` and `fault`.
    public func plan(
        fault: Fault,
        ratio: Double,
        retry: String,
        protection: Protection
    ) throws(RoomLinkError)
        -> LoadPlan
    {
        let clients = max(1, Int((ratio * Double(unit)).rounded()))
        // The first logins at no more than half the node's capacity (at least a minute): the map is about the fault,
        // not about a login wave that would itself overload the node and fail first joins before it. The fault comes
        // 30 s after them, and the run goes on 7 minutes after it.
        let loginSeconds = max(60, 2 * clients * 10 / max(1, unit))
        let faultAt = Duration.seconds(loginSeconds + 30)
        var plan = LoadPlan(clients: clients, rooms: max(1, clients / 100), duration: faultAt + .seconds(7 * 60))
        plan.loginOver = .seconds(loginSeconds)
        plan.retryJSON = try LoadPlan.retryJSON(retry)
        let login = Duration.nanoseconds(10_000_000_000 / Int64(max(1, unit)))
        var policy = ServerPolicy(capacity: ServerCapacity(workers: 1, login: login))
        switch protection {
        case .none: break
        case .shedExpired: policy.shedExpired = true
        case .admission:
            let rate = Double(unit) / 10 * 0.8
            policy.admission = AdmissionPolicy(rate: rate, burst: max(1, Int(rate)))
        case .maxQueue: policy.maxQueue = .seconds(4)
        }
        plan.server = policy
        switch fault {
        case .storm:
            plan.dialect = .zego
            plan.faults = [StormFault(fraction: 1, at: faultAt, length: .seconds(10))]
        case .partition:
            plan.dialect = .agora
            plan.faults = [PartitionFault(fraction: 1, at: faultAt, length: .fixed(.seconds(10)))]
        }
        return plan
    }

    /// The cell a run of ``plan(fault:ratio:retry:protection:)`` reported.
    public static func cell(
        _ report: RunReport,
        fault: Fault,
        ratio: Double,
        policy: String,
        protection: Protection
    ) -> Cell? {
        guard let load = report.load, let servers = report.servers else { return nil }
        return Cell(
            fault: fault,
            ratio: ratio,
            policy: policy,
            protection: protection,
            clients: report.clients,
            calls: load.timeSeries.reduce(0) { $0 + $1.attempts },
            wasted: servers.total.wastedLogins,
            goodput: servers.total.goodputLogins ?? 0,
            shed: servers.total.shedLogins,
            refused: servers.total.refusedLogins,
            secondsTo99PercentBack: load.secondsUntil99PercentBack,
            recovered: servers.recovered ?? false,
            sustainedOverload: servers.sustainedOverload
        )
    }

    /// Plays one cell in virtual time (one simulation).
    public func run(fault: Fault, ratio: Double, policy: String, protection: Protection) async throws -> Cell {
        guard let retry = Self.policies.first(where: { $0.name == policy })?.retry else {
            throw RoomLinkError.invalidArgument("policy", "one of the sweep's policies", got: policy)
        }
        let plan = try plan(fault: fault, ratio: ratio, retry: retry, protection: protection)
        var runner = try ScenarioRunner(scenario: try plan.scenario())
        runner.collectsLoadStatistics = true
        runner.shards = 1
        let report = try await SimulationRuntime.withSimulation(seed: plan.seed) { try await runner.run(on: $0) }
        guard let cell = Self.cell(report, fault: fault, ratio: ratio, policy: policy, protection: protection) else {
            throw RoomLinkError(code: .ioFailure, message: "the sweep's run reported no load or servers")
        }
        return cell
    }

    // MARK: - Saying it

    /// One Markdown table per fault: a row per policy and protection, a column per ratio, each cell the time to
    /// 99 % back (or ✗) and the calls made.
    public static func markdown(_ cells: [Cell]) -> String {
        var text = ""
        for fault in Fault.allCases {
            let mine = cells.filter { $0.fault == fault }
            guard !mine.isEmpty else { continue }
            let ratios = Array(Set(mine.map(\.ratio))).sorted()
            text += "\n| \(fault.rawValue): policy, protection | "
            text += ratios.map { "\(Self.ratioText($0)) capacity" }.joined(separator: " | ") + " |\n"
            text += "|---|" + ratios.map { _ in "---" }.joined(separator: "|") + "|\n"
            for protection in Protection.allCases {
                for (policy, _) in policies {
                    let row = ratios.map { ratio in
                        mine.first { $0.ratio == ratio && $0.policy == policy && $0.protection == protection }
                    }
                    guard row.contains(where: { $0 != nil }) else { continue }
                    text += "| \(policy), \(protection.rawValue) | "
                    text += row.map { $0.map(Self.cellText) ?? "" }.joined(separator: " | ") + " |\n"
                }
            }
        }
        return text
    }

    /// A cell in a few characters: back in how long, or never, and the calls.
    static func cellText(_ cell: Cell) -> String {
        let back = cell.secondsTo99PercentBack.map { String(format: "%.0f s", $0) } ?? "✗ never"
        return "\(back), \(Self.count(cell.calls)) calls\(cell.sustainedOverload ? " (overload)" : "")"
    }

    static func ratioText(_ ratio: Double) -> String {
        ratio == ratio.rounded() ? "\(Int(ratio))×" : String(format: "%.1f×", ratio)
    }

    static func count(_ value: Int) -> String {
        value >= 10_000 ? String(format: "%.0fk", Double(value) / 1000) : "\(value)"
    }

    /// The map as SVG: per fault, a grid of policy × protection by ratio, each cell coloured by how soon 99 % of the
    /// clients were back (green: within a minute; amber: later; red: never), with the time and the calls written in.
    public static func svg(_ cells: [Cell], title: String) -> String {
        let faults = Fault.allCases.filter { fault in cells.contains { $0.fault == fault } }
        let ratios = Array(Set(cells.map(\.ratio))).sorted()
        let rows = Protection.allCases.flatMap { protection in policies.map { (protection, $0.name) } }
        let (left, top, cellWidth, cellHeight) = (250.0, 70.0, 120.0, 34.0)
        let gridHeight = Double(rows.count) * cellHeight + 40
        let width = Int(left + Double(ratios.count) * cellWidth + 20)
        let height = Int(top + Double(faults.count) * (gridHeight + 30) + 40)
        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(width)" height="\(height)" viewBox="0 0 \(width) \(height)" \
            font-family="sans-serif" font-size="11">
            <rect width="100%" height="100%" fill="white"/>
            <text x="10" y="24" font-size="15">\(Plot.escape(title))</text>
            <text x="10" y="44" fill="#5f6368">each cell: time from the peak until 99 % were back (✗: never) and the calls made; green ≤ 60 s, amber later, red never</text>

            """
        for (index, fault) in faults.enumerated() {
            let originY = top + Double(index) * (gridHeight + 30)
            out +=
                "<text x=\"10\" y=\"\(originY + 14)\" font-size=\"13\">\(fault.rawValue) — offered load / capacity →</text>\n"
            for (column, ratio) in ratios.enumerated() {
                let x = left + Double(column) * cellWidth + cellWidth / 2
                out += "<text x=\"\(x)\" y=\"\(originY + 32)\" text-anchor=\"middle\">\(ratioText(ratio))</text>\n"
            }
            for (rowIndex, (protection, policy)) in rows.enumerated() {
                let y = originY + 40 + Double(rowIndex) * cellHeight
                out += "<text x=\"\(left - 8)\" y=\"\(y + cellHeight / 2 + 4)\" text-anchor=\"end\">"
                out += "\(Plot.escape(policy)), \(protection.rawValue)</text>\n"
                for (column, ratio) in ratios.enumerated() {
                    let x = left + Double(column) * cellWidth
                    guard
                        let cell = cells.first(where: {
                            $0.fault == fault && $0.ratio == ratio && $0.policy == policy && $0.protection == protection
                        })
                    else { continue }
                    let color =
                        cell.secondsTo99PercentBack.map { $0 <= 60 ? "#ceead6" : "#feefc3" } ?? "#fad2cf"
                    out +=
                        "<rect x=\"\(x + 1)\" y=\"\(y + 1)\" width=\"\(cellWidth - 2)\" height=\"\(cellHeight - 2)\" "
                    out += "fill=\"\(color)\"/>\n"
                    let back = cell.secondsTo99PercentBack.map { String(format: "%.0f s", $0) } ?? "✗"
                    out += "<text x=\"\(x + cellWidth / 2)\" y=\"\(y + 15)\" text-anchor=\"middle\">\(back)</text>\n"
                    out += "<text x=\"\(x + cellWidth / 2)\" y=\"\(y + 28)\" text-anchor=\"middle\" fill=\"#5f6368\">"
                    out += "\(count(cell.calls)) calls</text>\n"
                }
            }
        }
        out += "</svg>\n"
        return out
    }
}
