/// Where a Redis server is: `redis://HOST:PORT[/DB]`.
public struct RedisEndpoint: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// The logical database (`SELECT`); 0 by default.
    public var database: Int

    public init(host: String, port: Int = 6379, database: Int = 0) {
        self.host = host
        self.port = port
        self.database = database
    }

    /// Parses `redis://HOST[:PORT][/DB]` (the scheme may be left out).
    ///
    /// - Throws: ``RedisPresenceError/invalidEndpoint(_:reason:)`` naming what is wrong.
    public init(parsing text: String) throws(RedisPresenceError) {
        var rest = Substring(text)
        if rest.hasPrefix("redis://") {
            rest = rest.dropFirst("redis://".count)
        } else if rest.contains("://") {
            throw .invalidEndpoint(text, reason: "only redis:// is supported (no TLS, no unix sockets)")
        }
        var database = 0
        if let slash = rest.firstIndex(of: "/") {
            let name = rest[rest.index(after: slash)...]
            if !name.isEmpty {
                guard let number = Int(name), (0...15).contains(number) else {
                    throw .invalidEndpoint(text, reason: "the database must be a number from 0 to 15, not '\(name)'")
                }
                database = number
            }
            rest = rest[..<slash]
        }
        if rest.contains("@") { throw .invalidEndpoint(text, reason: "credentials are not supported") }
        var host = rest
        var port = 6379
        if let colon = rest.lastIndex(of: ":") {
            let portText = rest[rest.index(after: colon)...]
            guard let number = Int(portText), (1...65535).contains(number) else {
                throw .invalidEndpoint(text, reason: "the port must be a number from 1 to 65535, not '\(portText)'")
            }
            port = number
            host = rest[..<colon]
        }
        guard !host.isEmpty else { throw .invalidEndpoint(text, reason: "no host") }
        self.init(host: String(host), port: port, database: database)
    }

    public var description: String { "redis://\(host):\(port)/\(database)" }
}

/// What can go wrong setting up presence in Redis.
public enum RedisPresenceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A Redis address that does not parse.
    case invalidEndpoint(String, reason: String)
    /// A node ID that cannot name a node.
    case invalidNodeID(String, reason: String)
    /// An option out of range.
    case invalidSetting(String)

    public var description: String {
        switch self {
        case .invalidEndpoint(let text, let reason): "invalid Redis address '\(text)': \(reason)"
        case .invalidNodeID(let text, let reason): "invalid node ID '\(text)': \(reason)"
        case .invalidSetting(let text): text
        }
    }
}
