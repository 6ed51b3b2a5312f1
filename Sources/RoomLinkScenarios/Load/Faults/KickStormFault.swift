/// A share of the clients are kicked out by the admin from `at`, spread over `over` (`--kick-storm SHARE@AT[/OVER]`).
public struct KickStormFault: SpreadFault, Equatable {
    public static let name = "kickStorm"
    public static let form = "SHARE@AT[/OVER], e.g. 0.2@12m/10s"
    /// Each client out of its own room.
    public static let action = Scenario.Action.kick(room: nil)

    public var fraction: Double
    public var at: Duration
    public var over: Duration

    public init(fraction: Double, at: Duration, over: Duration) {
        self.fraction = fraction
        self.at = at
        self.over = over
    }
}
