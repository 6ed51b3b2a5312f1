/// How a room server paces itself. Each dialect has its defaults (``zego``); a scenario's `timings` override them.
public struct ServerTimings: Sendable, Hashable {
    /// How long the server takes to process a login before it answers. With the default 50 ms network latency a
    /// ZEGO login completes ≈ 120 ms after `loginRoom` (50 + 20 + 50).
    public var loginProcessing: Duration
    /// How long after registering a join or a leave the server tells the room's other members.
    public var userUpdateDelay: Duration
    /// How long the server keeps a member it has not heard from (no heartbeat, or since its connection closed).
    public var heartbeatTimeout: Duration
    /// How long a member whose token expired has to renew it before it is kicked out.
    public var tokenRenewalGrace: Duration

    public init(
        loginProcessing: Duration,
        userUpdateDelay: Duration,
        heartbeatTimeout: Duration,
        tokenRenewalGrace: Duration
    ) {
        self.loginProcessing = loginProcessing
        self.userUpdateDelay = userUpdateDelay
        self.heartbeatTimeout = heartbeatTimeout
        self.tokenRenewalGrace = tokenRenewalGrace
    }

    /// ZEGO's server (SPEC §2): peers hear of a change ≈ 100 ms after the server registers it, and a silent member
    /// is dropped after 90 s. The 30 s token grace mirrors ZEGO's `onRoomTokenWillExpire`, sent 30 s before expiry.
    public static let zego = ServerTimings(
        loginProcessing: .milliseconds(20),
        userUpdateDelay: .milliseconds(100),
        heartbeatTimeout: .seconds(90),
        tokenRenewalGrace: .seconds(30)
    )
}
