/// A ZEGO client's and server's timings (contract §2). Every value can be overridden from a scenario's `timings`.
///
/// the contract fixes the server's 90 s heartbeat timeout and the client's 20-minute retry timeout; the rest are
/// RoomLink's choices, documented in the README:
/// - The client sends a heartbeat every **30 s** and the server answers each one: the server's 90 s timeout is
///   three missed heartbeats, the usual ratio. A connection that closes is noticed at once; a silent one (a
///   blackhole) is declared lost at the first heartbeat at which nothing has been heard from the server for
///   **45 s** — the second unanswered heartbeat, 30–60 s after the silence began, before the server gives up on
///   the member (60–90 s after, counted from its last heartbeat).
/// - A login or reconnection request unanswered for **5 s** counts as failed, and the next one follows the retry
///   policy. A first login that has not succeeded **30 s** after `loginRoom` fails with 1002053.
public struct ZegoTimings: DialectTimings {
    /// The server's side.
    public var server: ServerTimings
    /// Time between two heartbeats of a logged-in client.
    public var heartbeatInterval: Duration
    /// Silence from the server after which a client declares its connection lost (checked at each heartbeat).
    public var blackholeDetection: Duration
    /// How long a login or reconnection request may go unanswered before it counts as failed.
    public var attemptTimeout: Duration
    /// How long a first login keeps trying before `loginFailed` (1002053).
    public var loginTimeout: Duration
    /// How long after the connection was lost a client stops retrying: `reconnectFailed` (1002053).
    public var retryTimeout: Duration

    public init(
        server: ServerTimings = .zego,
        heartbeatInterval: Duration = .seconds(30),
        blackholeDetection: Duration = .seconds(45),
        attemptTimeout: Duration = .seconds(5),
        loginTimeout: Duration = .seconds(30),
        retryTimeout: Duration = .seconds(20 * 60)
    ) {
        self.server = server
        self.heartbeatInterval = heartbeatInterval
        self.blackholeDetection = blackholeDetection
        self.attemptTimeout = attemptTimeout
        self.loginTimeout = loginTimeout
        self.retryTimeout = retryTimeout
    }

    /// The defaults.
    public static let `default` = ZegoTimings()

    public var engine: EngineTimings {
        EngineTimings(
            server: server,
            heartbeatInterval: heartbeatInterval,
            silenceTimeout: blackholeDetection,
            attemptTimeout: attemptTimeout,
            loginTimeout: loginTimeout,
            retryTimeout: retryTimeout
        )
    }

    public static var settings: [String: any WritableKeyPath<ZegoTimings, Duration> & Sendable] {
        [
            "loginProcessing": \.server.loginProcessing, "userUpdateDelay": \.server.userUpdateDelay,
            "serverHeartbeatTimeout": \.server.heartbeatTimeout, "tokenRenewalGrace": \.server.tokenRenewalGrace,
            "heartbeatInterval": \.heartbeatInterval, "blackholeDetection": \.blackholeDetection,
            "attemptTimeout": \.attemptTimeout, "loginTimeout": \.loginTimeout, "retryTimeout": \.retryTimeout,
        ]
    }
}

/// The options of one `loginRoom` (ZEGO's `ZegoRoomConfig` plus the token).
public struct ZegoRoomConfig: Sendable, Hashable {
    /// The token the server checks; `nil` when it checks none.
    public var token: String?
    /// Whether to receive `onRoomUserUpdate` for peers joining and leaving.
    public var isUserStatusNotify: Bool
    /// The room's member cap, set by the first user who logs in (0 or `nil`: no cap).
    public var maxMemberCount: Int?

    public init(token: String? = nil, isUserStatusNotify: Bool = false, maxMemberCount: Int? = nil) {
        self.token = token
        self.isUserStatusNotify = isUserStatusNotify
        self.maxMemberCount = maxMemberCount
    }

    /// The options of a login that asked for `options`.
    init(_ options: JoinOptions) {
        self.init(
            token: options.token,
            isUserStatusNotify: options.notifiesPeers,
            maxMemberCount: options.maxMemberCount
        )
    }

    /// The engine's join options for this config.
    var joinOptions: JoinOptions {
        JoinOptions(token: token, notifiesPeers: isUserStatusNotify, maxMemberCount: maxMemberCount)
    }
}
