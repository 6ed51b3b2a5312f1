/// A share of the clients' tokens expire from `at`, spread over `over`; they are kicked after the renewal grace
/// (`--token-wave SHARE@AT[/OVER]`).
public struct TokenWaveFault: SpreadFault, Equatable {
    public static let name = "tokenWave"
    public static let form = "SHARE@AT[/OVER], e.g. 0.3@15m/1m"
    public static let action = Scenario.Action.expireToken

    public var fraction: Double
    public var at: Duration
    public var over: Duration

    public init(fraction: Double, at: Duration, over: Duration) {
        self.fraction = fraction
        self.at = at
        self.over = over
    }
}
