/// `perSecond` clients log out every second from `from` until `until`, each logging back in `away` later
/// (`--churn RATE[:AWAY][@FROM..UNTIL]`).
public struct ChurnFault: LoadFault, Equatable {
    public static let name = "churn"
    public static let form = "RATE[:AWAY][@FROM..UNTIL], e.g. 50:20s@1m..20m"

    public var perSecond: Int
    public var away: Duration
    public var from: Duration
    public var until: Duration

    public init(perSecond: Int, away: Duration, from: Duration, until: Duration) {
        self.perSecond = perSecond
        self.away = away
        self.from = from
        self.until = until
    }

    /// AWAY defaults to 30 s; without a window, from the end of the login window to the end of the run.
    public init(spec: String, field: String, run: LoadPlan.Span) throws(RoomLinkError) {
        let pieces = spec.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let parts = pieces[0].split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard (1...2).contains(parts.count), let rate = Int(parts[0]), rate > 0 else {
            throw .invalidArgument(field, Self.form, got: spec)
        }
        let away = parts.count == 2 ? try FaultSpec.duration(parts[1], field: field, form: Self.form) : .seconds(30)
        let (from, until) =
            pieces.count == 2
            ? try FaultSpec.window(pieces[1], field: field, form: Self.form) : (run.start, run.end)
        self.init(perSecond: rate, away: away, from: from, until: until)
    }

    public var description: String {
        "\(perSecond):\(away.roomLinkText)@\(from.roomLinkText)..\(until.roomLinkText)"
    }

    public var window: (start: Duration, end: Duration?) { (from, until) }

    /// A second's leavers are their own slice of the shuffle, moving on by `perSecond` each second; it takes no slice
    /// from the other faults.
    public func entries(slices: inout LoadPlan.Slices, plan: LoadPlan) -> [Scenario.Entry] {
        let share = min(1, Double(perSecond) / Double(max(1, plan.clients)))
        var entries: [Scenario.Entry] = []
        var time = from
        var second = 0.0
        while share > 0, time < until {
            var start = (second * share).truncatingRemainder(dividingBy: 1)
            if start + share > 1 { start = 0 }
            let login = Scenario.Action.login(room: nil, token: nil)
            entries.append(.population(time, .logout(room: nil), fraction: share, offset: start, over: .seconds(1)))
            // Those whose time away outlasts the run stay logged out.
            if time + away < plan.duration {
                entries.append(.population(time + away, login, fraction: share, offset: start, over: .seconds(1)))
            }
            time += .seconds(1)
            second += 1
        }
        return entries
    }
}
