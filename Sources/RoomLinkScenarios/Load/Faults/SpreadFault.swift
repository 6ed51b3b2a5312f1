/// A fault that strikes a share of the clients with one action from `at`, spread over `over` (`SHARE@AT[/OVER]`):
/// what a kick storm and a token wave have in common. A kind supplies its name, its form and its action.
public protocol SpreadFault: LoadFault {
    /// What each struck client suffers.
    static var action: Scenario.Action { get }
    var fraction: Double { get }
    var at: Duration { get }
    var over: Duration { get }
    init(fraction: Double, at: Duration, over: Duration)
}

extension SpreadFault {
    public init(spec: String, field: String, run: LoadPlan.Span) throws(RoomLinkError) {
        let (share, at, over) = try FaultSpec.shareAtOver(spec, field: field, form: Self.form)
        self.init(fraction: share, at: at, over: over)
    }

    public var description: String { "\(fraction)@\(at.roomLinkText)/\(over.roomLinkText)" }

    public var window: (start: Duration, end: Duration?) { (at, at + over) }

    public func entries(slices: inout LoadPlan.Slices, plan: LoadPlan) -> [Scenario.Entry] {
        [.population(at, Self.action, fraction: fraction, offset: slices.users(fraction), over: over)]
    }
}
