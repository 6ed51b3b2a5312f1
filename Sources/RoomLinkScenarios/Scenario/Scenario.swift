public import struct Foundation.Data

/// A scenario: who is in which room, what happens to their network and when, and how long to run (contract §7).
///
/// Read one with ``Scenario/init(json:)``; every field is checked, and the first one that is wrong is named in the
/// error together with what was expected, e.g. `timeline[3].at: expected a duration like "90s", got "soon"`.
public struct Scenario: Sendable, Equatable {
    /// The SDK vocabulary and timing a scenario speaks (the engine's `DialectName`).
    public typealias Dialect = DialectName
    /// How messages between clients and rooms travel (the engine's `NetworkConditions`).
    public typealias Network = NetworkConditions
    /// Whether a user may be in one room or several at once (the engine's `RoomMode`).
    public typealias RoomMode = RoomLinkEngine.RoomMode

    /// One user of the scenario: one SDK engine on one device.
    public struct User: Sendable, Equatable {
        /// The name the timeline uses.
        public var id: String
        /// The identity sent to the server; two users with one `userID` are one person on two devices.
        public var userID: String
        /// The token the user logs in with, unless a login action gives one.
        public var token: String?
        public var roomMode: RoomMode = .single
        /// Whether the user receives peers' joins and leaves (ZEGO `isUserStatusNotify`).
        public var userStatusNotify = false
        /// The room member cap asked for at login (ZEGO `maxMemberCount`).
        public var maxMemberCount: Int?
        /// The user's role in a live broadcast (Agora); an audience member is not seen by peers.
        public var role: AgoraClientRole?

        /// Creates a user whose server identity defaults to `id`.
        public init(
            id: String,
            userID: String? = nil,
            token: String? = nil,
            roomMode: RoomMode = .single,
            userStatusNotify: Bool = false,
            maxMemberCount: Int? = nil
        ) {
            self.id = id
            self.userID = userID ?? id
            self.token = token
            self.roomMode = roomMode
            self.userStatusNotify = userStatusNotify
            self.maxMemberCount = maxMemberCount
        }
    }

    /// Generated users: `clients` users spread evenly over `rooms` rooms.
    ///
    /// User `i` is named `u<i>` (its ID and user ID) and belongs to room `room-<i mod rooms>`: a population `login`
    /// without a `room` logs each user in to its own room.
    public struct Population: Sendable, Equatable {
        public var clients: Int
        public var rooms: Int
        /// Whether the generated users ask for user-status notification (ZEGO `isUserStatusNotify`).
        public var userStatusNotify: Bool

        public init(clients: Int, rooms: Int, userStatusNotify: Bool = false) {
            self.clients = clients
            self.rooms = rooms
            self.userStatusNotify = userStatusNotify
        }

        /// The name (and user ID) of population user `index`.
        public static func userName(_ index: Int) -> String { "u\(index)" }

        /// The room of population user `index`.
        public func room(ofUser index: Int) -> String { "room-\(index % rooms)" }
    }

    /// Which users — or, for `partition` and `heal`, which rooms — an entry acts on.
    public enum Target: Sendable, Equatable {
        /// One user, by ``User/id``.
        case user(String)
        /// Every user of the population (`"user": "*"`), or a seeded random `fraction` of them, spread evenly
        /// over the window `over` when given. The population is shuffled once per scenario; an entry takes the
        /// `fraction` of it that starts `offset` into it, so entries with the same offset strike the same users and
        /// consecutive offsets different ones (churn).
        case population(fraction: Double, over: Duration, offset: Double = 0)
        /// One room, by name (`"room": "r1"`).
        case room(String)
        /// The population's rooms (`"rooms": "*"`), or a seeded random `fraction` of them starting `offset` into
        /// their own shuffled order.
        case populationRooms(fraction: Double, offset: Double = 0)
    }

    /// What happens.
    public enum Action: Sendable, Equatable {
        /// Log in to `room`; a population entry without a room logs each user in to its own room.
        case login(room: String?, token: String?)
        case logout(room: String?)
        case switchRoom(from: String, to: String)
        /// The connection drops and the client knows at once.
        case networkDown
        case networkUp
        /// Messages are silently lost until `networkUp`; only missed heartbeats reveal it.
        case blackhole
        /// The business server kicks the user out of `room` (a population entry without one: each user's own room).
        case kick(room: String?)
        /// The server expires the user's token.
        case expireToken
        case renewToken(token: String)
        /// The device's network changes (a new IP address): its connections close and it reconnects at once.
        case networkChange
        /// A call only one vendor's SDK has (Agora's `setClientRole` and `setCloudProxy`): its dialect carries it
        /// out, others ignore it.
        case vendor(VendorCall)
        /// The server asks the user to reconnect in `room` (LiveKit: a full reconnection).
        case requestReconnect(room: String)
        /// The target rooms are cut off from their clients: messages both ways are lost until `heal`, and only
        /// silence reveals it (a server or data-centre partition).
        case partition
        /// The target rooms are reachable again.
        case heal
    }

    /// One line of the timeline.
    public struct Entry: Sendable, Equatable {
        public var at: Duration
        public var target: Target
        public var action: Action
        /// For `networkDown` and `blackhole`: each user's network comes back (`networkUp`) after this long, drawn
        /// per user; for `partition`, each room heals after this long, drawn per room (`"for"`).
        public var length: OutageLength?

        public init(at: Duration, target: Target, action: Action, length: OutageLength? = nil) {
            self.at = at
            self.target = target
            self.action = action
            self.length = length
        }
    }

    public var dialect: Dialect = .zego
    public var seed: UInt64 = 0
    public var network = Network()
    public var users: [User] = []
    public var population: Population?
    /// Tokens by user ID: when present, a login whose token it does not list fails with the dialect's token error,
    /// and a token renewal with such a token is refused (the expiry it answered stays due).
    public var auth: AuthTable?
    /// Whether the users' tokens carry their own expiry (a vendor's signed tokens, fetched or minted: `run|load
    /// --token-url`, `--app-id`): the server then warns of expiries no timeline entry made, and the oracle's `token`
    /// rule, which judges warnings by the timeline's `expireToken`s, does not apply. Not part of the scenario file.
    public var tokensExpireOnTheirOwn = false
    /// Overrides of the dialect's default timings, by name (see ``Scenario/timingNames``).
    public var timings: [String: Duration] = [:]
    /// Overrides the dialect's default retry policy.
    public var retry: RetryPolicy?
    /// The server's nodes, their capacity and admission control (`"server"`, contract §9); unlimited by default.
    public var server = ServerPolicy.unlimited
    /// The timeline, sorted by time; entries at the same time keep their order in the file.
    public var timeline: [Entry] = []
    /// When the scenario ends.
    public var end: Duration

    /// The timing names each dialect reads from `"timings"`. A name known to another dialect is accepted and
    /// ignored; a name no dialect knows is an error.
    public static var timingNames: [Dialect: Set<String>] {
        Dictionary(uniqueKeysWithValues: Dialect.allCases.map { ($0, $0.engine.timingNames) })
    }

    /// Every dialect's own calls (`RoomDialect/vendorCalls`): a scenario of any dialect may name them.
    public static var vendorCalls: [String: VendorCall.Signature] {
        Dialect.allCases.reduce(into: [:]) { calls, dialect in calls.merge(dialect.engine.vendorCalls) { $1 } }
    }

    /// Reads a scenario from JSON text.
    ///
    /// - Throws: `RoomLinkError.Code.invalidInput` naming the first field that is wrong (as a path such as
    ///   `users[1].roomMode`) and what was expected.
    public init(json data: Data) throws(RoomLinkError) {
        self = try ScenarioReader(root: JSONValue.parse(data)).read()
    }

    /// Creates an empty scenario that ends at `end`; fill in its fields, or read one with ``init(json:)``.
    public init(end: Duration) {
        self.end = end
    }
}

extension Scenario.Action {
    /// Whether the action is trouble, or the end of trouble: outages, partitions, kicks, token expiries, network
    /// changes and reconnect requests (not the app's own logins, logouts and settings). A capacity-modelled run's
    /// recovery is measured from the last of them (``ServerReport/lastFaultEndSeconds``).
    public var isFault: Bool {
        switch self {
        case .networkDown, .networkUp, .blackhole, .kick, .expireToken, .networkChange, .requestReconnect, .partition,
            .heal:
            true
        case .login, .logout, .switchRoom, .renewToken, .vendor:
            false
        }
    }
}
