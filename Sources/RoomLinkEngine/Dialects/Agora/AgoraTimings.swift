/// An Agora client's and server's timings (contract §3). Every value can be overridden from a scenario's `timings`.
///
/// the contract fixes the timeline: `interrupted` after **4 s** without data, `lost` **10 s** after that, peers see the user
/// `dropped` after **20 s** without its data, and the client gives up **20 min** after `interrupted`. Agora's media
/// flows continuously, so neither side waits for a heartbeat: both notice the moment data stops (RoomLink models
/// the stream by its edges — see the README). RoomLink's choices: an attempt unanswered for **5 s** fails, and a
/// first join keeps trying for the same 20 minutes before `failed/joinFailed`.
public struct AgoraTimings: DialectTimings {
    /// The server's side (``ServerTimings/agora``): `peerOfflineAfter` is its `heartbeatTimeout`.
    public var server: ServerTimings
    /// No data for this long → `reconnecting/interrupted`.
    public var interruptedAfter: Duration
    /// This long after `interrupted`, still reconnecting → `reconnecting/lost` and `connectionLost`.
    public var lostAfter: Duration
    /// How long a join or rejoin request may go unanswered before it counts as failed.
    public var attemptTimeout: Duration
    /// How long a first join keeps trying before `failed/joinFailed`.
    public var joinTimeout: Duration
    /// How long after `interrupted` the client stops retrying: `failed/joinFailed`.
    public var retryTimeout: Duration
    /// A keep-alive ping on the signalling connection, off by default (the media stream already tells both sides
    /// when data stops). When on, a ping the server answers with "unknown session" reports
    /// `reconnecting/keepAliveTimeout`, and `roomlink-bench dialects --same-work` gives every dialect the same pings.
    public var keepAliveInterval: Duration?
    /// With keep-alive pings: no answer for this long (checked at each ping) → the connection is lost.
    public var keepAliveTimeout: Duration

    public init(
        server: ServerTimings = .agora,
        interruptedAfter: Duration = .seconds(4),
        lostAfter: Duration = .seconds(10),
        attemptTimeout: Duration = .seconds(5),
        joinTimeout: Duration = .seconds(20 * 60),
        retryTimeout: Duration = .seconds(20 * 60),
        keepAliveInterval: Duration? = nil,
        keepAliveTimeout: Duration = .seconds(15)
    ) {
        self.server = server
        self.interruptedAfter = interruptedAfter
        self.lostAfter = lostAfter
        self.attemptTimeout = attemptTimeout
        self.joinTimeout = joinTimeout
        self.retryTimeout = retryTimeout
        self.keepAliveInterval = keepAliveInterval
        self.keepAliveTimeout = keepAliveTimeout
    }

    public static let `default` = AgoraTimings()

    public static var settings: [String: any WritableKeyPath<AgoraTimings, Duration> & Sendable] {
        [
            "joinProcessing": \.server.loginProcessing, "peerJoinDelay": \.server.userUpdateDelay,
            "peerOfflineAfter": \.server.heartbeatTimeout, "tokenRenewalGrace": \.server.tokenRenewalGrace,
            "interruptedAfter": \.interruptedAfter, "lostAfter": \.lostAfter, "attemptTimeout": \.attemptTimeout,
            "joinTimeout": \.joinTimeout, "retryTimeout": \.retryTimeout, "keepAliveInterval": \.keepAliveSetting,
            "keepAliveTimeout": \.keepAliveTimeout,
        ]
    }

    /// ``keepAliveInterval`` as a scenario sets it: a value turns the pings on.
    private var keepAliveSetting: Duration {
        get { keepAliveInterval ?? .zero }
        set { keepAliveInterval = newValue }
    }

    public var engine: EngineTimings {
        EngineTimings(
            server: server,
            heartbeatInterval: keepAliveInterval,
            silenceTimeout: keepAliveTimeout,
            dataSilenceDetection: interruptedAfter,
            lostNotice: lostAfter,
            attemptTimeout: attemptTimeout,
            loginTimeout: joinTimeout,
            retryTimeout: retryTimeout
        )
    }
}
