/// A LiveKit client's and server's timings (contract §4). Every value can be overridden from a scenario's `timings`.
///
/// the contract fixes ping every **5 s** with a **15 s** timeout, and the server removing a participant whose connection is
/// gone ≈ 15–20 s later (RoomLink: **20 s** after it was last heard). RoomLink's choices: a connect or
/// reconnect attempt unanswered for **10 s** fails; a first `connect` makes one attempt.
public struct LiveKitTimings: DialectTimings {
    /// The server's side (``ServerTimings/liveKit``): `participantRemovalAfter` is its `heartbeatTimeout`.
    public var server: ServerTimings
    /// Time between two pings of a connected client.
    public var pingInterval: Duration
    /// No pong for this long (checked at each ping) → the connection is lost.
    public var pingTimeout: Duration
    /// How long a connect or reconnect attempt may go unanswered before it counts as failed.
    public var attemptTimeout: Duration

    public init(
        server: ServerTimings = .liveKit,
        pingInterval: Duration = .seconds(5),
        pingTimeout: Duration = .seconds(15),
        attemptTimeout: Duration = .seconds(10)
    ) {
        self.server = server
        self.pingInterval = pingInterval
        self.pingTimeout = pingTimeout
        self.attemptTimeout = attemptTimeout
    }

    public static let `default` = LiveKitTimings()

    public static var settings: [String: any WritableKeyPath<LiveKitTimings, Duration> & Sendable] {
        [
            "joinProcessing": \.server.loginProcessing, "participantUpdateDelay": \.server.userUpdateDelay,
            "participantRemovalAfter": \.server.heartbeatTimeout, "pingInterval": \.pingInterval,
            "pingTimeout": \.pingTimeout, "attemptTimeout": \.attemptTimeout,
        ]
    }

    public var engine: EngineTimings {
        EngineTimings(
            server: server,
            heartbeatInterval: pingInterval,
            silenceTimeout: pingTimeout,
            attemptTimeout: attemptTimeout,
            loginTimeout: attemptTimeout,
            retryTimeout: nil
        )
    }
}
