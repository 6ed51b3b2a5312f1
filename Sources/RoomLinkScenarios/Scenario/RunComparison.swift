/// Two event logs of one scenario side by side — its run in virtual time and its run against a real server — user
/// by user: whether each user was told the same things in the same order, and how far apart in time.
///
/// Two events are the same when everything but their time is (type, room, reason, code, users, …), and events the
/// virtual run gave one user at the same instant may come in any order; fields that are
/// objects (ZEGO's `extendedData` with the server's room session ID) differ between servers and are not compared,
/// nor are `attempt` lines. Times are compared only between events matched in order: `real − virtual` is how late
/// the real run told the user.
public struct RunComparison: Sendable {
    /// One place where the two runs told a user different things.
    public struct Mismatch: Sendable, Equatable, CustomStringConvertible {
        public var user: String
        /// The position in the user's events.
        public var index: Int
        /// The virtual run's event there, if it has one.
        public var virtual: String?
        /// The real run's event there, if it has one.
        public var real: String?

        public var description: String {
            "\(user) #\(index): virtual \(virtual ?? "nothing"), real \(real ?? "nothing")"
        }
    }

    /// Users with events in either run.
    public var users: Int
    /// Events matched in order, per user.
    public var matched: Int
    /// Where the sequences differ (the first difference of each user).
    public var mismatches: [Mismatch]
    /// `real − virtual` of each matched event, in milliseconds.
    public var offsetsMs: [Double]

    /// Whether every user was told the same things in the same order.
    public var sameSequences: Bool { mismatches.isEmpty }
    /// The latest the real run told anything, relative to virtual time (ms).
    public var maxLateMs: Double { offsetsMs.max() ?? 0 }
    /// The earliest it did (negative: before virtual time).
    public var minOffsetMs: Double { offsetsMs.min() ?? 0 }
    /// The median offset.
    public var medianOffsetMs: Double {
        guard !offsetsMs.isEmpty else { return 0 }
        return offsetsMs.sorted()[offsetsMs.count / 2]
    }

    /// How early a real run of `dialect` may tell a user something and still agree: 5 ms of clock noise — and, for a
    /// dialect whose client watches the server's data (Agora), one and a half data intervals more (750 ms): over a
    /// socket the client counts a silence from the last frame it received, and a quiet connection's keep-alives come
    /// every half to one and a half intervals (docs/protocol.md), while virtual time counts from the fault itself. A
    /// real Agora client on a real path counts from its last packet too.
    public static func earliness(for dialect: DialectName) -> Duration {
        dialect.engineTimings().server.continuousData ? .milliseconds(755) : .milliseconds(5)
    }

    /// Whether the sequences agree and every matched event of the real run came within `tolerance` of virtual
    /// time, and no more than `earliness` before it.
    public func agrees(tolerance: Duration, earliness: Duration = .milliseconds(5)) -> Bool {
        sameSequences && maxLateMs <= tolerance.milliseconds && -minOffsetMs <= earliness.milliseconds
    }

    public init(virtual: [LoggedEvent], real: [LoggedEvent]) {
        func byUser(_ events: [LoggedEvent]) -> [String: [LoggedEvent]] {
            var users: [String: [LoggedEvent]] = [:]
            for event in events where event.type != "attempt" { users[event.user, default: []].append(event) }
            // Events of one user carry its own order; a sink may interleave users, not one user's events.
            return users
        }
        let virtualUsers = byUser(virtual)
        let realUsers = byUser(real)
        let names = Set(virtualUsers.keys).union(realUsers.keys).sorted()
        var mismatches: [Mismatch] = []
        var offsets: [Double] = []
        var matched = 0
        for user in names {
            let expected = virtualUsers[user] ?? []
            let actual = realUsers[user] ?? []
            // Events the virtual run gave one user at one instant have no order between them (two peers who joined
            // at the same moment reach a real server in either order): compared as a group, in key order.
            var index = 0
            while index < max(expected.count, actual.count) {
                var end = index + 1
                while end < expected.count, expected[end].time == expected[index].time { end += 1 }
                let left = expected[min(index, expected.count)..<min(end, expected.count)].sorted {
                    Self.key($0) < Self.key($1)
                }
                let right = actual[min(index, actual.count)..<min(end, actual.count)].sorted {
                    Self.key($0) < Self.key($1)
                }
                guard left.count == right.count, left.map(Self.key) == right.map(Self.key) else {
                    var differs = 0
                    while differs < min(left.count, right.count), Self.key(left[differs]) == Self.key(right[differs]) {
                        differs += 1
                    }
                    mismatches.append(
                        Mismatch(
                            user: user,
                            index: index + differs,
                            virtual: differs < left.count ? Self.key(left[differs]) : nil,
                            real: differs < right.count ? Self.key(right[differs]) : nil
                        )
                    )
                    break
                }
                for (virtual, real) in zip(left, right) {
                    matched += 1
                    offsets.append(real.time - virtual.time)
                }
                index = end
            }
        }
        self.users = names.count
        self.matched = matched
        self.mismatches = mismatches
        self.offsetsMs = offsets
    }

    /// What an event says, without its time.
    static func key(_ event: LoggedEvent) -> String {
        var parts = [event.type]
        if let room = event.room { parts.append("room=\(room)") }
        for (key, value) in event.strings.sorted(by: { $0.key < $1.key }) { parts.append("\(key)=\(value)") }
        for (key, value) in event.integers.sorted(by: { $0.key < $1.key }) { parts.append("\(key)=\(value)") }
        for (key, value) in event.lists.sorted(by: { $0.key < $1.key }) {
            parts.append("\(key)=[\(value.joined(separator: ","))]")
        }
        return parts.joined(separator: " ")
    }
}

extension Duration {
    /// The duration in milliseconds.
    fileprivate var milliseconds: Double {
        Double(components.seconds) * 1_000 + Double(components.attoseconds) / 1e15
    }
}
