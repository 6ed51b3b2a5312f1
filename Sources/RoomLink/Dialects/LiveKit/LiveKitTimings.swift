/// A LiveKit client's and server's timings (SPEC §4). Every value can be overridden from a scenario's `timings`.
///
/// SPEC fixes ping every **5 s** with a **15 s** timeout, and the server removing a participant whose connection is
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

    public static let names: Set<String> = [
        "joinProcessing", "participantUpdateDelay", "participantRemovalAfter", "pingInterval", "pingTimeout",
        "attemptTimeout",
    ]

    /// The defaults with a scenario's overrides applied (names as in ``Scenario/timingNames``).
    public init(overrides: [String: Duration]) {
        self.init()
        for (name, value) in overrides {
            switch name {
            case "joinProcessing": server.loginProcessing = value
            case "participantUpdateDelay": server.userUpdateDelay = value
            case "participantRemovalAfter": server.heartbeatTimeout = value
            case "pingInterval": pingInterval = value
            case "pingTimeout": pingTimeout = value
            case "attemptTimeout": attemptTimeout = value
            default: continue  // another dialect's timing: accepted and ignored (SPEC §7)
            }
        }
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
