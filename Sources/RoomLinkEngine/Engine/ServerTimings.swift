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
    /// Whether members' data flows continuously (Agora's media): the server hears a member all the time until its
    /// data stops (`RoomEndpoint.connectionClosed(userID:session:on:)`), and times it out from then, not from its
    /// last heartbeat.
    public var continuousData: Bool
    /// Whether a login with the user ID of a member from another session is seen by peers as that member leaving
    /// and joining again (LiveKit: a full reconnection is a new participant), rather than not at all.
    public var duplicateLoginVisible: Bool

    public init(
        loginProcessing: Duration,
        userUpdateDelay: Duration,
        heartbeatTimeout: Duration,
        tokenRenewalGrace: Duration,
        continuousData: Bool = false,
        duplicateLoginVisible: Bool = false
    ) {
        self.loginProcessing = loginProcessing
        self.userUpdateDelay = userUpdateDelay
        self.heartbeatTimeout = heartbeatTimeout
        self.tokenRenewalGrace = tokenRenewalGrace
        self.continuousData = continuousData
        self.duplicateLoginVisible = duplicateLoginVisible
    }

    /// ZEGO's server (contract §2): peers hear of a change ≈ 100 ms after the server registers it, and a silent member
    /// is dropped after 90 s. The 30 s token grace mirrors ZEGO's `onRoomTokenWillExpire`, sent 30 s before expiry.
    public static let zego = ServerTimings(
        loginProcessing: .milliseconds(20),
        userUpdateDelay: .milliseconds(100),
        heartbeatTimeout: .seconds(90),
        tokenRenewalGrace: .seconds(30)
    )

    /// Agora's server (contract §3): with the default 50 ms latency a join completes ≈ 200 ms after `joinChannel`
    /// (50 + 100 + 50) and peers see it ≈ 100 ms later; a member whose data stopped is dropped after 20 s.
    public static let agora = ServerTimings(
        loginProcessing: .milliseconds(100),
        userUpdateDelay: .milliseconds(100),
        heartbeatTimeout: .seconds(20),
        tokenRenewalGrace: .seconds(30),
        continuousData: true
    )

    /// LiveKit's server (contract §4): a participant whose connection is gone is removed 20 s after it was last heard —
    /// 15–20 s after a silent connection's last ping — and a full reconnection is a new participant.
    public static let liveKit = ServerTimings(
        loginProcessing: .milliseconds(20),
        userUpdateDelay: .milliseconds(20),
        heartbeatTimeout: .seconds(20),
        tokenRenewalGrace: .seconds(30),
        duplicateLoginVisible: true
    )
}
