/// A share of the clients' tokens expire from `at`, spread over `over`; they are kicked after the renewal grace
/// (`--token-wave SHARE@AT[/OVER]`).
public struct TokenWaveFault: LoadFault, Equatable {
    public static let name = "tokenWave"
    public static let form = "SHARE@AT[/OVER], e.g. 0.3@15m/1m"

    public var fraction: Double
    public var at: Duration
    public var over: Duration

    public init(fraction: Double, at: Duration, over: Duration) {
        self.fraction = fraction
        self.at = at
        self.over = over
    }

    public init(spec: String, field: String, run: LoadPlan.Span) throws(RoomLinkError) {
        let (share, at, over) = try FaultSpec.shareAtOver(spec, field: field, form: Self.form)
        self.init(fraction: share, at: at, over: over)
    }

    public var description: String { "\(fraction)@\(at.roomLinkText)/\(over.roomLinkText)" }

    public var window: (start: Duration, end: Duration?) { (at, at + over) }

    public func entries(slices: inout LoadPlan.Slices, plan: LoadPlan) -> [Scenario.Entry] {
        [.population(at, .expireToken, fraction: fraction, offset: slices.users(fraction), over: over)]
    }
}
