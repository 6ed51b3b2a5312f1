/// A share of the clients are kicked out by the admin from `at`, spread over `over` (`--kick-storm SHARE@AT[/OVER]`).
public struct KickStormFault: LoadFault, Equatable {
    public static let name = "kickStorm"
    public static let form = "SHARE@AT[/OVER], e.g. 0.2@12m/10s"

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
        [.population(at, .kick(room: nil), fraction: fraction, offset: slices.users(fraction), over: over)]
    }
}
