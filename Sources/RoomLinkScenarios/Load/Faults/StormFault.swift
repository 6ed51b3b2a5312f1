/// The thundering herd: a share of all clients lose their network at one instant, for `length` (`--storm
/// SHARE@AT:LENGTH`).
public struct StormFault: LoadFault, Equatable {
    public static let name = "storm"
    public static let form = "SHARE@AT:LENGTH, e.g. 0.5@10m:60s"

    public var fraction: Double
    public var at: Duration
    public var length: Duration

    public init(fraction: Double, at: Duration, length: Duration) {
        self.fraction = fraction
        self.at = at
        self.length = length
    }

    public init(spec: String, field: String, run: LoadPlan.Span) throws(RoomLinkError) {
        let (share, rest) = try FaultSpec.splitShare(spec, field: field, form: Self.form)
        let parts = rest.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2 else { throw .invalidArgument(field, Self.form, got: spec) }
        self.init(
            fraction: share,
            at: try FaultSpec.duration(parts[0], field: field, form: Self.form),
            length: try FaultSpec.duration(parts[1], field: field, form: Self.form)
        )
    }

    public var description: String { "\(fraction)@\(at.roomLinkText):\(length.roomLinkText)" }

    public var window: (start: Duration, end: Duration?) { (at, nil) }

    public var recoveryWindow: LoadReport.FaultWindow? {
        LoadReport.FaultWindow(
            fault: "storm \(description)",
            startSeconds: at.seconds,
            endSeconds: (at + length).seconds
        )
    }

    public func entries(slices: inout LoadPlan.Slices, plan: LoadPlan) -> [Scenario.Entry] {
        [.population(at, .networkDown, fraction: fraction, offset: slices.users(fraction), length: .fixed(length))]
    }
}
