/// The timings the connection engine runs on, whatever the dialect: each dialect's timings type
/// (``ZegoTimings``, ``AgoraTimings``, ``LiveKitTimings``) names them in its vendor's words and converts.
public struct EngineTimings: Sendable, Hashable {
    /// The server's side.
    public var server: ServerTimings
    /// Time between two heartbeats (pings) of a connected client; `nil` for a dialect whose media flows
    /// continuously and tells both sides at once when it stops (Agora).
    public var heartbeatInterval: Duration?
    /// Silence from the server after which a client declares its connection lost, checked at each heartbeat.
    public var silenceTimeout: Duration
    /// For a dialect without heartbeats: how long after its data stops (the link went down or silent) a client
    /// declares the connection lost. An outage shorter than this goes unnoticed.
    public var dataSilenceDetection: Duration?
    /// How long after the loss a still-reconnecting room reports ``RoomTransition/stillLost``; `nil`: never.
    public var lostNotice: Duration?
    /// How long a login or reconnection request may go unanswered before it counts as failed.
    public var attemptTimeout: Duration
    /// How long a first join keeps trying before it gives up.
    public var loginTimeout: Duration
    /// How long after the loss a reconnection episode gives up; `nil` when only the policy's attempts limit it.
    public var retryTimeout: Duration?

    public init(
        server: ServerTimings,
        heartbeatInterval: Duration?,
        silenceTimeout: Duration,
        dataSilenceDetection: Duration? = nil,
        lostNotice: Duration? = nil,
        attemptTimeout: Duration,
        loginTimeout: Duration,
        retryTimeout: Duration?
    ) {
        self.server = server
        self.heartbeatInterval = heartbeatInterval
        self.silenceTimeout = silenceTimeout
        self.dataSilenceDetection = dataSilenceDetection
        self.lostNotice = lostNotice
        self.attemptTimeout = attemptTimeout
        self.loginTimeout = loginTimeout
        self.retryTimeout = retryTimeout
    }
}

/// A dialect's timings: its defaults, a scenario's overrides by name, and the engine's view of them.
///
/// A conforming type writes each timing's scenario name once, in ``settings``; ``names`` and
/// ``init(overrides:)`` follow from it.
public protocol DialectTimings: Sendable, Hashable {
    /// The dialect's defaults.
    static var `default`: Self { get }
    /// Each timing a scenario's `timings` may set, by its name in the vendor's words, and where it goes.
    static var settings: [String: any WritableKeyPath<Self, Duration> & Sendable] { get }
    /// The same timings in the engine's terms.
    var engine: EngineTimings { get }
}

extension DialectTimings {
    /// The names a scenario's `timings` may give, for this dialect.
    public static var names: Set<String> { Set(settings.keys) }

    /// The defaults with a scenario's `timings` applied; names of other dialects are ignored (contract §7).
    public init(overrides: [String: Duration]) {
        self = .default
        let settings = Self.settings
        for (name, value) in overrides {
            guard let setting = settings[name] else { continue }  // another dialect's timing: accepted and ignored
            self[keyPath: setting] = value
        }
    }
}
