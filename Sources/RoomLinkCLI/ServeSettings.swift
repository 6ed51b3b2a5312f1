import Foundation
import Logging
import RoomLink
import RoomLinkRedis

/// `roomlink serve`'s settings: a configuration file's, with the flags given over them, checked.
struct ServeSettings {
    var listen: SocketAddress
    var server: NetworkServer.Configuration
    var loops: Int
    var timeScale: Double
    var logLevel: Logger.Level
    var admin: SocketAddress?
    var adminToken: String?
    /// Presence shared with other nodes in Redis, when `--redis` is given.
    var presence: RedisPresence.Configuration?

    /// A configuration file: each flag's value under the flag's name in camel case.
    struct File: Decodable {
        var listen: String?
        var dialect: String?
        var timings: [String: String]?
        /// A table of user IDs to tokens, or the path of a file holding one.
        var auth: Auth?
        var loginTimeout: String?
        var maxOutput: Int?
        var maxRoomsPerConnection: Int?
        var accept: String?
        var loops: Int?
        var timeScale: Double?
        var logLevel: String?
        var serverNodes: Int?
        var serverCapacity: String?
        var admission: String?
        var maxQueue: String?
        var shedExpired: Bool?
        var admin: String?
        var adminToken: String?
        var adminTokenFile: String?
        var redis: String?
        var nodeID: String?
        var leasePeriod: String?

        enum Auth: Decodable {
            case path(String)
            case table(AuthTable)

            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let path = try? container.decode(String.self) {
                    self = .path(path)
                } else if let single = try? container.decode([String: String].self) {
                    self = .table(AuthTable(single))
                } else {
                    self = .table(AuthTable(tokens: try container.decode([String: OneOrMany].self).mapValues(\.tokens)))
                }
            }

            /// A user's token, or a non-empty list of them.
            struct OneOrMany: Decodable {
                var tokens: [String]

                init(from decoder: any Decoder) throws {
                    let container = try decoder.singleValueContainer()
                    if let token = try? container.decode(String.self) {
                        tokens = [token]
                    } else {
                        tokens = try container.decode([String].self)
                        guard !tokens.isEmpty else {
                            throw DecodingError.dataCorruptedError(in: container, debugDescription: "an empty list")
                        }
                    }
                }
            }
        }

        static let keys: Set<String> = [
            "listen", "dialect", "timings", "auth", "loginTimeout", "maxOutput", "maxRoomsPerConnection", "accept",
            "loops", "timeScale", "logLevel", "serverNodes", "serverCapacity", "admission", "maxQueue", "shedExpired",
            "admin", "adminToken", "adminTokenFile", "redis", "nodeID", "leasePeriod",
        ]

        /// Decodes a configuration file, refusing keys it does not know (a typo must not pass unseen).
        static func decode(_ data: Data) throws(RoomLinkError) -> File {
            guard let object = try? JSONSerialization.jsonObject(with: data), let dictionary = object as? [String: Any]
            else {
                throw RoomLinkError(code: .invalidInput, message: "serve configuration: expected a JSON object")
            }
            for key in dictionary.keys.sorted() where !keys.contains(key) {
                throw RoomLinkError(
                    code: .invalidInput,
                    message:
                        "serve configuration: unknown key '\(key)'; known: \(keys.sorted().joined(separator: ", "))"
                )
            }
            do {
                return try JSONDecoder().decode(File.self, from: data)
            } catch let DecodingError.typeMismatch(type, context), let DecodingError.valueNotFound(type, context) {
                let path = context.codingPath.map(\.stringValue).joined(separator: ".")
                throw RoomLinkError(code: .invalidInput, message: "serve configuration: \(path): expected \(type)")
            } catch {
                throw RoomLinkError(code: .invalidInput, message: "serve configuration: \(error)")
            }
        }
    }

    init(flags: Serve, file data: Data?) throws(RoomLinkError) {
        let file = try data.map { data throws(RoomLinkError) in try File.decode(data) } ?? File()

        let listenText = flags.listen ?? file.listen ?? "127.0.0.1:7000"
        do {
            listen = try SocketAddress(parsing: listenText)
        } catch {
            throw RoomLinkError(code: .invalidInput, field: "--listen", message: "--listen: \(error.description)")
        }
        let dialect: Scenario.Dialect
        if let flag = flags.dialect {
            dialect = flag
        } else if let text = file.dialect {
            guard let named = Scenario.Dialect(rawValue: text) else {
                throw Self.invalid("dialect", "zego, agora or livekit")
            }
            dialect = named
        } else {
            dialect = .zego
        }

        // Timings: the file's, then each --timing.
        var overrides: [String: Duration] = [:]
        for (name, text) in file.timings ?? [:] {
            guard let duration = Duration(roomLinkText: text) else {
                throw Self.invalid("timings.\(name)", "a duration like 5s")
            }
            overrides[name] = duration
        }
        for text in flags.timing {
            let (name, value) = try LoadPlan.timing(text, field: "--timing")
            overrides[name] = value
        }
        for name in overrides.keys.sorted() where !dialect.timingNames.contains(name) {
            throw RoomLinkError(
                code: .invalidInput,
                field: "--timing",
                message: "timing '\(name)' is not one of \(dialect.rawValue)'s: "
                    + dialect.timingNames.sorted().joined(separator: ", ")
            )
        }
        let engine = dialect.engineTimings(overrides: overrides)

        // The auth table: the flag's file, the configuration's file, or the configuration's table.
        var authTable: AuthTable?
        switch (flags.auth, file.auth) {
        case (let path?, _), (nil, .path(let path)?): authTable = try Self.authTable(at: path)
        case (nil, .table(let table)?): authTable = table
        case (nil, nil): authTable = nil
        }
        if let authTable, authTable.isEmpty { throw Self.invalid("auth", "at least one user and token") }

        // Capacity: the flags' group over the file's strings.
        var options = flags.serverOptions
        if options.serverNodes == nil { options.serverNodes = file.serverNodes }
        if options.serverCapacity == nil { options.serverCapacity = file.serverCapacity }
        if options.admission == nil { options.admission = file.admission }
        if options.maxQueue == nil, let text = file.maxQueue {
            guard let value = DurationArgument(argument: text) else { throw Self.invalid("maxQueue", "a duration") }
            options.maxQueue = value
        }
        if !options.shedExpired, file.shedExpired == true { options.shedExpired = true }
        let policy = try options.apply(to: .unlimited)

        var server = NetworkServer.Configuration(
            dialect: dialect,
            timings: engine.server,
            heartbeatInterval: engine.heartbeatInterval,
            auth: authTable,
            policy: policy
        )
        var loginTimeout = flags.loginTimeout?.duration
        if loginTimeout == nil, let text = file.loginTimeout {
            guard let value = Duration(roomLinkText: text) else { throw Self.invalid("loginTimeout", "a duration") }
            loginTimeout = value
        }
        if let loginTimeout {
            guard loginTimeout > .zero else { throw Self.invalid("loginTimeout", "a positive duration") }
            server.loginTimeout = loginTimeout
        }
        if let value = flags.maxOutput.map({ Int(clamping: $0.bytes) }) ?? file.maxOutput {
            guard value >= 1024 else { throw Self.invalid("maxOutput", "at least 1024 bytes") }
            server.maximumOutputBuffer = value
        }
        if let value = flags.maxRoomsPerConnection ?? file.maxRoomsPerConnection {
            guard value >= 1 else { throw Self.invalid("maxRoomsPerConnection", "at least 1") }
            server.maximumRoomsPerConnection = value
        }
        if let mode = flags.accept {
            server.acceptMode = mode
        } else if let text = file.accept {
            guard let mode = NetworkServer.AcceptMode(rawValue: text) else {
                throw Self.invalid("accept", "reusePort or handOff")
            }
            server.acceptMode = mode
        }

        loops = flags.loops ?? file.loops ?? LibeventLoopGroup.coreCount
        guard (1...LibeventLoopGroup.maximumLoopCount).contains(loops) else {
            throw Self.invalid("loops", "from 1 to \(LibeventLoopGroup.maximumLoopCount)")
        }
        timeScale = flags.timeScale ?? file.timeScale ?? 1
        guard timeScale.isFinite, timeScale > 0 else { throw Self.invalid("timeScale", "a number above 0") }
        if let level = flags.logLevel {
            logLevel = level
        } else if let text = file.logLevel {
            guard let level = Logger.Level(rawValue: text) else {
                throw Self.invalid("logLevel", "trace, debug, info, notice, warning or error")
            }
            logLevel = level
        } else {
            logLevel = .notice
        }
        self.server = server

        if let text = flags.admin ?? file.admin {
            do {
                admin = try SocketAddress(parsing: text)
            } catch {
                throw RoomLinkError(code: .invalidInput, field: "--admin", message: "--admin: \(error.description)")
            }
        }
        if let token = flags.adminToken ?? file.adminToken {
            adminToken = token
        } else if let path = flags.adminTokenFile ?? file.adminTokenFile {
            let data: Data
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: path))
            } catch {
                throw RoomLinkError(code: .ioFailure, message: "\(path): cannot read the admin token")
            }
            adminToken = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init)
        }
        if let adminToken, adminToken.trimmingCharacters(in: .whitespaces).isEmpty {
            throw Self.invalid("adminToken", "a non-empty token")
        }
        if let admin, adminToken == nil, !admin.isLoopback {
            throw RoomLinkError(
                code: .invalidInput,
                field: "--admin",
                message:
                    "--admin: \(admin) is not loopback; give --admin-token (or --admin-token-file) to serve the admin "
                    + "API beyond this machine"
            )
        }
        if admin == nil, adminToken != nil { throw Self.invalid("adminToken", "--admin too (a token for which API?)") }
        try readPresence(flags: flags, file: file)
    }

    /// `--redis`, `--node-id` and `--lease-period`.
    private mutating func readPresence(flags: Serve, file: File) throws(RoomLinkError) {
        let nodeID = flags.nodeID ?? file.nodeID
        var leasePeriod = flags.leasePeriod?.duration
        if leasePeriod == nil, let text = file.leasePeriod {
            guard let value = Duration(roomLinkText: text) else { throw Self.invalid("leasePeriod", "a duration") }
            leasePeriod = value
        }
        guard let text = flags.redis ?? file.redis else {
            if nodeID != nil { throw Self.invalid("nodeID", "--redis too (a node of which cluster?)") }
            if leasePeriod != nil { throw Self.invalid("leasePeriod", "--redis too") }
            return
        }
        do {
            var presence = RedisPresence.Configuration(
                endpoint: try RedisEndpoint(parsing: text),
                nodeID: nodeID ?? Self.defaultNodeID()
            )
            if let leasePeriod { presence.leasePeriod = leasePeriod }
            try presence.validate()
            self.presence = presence
        } catch {
            throw RoomLinkError(code: .invalidInput, field: "--redis", message: "--redis: \(error.description)")
        }
    }

    /// This host's name and the process's ID: unique among the nodes of one machine and, with distinct host names,
    /// of several.
    private static func defaultNodeID() -> String {
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "node"
        let allowed = host.filter { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
        return "\(allowed.isEmpty ? "node" : String(allowed.prefix(40)))-\(ProcessInfo.processInfo.processIdentifier)"
    }

    /// The auth table file at `path`: strict JSON, bounded like a configuration (``InputFile.configurationLimit``),
    /// each user ID to a token or a list of tokens.
    private static func authTable(at path: String) throws(RoomLinkError) -> AuthTable {
        let bytes = try InputFile(path, as: "the auth table", limit: InputFile.configurationLimit).read()
        return try AuthTable(json: try JSONValue.parse(Data(bytes), what: path), at: path)
    }

    private static func invalid(_ key: String, _ expected: String) -> RoomLinkError {
        RoomLinkError(code: .invalidInput, field: key, message: "\(key): expected \(expected)")
    }
}
