internal import struct Foundation.Data

/// Turns a JSON tree into a ``Scenario``, checking every field and naming the first wrong one by its path.
struct ScenarioReader {
    let root: JSONValue

    private static let topLevelKeys: Set<String> = [
        "dialect", "seed", "network", "users", "population", "auth", "timings", "retry", "timeline", "end",
        "server",
    ]
    private static let userKeys: Set<String> = [
        "id", "userID", "token", "roomMode", "userStatusNotify", "maxMemberCount", "role",
    ]
    private static let coreEntryKeys: Set<String> = [
        "at", "user", "action", "room", "rooms", "token", "from", "to", "fraction", "over", "offset", "for",
    ]
    /// An entry's fields: the core ones and every dialect's calls' arguments.
    private static let entryKeys = Scenario.vendorCalls.values.reduce(into: coreEntryKeys) {
        $0.formUnion($1.arguments.keys)
    }
    private static let coreActions = [
        "login", "logout", "switchRoom", "networkDown", "networkUp", "blackhole", "networkChange", "kick",
        "requestReconnect", "expireToken", "renewToken",
    ]
    private static let retryKeys: Set<String> = [
        "preset", "strategy", "base", "cap", "multiplier", "jitter", "delays", "jitterFromAttempt", "maxAttempts",
        "maxElapsed",
    ]
    /// The fields a preset may carry besides its name.
    private static let presetKeys: Set<String> = ["preset", "base", "cap", "maxAttempts", "maxElapsed"]

    func read() throws(RoomLinkError) -> Scenario {
        let top = try object(root, at: "scenario", keys: Self.topLevelKeys)
        var scenario = Scenario(end: try duration(required(top, "end", at: "scenario"), at: "end"))
        if let value = top["dialect"] {
            scenario.dialect = try oneOf(value, at: "dialect", Scenario.Dialect.self)
        }
        if let value = top["seed"] {
            scenario.seed = UInt64(try integer(value, at: "seed", minimum: 0))
        }
        if let value = top["network"] { scenario.network = try network(value) }
        if let value = top["users"] { scenario.users = try users(value) }
        if let value = top["population"] { scenario.population = try population(value) }
        if let value = top["auth"] { scenario.auth = try auth(value) }
        if let value = top["timings"] { scenario.timings = try timings(value, dialect: scenario.dialect) }
        if let value = top["retry"] { scenario.retry = try retry(value) }
        if let value = top["server"] { scenario.server = try server(value) }
        if let value = top["timeline"] {
            scenario.timeline = try timeline(value, users: scenario.users, hasPopulation: scenario.population != nil)
        }
        for (index, entry) in scenario.timeline.enumerated() where entry.at > scenario.end {
            throw .invalidArgument(
                "timeline[\(index)].at",
                "a time no later than end (\(scenario.end))",
                got: "\(entry.at)"
            )
        }
        // Sort by time; a stable sort keeps the file's order for entries at the same time.
        scenario.timeline = scenario.timeline.enumerated()
            .sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
        return scenario
    }

    // MARK: - Sections

    private func network(_ value: JSONValue) throws(RoomLinkError) -> Scenario.Network {
        let fields = try object(value, at: "network", keys: ["latency", "jitter", "loss"])
        var network = Scenario.Network()
        if let latency = fields["latency"] { network.latency = try duration(latency, at: "network.latency") }
        if let jitter = fields["jitter"] { network.jitter = try duration(jitter, at: "network.jitter") }
        if let loss = fields["loss"] {
            let probability = try number(loss, at: "network.loss")
            guard (0...1).contains(probability) else {
                throw .invalidArgument("network.loss", "a probability from 0 to 1", got: loss.summary)
            }
            network.loss = probability
        }
        return network
    }

    private func server(_ value: JSONValue) throws(RoomLinkError) -> ServerPolicy {
        let fields = try object(
            value,
            at: "server",
            keys: ["nodes", "capacity", "admission", "maxQueue", "shedExpired"]
        )
        var policy = ServerPolicy()
        if let nodes = fields["nodes"] { policy.nodes = try integer(nodes, at: "server.nodes", minimum: 1) }
        if let capacity = fields["capacity"] {
            policy.capacity = try ServerCapacity(
                parsing: try string(capacity, at: "server.capacity"),
                field: "server.capacity"
            )
        }
        if let admission = fields["admission"] {
            policy.admission = try AdmissionPolicy(
                parsing: try string(admission, at: "server.admission"),
                field: "server.admission"
            )
        }
        if let maxQueue = fields["maxQueue"] { policy.maxQueue = try duration(maxQueue, at: "server.maxQueue") }
        if let shed = fields["shedExpired"] { policy.shedExpired = try bool(shed, at: "server.shedExpired") }
        try policy.validate(at: "server")
        return policy
    }

    private func users(_ value: JSONValue) throws(RoomLinkError) -> [Scenario.User] {
        var users: [Scenario.User] = []
        var seen: Set<String> = []
        for (index, item) in try array(value, at: "users").enumerated() {
            let path = "users[\(index)]"
            let fields = try object(item, at: path, keys: Self.userKeys)
            let id = try nonEmptyString(required(fields, "id", at: path), at: "\(path).id")
            guard id != "*" else { throw .invalidArgument("\(path).id", "a name other than \"*\"", got: "\"*\"") }
            guard seen.insert(id).inserted else {
                throw .invalidArgument("\(path).id", "a name no other user has", got: "\"\(id)\" again")
            }
            var user = Scenario.User(id: id)
            if let userID = fields["userID"] { user.userID = try nonEmptyString(userID, at: "\(path).userID") }
            if let token = fields["token"] { user.token = try string(token, at: "\(path).token") }
            if let mode = fields["roomMode"] {
                user.roomMode = try oneOf(mode, at: "\(path).roomMode", Scenario.RoomMode.self)
            }
            if let notify = fields["userStatusNotify"] {
                user.userStatusNotify = try bool(notify, at: "\(path).userStatusNotify")
            }
            if let cap = fields["maxMemberCount"] {
                user.maxMemberCount = try integer(cap, at: "\(path).maxMemberCount", minimum: 1)
            }
            if let role = fields["role"] { user.role = try oneOf(role, at: "\(path).role", AgoraClientRole.self) }
            users.append(user)
        }
        return users
    }

    private func population(_ value: JSONValue) throws(RoomLinkError) -> Scenario.Population {
        let fields = try object(value, at: "population", keys: ["clients", "rooms", "userStatusNotify"])
        let clients = try integer(required(fields, "clients", at: "population"), at: "population.clients", minimum: 0)
        guard clients <= ScenarioLimits.maximumClients else {
            throw .invalidArgument("population.clients", "at most \(ScenarioLimits.maximumClients)", got: "\(clients)")
        }
        let rooms = try integer(required(fields, "rooms", at: "population"), at: "population.rooms", minimum: 0)
        if clients > 0, rooms == 0 {
            throw .invalidArgument("population.rooms", "at least 1 room for \(clients) clients", got: "0")
        }
        var population = Scenario.Population(clients: clients, rooms: rooms)
        if let notify = fields["userStatusNotify"] {
            population.userStatusNotify = try bool(notify, at: "population.userStatusNotify")
        }
        return population
    }

    private func auth(_ value: JSONValue) throws(RoomLinkError) -> AuthTable {
        try AuthTable(json: value, at: "auth")
    }

    private func timings(_ value: JSONValue, dialect: Scenario.Dialect) throws(RoomLinkError) -> [String: Duration] {
        guard case .object(let fields) = value else {
            throw .invalidArgument("timings", "an object of timing names to durations", got: value.summary)
        }
        var timings: [String: Duration] = [:]
        for name in fields.keys.sorted() { timings[name] = try duration(fields[name]!, at: "timings.\(name)") }
        return try Scenario.checkedTimings(timings, dialect: dialect)
    }

    func retry(_ value: JSONValue) throws(RoomLinkError) -> RetryPolicy {
        let fields = try object(value, at: "retry", keys: Self.retryKeys)
        let maxAttempts = try fields["maxAttempts"].map { v throws(RoomLinkError) in
            try integer(v, at: "retry.maxAttempts", minimum: 1)
        }
        let maxElapsed = try fields["maxElapsed"].map { v throws(RoomLinkError) in
            try duration(v, at: "retry.maxElapsed")
        }
        if let preset = fields["preset"] {
            if let extra = fields.keys.sorted().first(where: { !Self.presetKeys.contains($0) }) {
                throw .invalidArgument(
                    "retry.\(extra)",
                    "only base, cap, maxAttempts and maxElapsed next to a preset",
                    got: fields[extra]!.summary
                )
            }
            let name = try string(preset, at: "retry.preset")
            let names = (RetryPolicy.presets.keys.sorted() + RetryPolicy.parameterizedPresets.sorted())
            if let policy = RetryPolicy.presets[name] {
                for key in ["base", "cap"] where fields[key] != nil {
                    throw .invalidArgument(
                        "retry.\(key)",
                        "no \(key) for the \(name) preset (only fullJitter, equalJitter, decorrelatedJitter take one)",
                        got: fields[key]!.summary
                    )
                }
                return try RetryPolicy(
                    schedule: policy.schedule,
                    maxAttempts: maxAttempts ?? policy.maxAttempts,
                    maxElapsed: maxElapsed ?? policy.maxElapsed
                )
            }
            guard RetryPolicy.parameterizedPresets.contains(name) else {
                throw .invalidArgument("retry.preset", "one of: \(names.joined(separator: ", "))", got: preset.summary)
            }
            let base = try duration(required(fields, "base", at: "retry"), at: "retry.base")
            let cap = try duration(required(fields, "cap", at: "retry"), at: "retry.cap")
            switch name {
            case "fullJitter":
                return try .fullJitter(base: base, cap: cap, maxAttempts: maxAttempts, maxElapsed: maxElapsed)
            case "equalJitter":
                return try .equalJitter(base: base, cap: cap, maxAttempts: maxAttempts, maxElapsed: maxElapsed)
            default:
                return try .decorrelatedJitter(base: base, cap: cap, maxAttempts: maxAttempts, maxElapsed: maxElapsed)
            }
        }
        let strategy = try string(required(fields, "strategy", at: "retry"), at: "retry.strategy")
        let schedule: RetryPolicy.Schedule
        switch strategy {
        case "exponential":
            schedule = .exponential(
                base: try duration(required(fields, "base", at: "retry"), at: "retry.base"),
                cap: try duration(required(fields, "cap", at: "retry"), at: "retry.cap"),
                multiplier: try fields["multiplier"].map { v throws(RoomLinkError) in
                    try number(v, at: "retry.multiplier")
                } ?? 2,
                jitter: try fields["jitter"].map { v throws(RoomLinkError) in
                    try oneOf(v, at: "retry.jitter", RetryPolicy.Jitter.self)
                } ?? .full
            )
        case "decorrelated":
            schedule = .decorrelatedJitter(
                base: try duration(required(fields, "base", at: "retry"), at: "retry.base"),
                cap: try duration(required(fields, "cap", at: "retry"), at: "retry.cap")
            )
        case "fixed":
            var delays: [Duration] = []
            for (index, item) in try array(required(fields, "delays", at: "retry"), at: "retry.delays").enumerated() {
                delays.append(try duration(item, at: "retry.delays[\(index)]"))
            }
            schedule = .fixed(
                delays,
                jitter: try fields["jitter"].map { v throws(RoomLinkError) in try duration(v, at: "retry.jitter") }
                    ?? .zero,
                jitterFromAttempt: try fields["jitterFromAttempt"].map { v throws(RoomLinkError) in
                    try integer(v, at: "retry.jitterFromAttempt", minimum: 1)
                } ?? 1
            )
        default:
            throw .invalidArgument("retry.strategy", "one of: exponential, decorrelated, fixed", got: "\"\(strategy)\"")
        }
        return try RetryPolicy(schedule: schedule, maxAttempts: maxAttempts, maxElapsed: maxElapsed)
    }

    private func timeline(
        _ value: JSONValue,
        users: [Scenario.User],
        hasPopulation: Bool
    ) throws(RoomLinkError)
        -> [Scenario.Entry]
    {
        let known = Set(users.map(\.id))
        var entries: [Scenario.Entry] = []
        for (index, item) in try array(value, at: "timeline").enumerated() {
            let path = "timeline[\(index)]"
            let fields = try object(item, at: path, keys: Self.entryKeys)
            let at = try duration(required(fields, "at", at: path), at: "\(path).at")
            if case .string(let name) = fields["action"], name == "partition" || name == "heal" {
                entries.append(try roomEntry(fields, at: at, path: path, action: name, hasPopulation: hasPopulation))
                continue
            }
            if let rooms = fields["rooms"] {
                throw .invalidArgument(
                    "\(path).rooms",
                    "no rooms for \(fields["action"]?.summary ?? "this action") (only partition and heal take them)",
                    got: rooms.summary
                )
            }
            let who = try nonEmptyString(required(fields, "user", at: path), at: "\(path).user")
            let target: Scenario.Target
            if who == "*" {
                guard hasPopulation else {
                    throw .invalidArgument(
                        "\(path).user",
                        "a user listed in users (\"*\" needs a population)",
                        got: "\"*\""
                    )
                }
                let (fraction, offset) = try share(fields, at: path)
                let over =
                    try fields["over"].map { v throws(RoomLinkError) in try duration(v, at: "\(path).over") } ?? .zero
                target = .population(fraction: fraction, over: over, offset: offset)
            } else {
                guard known.contains(who) else {
                    throw .invalidArgument("\(path).user", "a user listed in users, or \"*\"", got: "\"\(who)\"")
                }
                for key in ["fraction", "over", "offset"] where fields[key] != nil {
                    throw .invalidArgument(
                        "\(path).\(key)",
                        "no \(key) for a single user (only with \"user\": \"*\")",
                        got: fields[key]!.summary
                    )
                }
                target = .user(who)
            }
            let isPopulation = if case .population = target { true } else { false }
            let action = try action(fields, at: path, population: isPopulation)
            var length: OutageLength?
            if let value = fields["for"] {
                guard action == .networkDown || action == .blackhole else {
                    throw .invalidArgument(
                        "\(path).for",
                        "no length for \(fields["action"]?.summary ?? "this action") (only networkDown and blackhole take one)",
                        got: value.summary
                    )
                }
                length = try outageLength(value, at: "\(path).for")
            }
            entries.append(Scenario.Entry(at: at, target: target, action: action, length: length))
        }
        return entries
    }

    /// A `partition` or `heal` entry: `"room": "r1"`, or `"rooms": "*"` with an optional `fraction` and `offset` of the
    /// population's rooms; a partition may carry `"for"` (each room heals after its own draw).
    private func roomEntry(
        _ fields: [String: JSONValue],
        at: Duration,
        path: String,
        action name: String,
        hasPopulation: Bool
    ) throws(RoomLinkError) -> Scenario.Entry {
        for key in ["user", "over"] where fields[key] != nil {
            throw .invalidArgument(
                "\(path).\(key)",
                "no \(key) for \(name) (it acts on rooms: \"room\" or \"rooms\": \"*\")",
                got: fields[key]!.summary
            )
        }
        let target: Scenario.Target
        switch (fields["room"], fields["rooms"]) {
        case (let room?, nil):
            for key in ["fraction", "offset"] where fields[key] != nil {
                throw .invalidArgument(
                    "\(path).\(key)",
                    "no \(key) for one room (only with \"rooms\": \"*\")",
                    got: fields[key]!.summary
                )
            }
            target = .room(try nonEmptyString(room, at: "\(path).room"))
        case (nil, let rooms?):
            guard case .string("*") = rooms else {
                throw .invalidArgument("\(path).rooms", "\"*\" (the population's rooms)", got: rooms.summary)
            }
            guard hasPopulation else {
                throw .invalidArgument("\(path).rooms", "a population (\"*\" names its rooms)", got: "\"*\"")
            }
            let (fraction, offset) = try share(fields, at: path)
            target = .populationRooms(fraction: fraction, offset: offset)
        default:
            throw .invalidArgument(
                "\(path).room",
                "either \"room\": NAME or \"rooms\": \"*\" for \(name)",
                got: fields["room"] == nil ? "neither" : "both"
            )
        }
        var length: OutageLength?
        if let value = fields["for"] {
            guard name == "partition" else {
                throw .invalidArgument(
                    "\(path).for",
                    "no length for heal (only partition takes one)",
                    got: value.summary
                )
            }
            length = try outageLength(value, at: "\(path).for")
        }
        return Scenario.Entry(at: at, target: target, action: name == "partition" ? .partition : .heal, length: length)
    }

    /// A population share: `fraction` (default 1) and `offset` (default 0) with offset + fraction ≤ 1.
    private func share(_ fields: [String: JSONValue], at path: String) throws(RoomLinkError) -> (Double, Double) {
        var fraction = 1.0
        if let value = fields["fraction"] {
            fraction = try number(value, at: "\(path).fraction")
            guard fraction > 0, fraction <= 1 else {
                throw .invalidArgument("\(path).fraction", "a share greater than 0 and at most 1", got: value.summary)
            }
        }
        var offset = 0.0
        if let value = fields["offset"] {
            offset = try number(value, at: "\(path).offset")
            guard offset >= 0, offset + fraction <= 1 + 1e-9 else {
                throw .invalidArgument(
                    "\(path).offset",
                    "a share of at least 0 with offset + fraction at most 1 (fraction \(fraction))",
                    got: value.summary
                )
            }
        }
        return (fraction, offset)
    }

    private func action(
        _ fields: [String: JSONValue],
        at path: String,
        population: Bool
    ) throws(RoomLinkError) -> Scenario.Action {
        let name = try string(required(fields, "action", at: path), at: "\(path).action")
        func text(_ key: String) throws(RoomLinkError) -> String {
            try nonEmptyString(required(fields, key, at: path), at: "\(path).\(key)")
        }
        func optionalText(_ key: String) throws(RoomLinkError) -> String? {
            try fields[key].map { v throws(RoomLinkError) in try nonEmptyString(v, at: "\(path).\(key)") }
        }
        switch name {
        case "login":
            // A population user has a room of its own; a named user must say which room.
            return .login(
                room: population ? try optionalText("room") : try text("room"),
                token: try optionalText("token")
            )
        case "logout": return .logout(room: try optionalText("room"))
        case "switchRoom": return .switchRoom(from: try text("from"), to: try text("to"))
        case "networkDown": return .networkDown
        case "networkUp": return .networkUp
        case "blackhole": return .blackhole
        case "kick": return .kick(room: population ? try optionalText("room") : try text("room"))
        case "expireToken": return .expireToken
        case "renewToken": return .renewToken(token: try text("token"))
        case "networkChange": return .networkChange
        case "requestReconnect": return .requestReconnect(room: try text("room"))
        default:
            guard let signature = Scenario.vendorCalls[name] else {
                let names = Self.coreActions + Scenario.vendorCalls.keys.sorted() + ["partition", "heal"]
                throw .invalidArgument("\(path).action", "one of: \(names.joined(separator: ", "))", got: "\"\(name)\"")
            }
            var arguments: [String: String] = [:]
            for (argument, values) in signature.arguments.sorted(by: { $0.key < $1.key }) {
                let value = try required(fields, argument, at: path)
                guard case .string(let text) = value, values.contains(text) else {
                    throw .invalidArgument(
                        "\(path).\(argument)",
                        "one of: \(values.joined(separator: ", "))",
                        got: value.summary
                    )
                }
                arguments[argument] = text
            }
            return .vendor(VendorCall(name, arguments: arguments))
        }
    }

    /// `"30s"`, `{"uniform": ["10s", "1m"]}` or `{"exponential": "30s"}`.
    private func outageLength(_ value: JSONValue, at path: String) throws(RoomLinkError) -> OutageLength {
        let expected = #"a duration ("30s"), {"uniform": ["10s", "1m"]} or {"exponential": "30s"}"#
        if case .string = value { return .fixed(try duration(value, at: path)) }
        guard case .object(let fields) = value, fields.count == 1, let (kind, parameter) = fields.first else {
            throw .invalidArgument(path, expected, got: value.summary)
        }
        switch kind {
        case "uniform":
            guard case .array(let bounds) = parameter, bounds.count == 2 else {
                throw .invalidArgument("\(path).uniform", "two durations, shortest first", got: parameter.summary)
            }
            let lower = try duration(bounds[0], at: "\(path).uniform[0]")
            let upper = try duration(bounds[1], at: "\(path).uniform[1]")
            guard lower <= upper else {
                throw .invalidArgument("\(path).uniform", "two durations, shortest first", got: parameter.summary)
            }
            return .uniform(lower, upper)
        case "exponential":
            let mean = try duration(parameter, at: "\(path).exponential")
            guard mean > .zero else {
                throw .invalidArgument("\(path).exponential", "a positive mean", got: parameter.summary)
            }
            return .exponential(mean: mean)
        default:
            throw .invalidArgument(path, expected, got: value.summary)
        }
    }

    // MARK: - Values

    private func object(
        _ value: JSONValue,
        at path: String,
        keys: Set<String>
    ) throws(RoomLinkError)
        -> [String: JSONValue]
    {
        guard case .object(let fields) = value else { throw .invalidArgument(path, "an object", got: value.summary) }
        if let unknown = fields.keys.sorted().first(where: { !keys.contains($0) }) {
            throw .invalidArgument(
                path == "scenario" ? unknown : "\(path).\(unknown)",
                "one of the fields \(keys.sorted().joined(separator: ", "))",
                got: "a field no dialect knows"
            )
        }
        return fields
    }

    private func required(
        _ fields: [String: JSONValue],
        _ key: String,
        at path: String
    ) throws(RoomLinkError)
        -> JSONValue
    {
        guard let value = fields[key] else {
            throw .invalidArgument(
                path == "scenario" ? key : "\(path).\(key)",
                "a value",
                got: "nothing (it is required)"
            )
        }
        return value
    }

    private func array(_ value: JSONValue, at path: String) throws(RoomLinkError) -> [JSONValue] {
        guard case .array(let items) = value else { throw .invalidArgument(path, "an array", got: value.summary) }
        return items
    }

    private func string(_ value: JSONValue, at path: String) throws(RoomLinkError) -> String {
        guard case .string(let text) = value else { throw .invalidArgument(path, "a string", got: value.summary) }
        return text
    }

    private func nonEmptyString(_ value: JSONValue, at path: String) throws(RoomLinkError) -> String {
        let text = try string(value, at: path)
        guard !text.isEmpty else { throw .invalidArgument(path, "a non-empty string", got: "\"\"") }
        return text
    }

    private func bool(_ value: JSONValue, at path: String) throws(RoomLinkError) -> Bool {
        guard case .bool(let flag) = value else { throw .invalidArgument(path, "true or false", got: value.summary) }
        return flag
    }

    private func number(_ value: JSONValue, at path: String) throws(RoomLinkError) -> Double {
        guard case .number(let number) = value, number.isFinite else {
            throw .invalidArgument(path, "a number", got: value.summary)
        }
        return number
    }

    private func integer(_ value: JSONValue, at path: String, minimum: Int) throws(RoomLinkError) -> Int {
        guard case .number(let number) = value, number == number.rounded(), number >= Double(minimum),
            number < 9_007_199_254_740_992
        else {
            throw .invalidArgument(path, "a whole number of at least \(minimum)", got: value.summary)
        }
        return Int(number)
    }

    private func duration(_ value: JSONValue, at path: String) throws(RoomLinkError) -> Duration {
        guard case .string(let text) = value, let duration = Duration(roomLinkText: text) else {
            throw .invalidArgument(path, "a duration like \"90s\" (ns, us, ms, s, m, h)", got: value.summary)
        }
        guard duration <= ScenarioLimits.maximumDuration else {
            throw .invalidArgument(
                path,
                "a duration of at most \(ScenarioLimits.maximumDuration.roomLinkText)",
                got: value.summary
            )
        }
        return duration
    }

    private func oneOf<Choice: RawRepresentable & CaseIterable>(
        _ value: JSONValue,
        at path: String,
        _ type: Choice.Type
    ) throws(RoomLinkError) -> Choice where Choice.RawValue == String {
        let names = Choice.allCases.map(\.rawValue)
        guard case .string(let text) = value, let choice = Choice(rawValue: text) else {
            throw .invalidArgument(path, "one of: \(names.joined(separator: ", "))", got: value.summary)
        }
        return choice
    }
}

extension Scenario {
    /// `timings` checked as a scenario's `"timings"` are: every name one some dialect knows, every interval or
    /// timeout long enough; the names `dialect` reads are kept, other dialects' accepted and dropped (contract §7).
    ///
    /// - Throws: `RoomLinkError` naming `timings.NAME`.
    static func checkedTimings(
        _ timings: [String: Duration],
        dialect: Dialect
    ) throws(RoomLinkError) -> [String: Duration] {
        let known = timingNames.values.reduce(into: Set<String>()) { $0.formUnion($1) }
        let mine = timingNames[dialect] ?? []
        var kept: [String: Duration] = [:]
        for (name, timing) in timings.sorted(by: { $0.key < $1.key }) {
            guard known.contains(name) else {
                throw .invalidArgument(
                    "timings.\(name)",
                    "a timing one of the dialects knows (\(mine.sorted().joined(separator: ", ")) for \(dialect.rawValue))",
                    got: "an unknown name"
                )
            }
            guard timing <= ScenarioLimits.maximumDuration else {
                throw .invalidArgument(
                    "timings.\(name)",
                    "a duration of at most \(ScenarioLimits.maximumDuration.roomLinkText)",
                    got: timing.roomLinkText
                )
            }
            if !ScenarioLimits.zeroTimings.contains(name), timing < ScenarioLimits.minimumPeriod {
                throw .invalidArgument(
                    "timings.\(name)",
                    "an interval or timeout of at least \(ScenarioLimits.minimumPeriod.roomLinkText)",
                    got: "\"\(timing.roomLinkText)\""
                )
            }
            if mine.contains(name) { kept[name] = timing }
        }
        return kept
    }
}

extension Scenario.Network {
    /// The network checked as a scenario's `"network"` is (a loss probability from 0 to 1).
    ///
    /// - Throws: `RoomLinkError` naming `path.loss`.
    func checked(at path: String) throws(RoomLinkError) -> Self {
        guard loss.isFinite, (0...1).contains(loss) else {
            throw .invalidArgument("\(path).loss", "a probability from 0 to 1", got: "\(loss)")
        }
        return self
    }
}

extension RetryPolicy {
    /// Reads a scenario's `"retry"` object from JSON text (`{"preset": "liveKitJS"}`), as ``Scenario/init(json:)``
    /// reads it inside a scenario.
    ///
    /// - Throws: `RoomLinkError` naming the field that is wrong (`retry.base`).
    init(scenarioJSON data: Data) throws(RoomLinkError) {
        let root = try JSONValue.parse(data, what: "retry", root: "retry")
        self = try ScenarioReader(root: root).retry(root)
    }
}
