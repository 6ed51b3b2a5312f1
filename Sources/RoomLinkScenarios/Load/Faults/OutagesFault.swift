/// A share of the clients lose their network from `at`, spread over `over`, each for its own drawn length
/// (`--outages SHARE@AT:LENGTH[/OVER]`).
public struct OutagesFault: LoadFault, Equatable {
    public static let name = "outages"
    public static let form = "SHARE@AT:LENGTH[/OVER], e.g. 0.1@5m:10s..2m/30s (LENGTH 30s, 10s..2m or ~30s)"

    public var fraction: Double
    public var at: Duration
    public var length: OutageLength
    public var over: Duration

    public init(fraction: Double, at: Duration, length: OutageLength, over: Duration) {
        self.fraction = fraction
        self.at = at
        self.length = length
        self.over = over
    }

    public init(spec: String, field: String, run: LoadPlan.Span) throws(RoomLinkError) {
        let (head, over) = try FaultSpec.splitOver(spec, field: field, form: Self.form)
        let (share, at, length) = try FaultSpec.shareAtLength(head, field: field, form: Self.form)
        self.init(fraction: share, at: at, length: length, over: over)
    }

    public var description: String {
        "\(fraction)@\(at.roomLinkText):\(FaultSpec.text(length))/\(over.roomLinkText)"
    }

    public var window: (start: Duration, end: Duration?) { (at, at + over) }

    public var recoveryWindow: LoadReport.FaultWindow? {
        guard let longest = FaultSpec.longest(length) else { return nil }
        return LoadReport.FaultWindow(
            fault: "outages \(fraction)@\(at.roomLinkText)",
            startSeconds: at.seconds,
            endSeconds: (at + over + longest).seconds
        )
    }

    public func entries(slices: inout LoadPlan.Slices, plan: LoadPlan) -> [Scenario.Entry] {
        [.population(at, .networkDown, fraction: fraction, offset: slices.users(fraction), over: over, length: length)]
    }
}
