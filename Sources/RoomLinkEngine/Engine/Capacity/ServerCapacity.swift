/// What one simulated server node can do: how many messages it works on at once, and what each kind costs.
///
/// A node takes messages in arrival order; each waits for the first free worker and holds it for its kind's cost.
/// A login is expensive (authentication, session set-up, the room's state), a heartbeat cheap. Written as
/// `workers=4,login=2ms,heartbeat=20us,other=20us` on the command line (`--server-capacity`) and in a scenario
/// (`"server": {"capacity": "…"}`); names left out keep their defaults.
public struct ServerCapacity: Sendable, Hashable {
    /// Messages a node works on at once.
    public var workers: Int
    /// What a login (or reconnection) costs a worker; `nil`: the dialect's `loginProcessing` (20 ms for ZEGO), the
    /// time the unlimited server takes.
    public var login: Duration?
    /// What a heartbeat costs.
    public var heartbeat: Duration
    /// What any other message costs (a logout, a token renewal, a connection closing).
    public var other: Duration

    /// A capacity; the defaults are one worker, logins at the dialect's `loginProcessing`, 20 µs for the rest.
    public init(
        workers: Int = 1,
        login: Duration? = nil,
        heartbeat: Duration = .microseconds(20),
        other: Duration = .microseconds(20)
    ) {
        self.workers = workers
        self.login = login
        self.heartbeat = heartbeat
        self.other = other
    }

    /// The most workers a node may have.
    public static let maxWorkers = 100_000

    /// Reads the text form, `workers=4,login=2ms,heartbeat=20us,other=20us` (any subset, any order).
    ///
    /// - Parameters:
    ///   - text: The capacity, as written on the command line.
    ///   - field: The field or flag named in errors.
    /// - Throws: ``RoomLinkError/Code/invalidInput`` naming the entry that is wrong.
    public init(parsing text: String, field: String = "server.capacity") throws(RoomLinkError) {
        self.init()
        let expected =
            "workers=N,login=DURATION,heartbeat=DURATION,other=DURATION (any of them, e.g. workers=4,login=2ms)"
        for (name, value) in try KeyValueText.parse(
            text,
            field: field,
            names: ["workers", "login", "heartbeat", "other"],
            expected: expected
        ) {
            if name == "workers" {
                guard let count = Int(value), (1...Self.maxWorkers).contains(count) else {
                    throw .invalidArgument("\(field) workers", "1 … \(Self.maxWorkers)", got: value)
                }
                workers = count
                continue
            }
            guard let cost = Duration(roomLinkText: value), cost > .zero, cost <= .seconds(60) else {
                throw .invalidArgument(
                    "\(field) \(name)",
                    "a cost above 0 and at most 60s, e.g. 2ms or 20us",
                    got: value
                )
            }
            switch name {
            case "login": login = cost
            case "heartbeat": heartbeat = cost
            default: other = cost
            }
        }
    }

    /// The text form, which ``init(parsing:field:)`` reads back.
    public var text: String {
        var parts = ["workers=\(workers)"]
        if let login { parts.append("login=\(login.roomLinkText)") }
        parts.append("heartbeat=\(heartbeat.roomLinkText)")
        parts.append("other=\(other.roomLinkText)")
        return parts.joined(separator: ",")
    }
}

/// A token bucket on a node's logins: `rate` tokens a second, at most `burst` kept; each admitted login takes one.
/// A login that finds the bucket empty is answered "busy, retry after" the time until the next token. Written as
/// `rate=5000/s,burst=10000` (`--admission`, or `"server": {"admission": "…"}`); `burst` defaults to one second's
/// worth.
public struct AdmissionPolicy: Sendable, Hashable {
    /// Logins admitted per second, sustained.
    public var rate: Double
    /// Logins admitted at once after a quiet spell.
    public var burst: Int

    /// A bucket of `rate` logins a second, holding `burst` (one second's worth by default).
    public init(rate: Double, burst: Int? = nil) {
        self.rate = rate
        self.burst = burst ?? max(1, Int(rate.rounded(.up)))
    }

    /// Reads the text form, `rate=5000/s,burst=10000` (`rate` required; `/s` optional, `/m` for per minute).
    public init(parsing text: String, field: String = "server.admission") throws(RoomLinkError) {
        let expected = "rate=N/s[,burst=N], e.g. rate=5000/s,burst=10000"
        var rate: Double?
        var burst: Int?
        for (name, value) in try KeyValueText.parse(text, field: field, names: ["rate", "burst"], expected: expected) {
            if name == "burst" {
                guard let count = Int(value), (1...1_000_000_000).contains(count) else {
                    throw .invalidArgument("\(field) burst", "1 … 1000000000 logins", got: value)
                }
                burst = count
                continue
            }
            var number = Substring(value)
            var perSecond = 1.0
            if number.hasSuffix("/s") {
                number = number.dropLast(2)
            } else if number.hasSuffix("/m") {
                number = number.dropLast(2)
                perSecond = 1.0 / 60
            }
            guard let count = Double(number), count.isFinite, count > 0, count * perSecond <= 1e9 else {
                throw .invalidArgument(
                    "\(field) rate",
                    "logins per second above 0 and at most 1e9, e.g. 5000/s",
                    got: value
                )
            }
            rate = count * perSecond
        }
        guard let rate else { throw .invalidArgument(field, expected, got: text.isEmpty ? "nothing" : text) }
        self.init(rate: rate, burst: burst)
    }

    /// The text form, which ``init(parsing:field:)`` reads back.
    public var text: String {
        let number = rate == rate.rounded() && abs(rate) < 1e15 ? String(Int64(rate)) : String(rate)
        return "rate=\(number)/s,burst=\(burst)"
    }
}

/// `name=value,name=value` lists, as capacities and admission policies are written.
enum KeyValueText {
    /// The entries of `text` in order; every name is one of `names` and appears once.
    static func parse(
        _ text: String,
        field: String,
        names: Set<String>,
        expected: String
    ) throws(RoomLinkError) -> [(name: String, value: String)] {
        var seen: Set<String> = []
        var entries: [(name: String, value: String)] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = pieces[0].trimmingWhitespace
            guard pieces.count == 2, names.contains(name) else {
                throw .invalidArgument(
                    field,
                    expected,
                    got: part.isEmpty ? "an empty entry in \"\(text)\"" : "\"\(part)\""
                )
            }
            guard seen.insert(name).inserted else {
                throw .invalidArgument(field, "\(name) once", got: "it twice in \"\(text)\"")
            }
            entries.append((name, pieces[1].trimmingWhitespace))
        }
        return entries
    }
}

extension Substring {
    fileprivate var trimmingWhitespace: String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
