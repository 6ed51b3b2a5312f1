import Foundation
import Logging
import RoomLink
import RoomLinkLiveKit
import RoomLinkRedis

/// `roomlink serve`'s settings: its flags (a configuration file's among them, `ServeConfiguration`), checked.
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
    /// The API keys of `--protocol livekit`: LiveKit's protocol is served when there are some.
    var liveKitKeys: LiveKitKeys?
    /// LiveKit's webhooks (`--webhook`).
    var webhooks: LiveKitWebhookSettings?
    /// The room callbacks to the app's backend (`--callback`, and LiveKit's `--webhook`), and their vendor's wording.
    var callbacks: (CallbackSettings, any CallbackFormat)?
    /// Where `scripts/livekit-peer` listens (`--peer-helper`).
    var peerHelper: SocketAddress?
    /// How often a LiveKit participant is sent a refreshed token (`--token-refresh`).
    var tokenRefresh: Duration = .seconds(300)
    /// The clients' silence timeout (LiveKit's `pingTimeout`), which a LiveKit join response tells them.
    var clientSilenceTimeout: Duration = .zero

    init(flags: Serve) throws(RoomLinkError) {
        let listenText = flags.listen ?? "127.0.0.1:7000"
        do {
            listen = try SocketAddress(parsing: listenText)
        } catch {
            throw RoomLinkError(code: .invalidInput, field: "--listen", message: "--listen: \(error.description)")
        }
        let isLiveKit = flags.protocol == .livekit
        if isLiveKit {
            if let dialect = flags.dialect, dialect != .livekit {
                throw Self.invalid("dialect", "livekit with --protocol livekit (or none)")
            }
            do {
                liveKitKeys = try LiveKitKeys(parsing: flags.keys)
            } catch {
                throw RoomLinkError(code: .invalidInput, field: "--keys", message: "--keys: \(error.description)")
            }
            if flags.auth != nil || flags.authTable != nil {
                throw RoomLinkError(
                    code: .invalidInput,
                    field: "--auth",
                    message: "--auth: LiveKit's protocol checks its access tokens with --keys, not an auth table"
                )
            }
            webhooks = try Self.webhooks(flags: flags, keys: liveKitKeys)
            if let refresh = flags.tokenRefresh {
                guard refresh.duration >= .zero else { throw Self.invalid("tokenRefresh", "0s or more") }
                tokenRefresh = refresh.duration
            }
            if let text = flags.peerHelper {
                do {
                    peerHelper = try SocketAddress(parsing: text)
                } catch {
                    throw RoomLinkError(
                        code: .invalidInput,
                        field: "--peer-helper",
                        message: "--peer-helper: \(error.description)"
                    )
                }
            }
        } else if !flags.keys.isEmpty {
            throw Self.invalid("keys", "--protocol livekit too (API keys are LiveKit's)")
        } else if !flags.webhook.isEmpty || flags.webhookKey != nil || flags.webhookQueue != nil
            || flags.peerHelper != nil
        {
            throw Self.invalid("webhook", "--protocol livekit too (webhooks are LiveKit's)")
        } else if flags.tokenRefresh != nil {
            throw Self.invalid("tokenRefresh", "--protocol livekit too (refreshed tokens are LiveKit's)")
        }
        let dialect = isLiveKit ? .livekit : flags.dialect ?? .zego

        // Timings: each --timing, the last of a name counting.
        var overrides: [String: Duration] = [:]
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
        clientSilenceTimeout = engine.silenceTimeout

        // The auth table: a file's, or one a configuration file gave inline (a flag's file overrides it).
        var authTable: AuthTable?
        if let path = flags.auth {
            authTable = try Self.authTable(at: path)
        } else if let json = flags.authTable {
            authTable = try AuthTable(json: try JSONValue.parse(Data(json.utf8), what: "auth"), at: "auth")
        }
        if let authTable, authTable.isEmpty { throw Self.invalid("auth", "at least one user and token") }

        // The vendor's own tokens, in place of a table.
        let verifier = try TokenCommand.verifier(
            dialect: dialect.rawValue,
            appID: flags.appID,
            certificate: flags.appCertificate,
            secret: flags.serverSecret
        )
        if verifier != nil, authTable != nil {
            throw Self.invalid("auth", "no table with --app-id (the vendor's tokens are checked instead)")
        }

        let policy = try flags.serverOptions.apply(to: .unlimited)

        var server = NetworkServer.Configuration(
            dialect: dialect,
            timings: engine.server,
            heartbeatInterval: engine.heartbeatInterval,
            auth: authTable,
            policy: policy
        )
        server.tokenVerifier = verifier
        callbacks = try flags.callbackOptions.settings(
            dialect: dialect,
            appID: flags.appID,
            webhooks: webhooks,
            keys: liveKitKeys,
            ca: flags.ca
        )
        if flags.ca != nil, callbacks == nil {
            throw RoomLinkError(
                code: .invalidInput,
                field: "--ca",
                message: "--ca: serve calls no https:// URL here (it is for --callback or --webhook https://…)"
            )
        }
        switch (flags.tlsCert, flags.tlsKey) {
        case (let certificate?, let key?):
            server.tls = TLSServerConfiguration(certificateFile: certificate, keyFile: key)
        case (nil, nil): break
        case (nil, _?):
            throw RoomLinkError(code: .invalidInput, field: "--tls-key", message: "--tls-key needs --tls-cert")
        case (_?, nil):
            throw RoomLinkError(
                code: .invalidInput,
                field: "--tls-cert",
                message: "--tls-cert needs --tls-key (the certificate's private key)"
            )
        }
        if let loginTimeout = flags.loginTimeout?.duration {
            guard loginTimeout > .zero else { throw Self.invalid("loginTimeout", "a positive duration") }
            server.loginTimeout = loginTimeout
        }
        if let value = flags.maxOutput.map({ Int(clamping: $0.bytes) }) {
            guard value >= 1024 else { throw Self.invalid("maxOutput", "at least 1024 bytes") }
            server.maximumOutputBuffer = value
        }
        if let value = flags.maxRoomsPerConnection {
            guard value >= 1 else { throw Self.invalid("maxRoomsPerConnection", "at least 1") }
            server.maximumRoomsPerConnection = value
        }
        if let mode = flags.accept { server.acceptMode = mode }

        loops = flags.loops ?? LibeventLoopGroup.coreCount
        guard (1...LibeventLoopGroup.maximumLoopCount).contains(loops) else {
            throw Self.invalid("loops", "from 1 to \(LibeventLoopGroup.maximumLoopCount)")
        }
        timeScale = flags.timeScale ?? 1
        guard timeScale.isFinite, timeScale > 0 else { throw Self.invalid("timeScale", "a number above 0") }
        logLevel = flags.logLevel ?? .notice
        self.server = server

        if let text = flags.admin {
            do {
                admin = try SocketAddress(parsing: text)
            } catch {
                throw RoomLinkError(code: .invalidInput, field: "--admin", message: "--admin: \(error.description)")
            }
        }
        if let token = flags.adminToken {
            adminToken = token
        } else if let path = flags.adminTokenFile {
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
        try readPresence(flags: flags)
    }

    /// `--webhook`, `--webhook-key` and `--webhook-queue`.
    private static func webhooks(flags: Serve, keys: LiveKitKeys?) throws(RoomLinkError) -> LiveKitWebhookSettings? {
        guard !flags.webhook.isEmpty else {
            if flags.webhookKey != nil || flags.webhookQueue != nil {
                throw Self.invalid("webhookKey", "--webhook too")
            }
            return nil
        }
        var urls: [WebhookURL] = []
        for text in flags.webhook {
            do {
                urls.append(try WebhookURL(parsing: text))
            } catch {
                throw RoomLinkError(code: .invalidInput, field: "--webhook", message: "--webhook: \(error.description)")
            }
        }
        let keys = keys?.secrets.keys.sorted() ?? []
        guard let key = flags.webhookKey ?? (keys.count == 1 ? keys[0] : nil) else {
            throw Self.invalid("webhookKey", "one of \(keys.joined(separator: ", ")) (several keys: say which signs)")
        }
        guard keys.contains(key) else { throw Self.invalid("webhookKey", "one of --keys' API keys, not '\(key)'") }
        let queue = flags.webhookQueue ?? 10_000
        guard queue >= 1 else { throw Self.invalid("webhookQueue", "at least 1") }
        if flags.ca != nil, !urls.contains(where: \.isSecure) {
            throw RoomLinkError(code: .invalidInput, field: "--ca", message: "--ca: no https:// URL to call with it")
        }
        return LiveKitWebhookSettings(
            urls: urls,
            apiKey: key,
            queueCapacity: queue,
            tls: TLSClientConfiguration(caFile: flags.ca)
        )
    }

    /// `--redis`, `--node-id` and `--lease-period`.
    private mutating func readPresence(flags: Serve) throws(RoomLinkError) {
        let nodeID = flags.nodeID
        let leasePeriod = flags.leasePeriod?.duration
        guard let text = flags.redis else {
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
