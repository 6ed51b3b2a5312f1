/// A share of the clients flap: their network is down for `duty` of every `period`, from `from` until `until`
/// (`--flapping SHARE:PERIOD:DUTY[@FROM..UNTIL]`).
public struct FlappingFault: LoadFault, Equatable {
    public static let name = "flapping"
    public static let form = "SHARE:PERIOD:DUTY[@FROM..UNTIL], e.g. 0.05:20s:0.3@2m..8m"

    public var fraction: Double
    public var period: Duration
    public var duty: Double
    public var from: Duration
    public var until: Duration

    public init(fraction: Double, period: Duration, duty: Double, from: Duration, until: Duration) {
        self.fraction = fraction
        self.period = period
        self.duty = duty
        self.from = from
        self.until = until
    }

    /// Without a window, the whole run.
    public init(spec: String, field: String, run: LoadPlan.Span) throws(RoomLinkError) {
        let pieces = spec.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let parts = pieces[0].split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let share = Double(parts[0]), share > 0, share <= 1, let duty = Double(parts[2]),
            duty > 0, duty < 1
        else { throw .invalidArgument(field, Self.form, got: spec) }
        let period = try FaultSpec.duration(parts[1], field: field, form: Self.form)
        guard period >= ScenarioLimits.minimumFlappingPeriod else {
            throw .invalidArgument(
                field,
                Self.form + " (PERIOD at least \(ScenarioLimits.minimumFlappingPeriod.roomLinkText))",
                got: spec
            )
        }
        let (from, until) =
            pieces.count == 2 ? try FaultSpec.window(pieces[1], field: field, form: Self.form) : (.zero, run.end)
        self.init(fraction: share, period: period, duty: duty, from: from, until: until)
    }

    public var description: String {
        "\(fraction):\(period.roomLinkText):\(duty)@\(from.roomLinkText)..\(until.roomLinkText)"
    }

    public var window: (start: Duration, end: Duration?) { (from, until) }

    /// One outage of the same slice every period.
    public func entries(slices: inout LoadPlan.Slices, plan: LoadPlan) -> [Scenario.Entry] {
        let start = slices.users(fraction)
        let down = Duration.nanoseconds(Int64(Double(period.nanosecondsClamped) * duty))
        var entries: [Scenario.Entry] = []
        var time = from
        while period > .zero, time < until {
            entries.append(.population(time, .networkDown, fraction: fraction, offset: start, length: .fixed(down)))
            time += period
        }
        return entries
    }
}
