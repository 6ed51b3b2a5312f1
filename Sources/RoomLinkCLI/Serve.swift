public import ArgumentParser
import Foundation
import Logging
import RoomLink
import RoomLinkLiveKit
import RoomLinkRedis

/// `roomlink serve`: RoomLink's server on a real network — the same rooms and server state machines as a simulated
/// run, on libevent loops, reached over TCP in RoomLink's wire protocol (docs/protocol.md).
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve rooms over TCP in RoomLink's wire protocol, until SIGTERM or SIGINT.",
        discussion: """
            Clients connect with `roomlink run|load --server HOST:PORT`, the embedding API's TCPClientTransport, or \
            any client generated from docs/roomlink.proto. A --config FILE (JSON) gives any flag's value under its \
            name without dashes, in camel case ("listen", "dialect", "timings", "auth", "serverCapacity", \
            "admission", "loginTimeout", …); a flag overrides the file. SIGTERM or SIGINT stops accepting, says \
            goodbye to every client, and exits 0. Exit status 2 on bad input, 64 on a bad flag, 74 when it cannot \
            listen.
            """
    )

    @Option(help: "Where to accept clients: HOST:PORT (port 0: one the system picks, printed at start).")
    var listen: String?
    @Option(help: "zego, agora or livekit: the dialect clients must speak.") var dialect: Scenario.Dialect?
    @Option(help: "A JSON file of settings (see the discussion); flags override it.") var config: String?
    @Option(
        help: """
            The wire protocol: roomlink (docs/protocol.md), or livekit — LiveKit's signalling on GET /rtc (protobuf \
            over WebSocket) with its access tokens, dialect livekit (docs/livekit.md).
            """
    )
    var `protocol`: ServedWireProtocol?
    @Option(help: "A LiveKit API key and its secret, KEY:SECRET (repeatable): tokens signed by one are accepted.")
    var keys: [String] = []
    @Option(help: "With --protocol livekit: post LiveKit's webhooks to this http:// or https:// URL (repeatable).")
    var webhook: [String] = []
    @Option(help: "The API key that signs the webhooks (default: the only one of --keys).") var webhookKey: String?
    @Option(help: "Webhook events in flight at most (default 10000); more are dropped and counted in /metrics.")
    var webhookQueue: Int?
    @Option(
        help: """
            With --protocol livekit: HOST:PORT of scripts/livekit-peer, which answers the SDKs' offers so that their \
            peer connections, and rooms, connect (docs/livekit.md).
            """
    )
    var peerHelper: String?
    @Option(
        help: """
            With --protocol livekit: send each participant a refreshed token this often (scenario time, as the \
            timings; default 5m, LiveKit's; 0s: never).
            """
    )
    var tokenRefresh: DurationArgument?
    @Option(help: "Override a timing of the dialect: NAME=DURATION, e.g. serverHeartbeatTimeout=30s (repeatable).")
    var timing: [String] = []
    @Option(help: "A JSON file {\"user\": \"token\" or [\"token\", …]}: logins and renewals must present one.")
    var auth: String?
    /// A configuration file's inline auth table, as JSON (`ServeConfiguration`); `--auth` overrides it.
    @Option(help: .hidden) var authTable: String?
    @Option(help: "Check the vendor's own tokens for this app (with --app-certificate or --server-secret).")
    var appID: String?
    @Option(help: "Agora: verify AccessToken2 and AccessToken signed with this app certificate.")
    var appCertificate: String?
    @Option(help: "ZEGO: verify token04 sealed with this server secret.") var serverSecret: String?
    @Option(
        help: """
            Serve TLS on every listener — RoomLink's protocol (clients dial tls://), LiveKit's (wss://) and the admin \
            API (https://) — with the certificate chain in this PEM file (with --tls-key).
            """
    )
    var tlsCert: String?
    @Option(help: "The private key of --tls-cert, in PEM.") var tlsKey: String?
    @Option(
        help: "Trust the certificate authorities in this PEM file, not the system's, for the https:// URLs serve calls."
    )
    var ca: String?
    @Option(help: "Close a connection that has not logged in within this time.") var loginTimeout: DurationArgument?
    @Option(help: "Close a connection whose unread output passes this size (a slow reader).")
    var maxOutput: ByteCount?
    @Option(help: "How many rooms one connection may log in to.") var maxRoomsPerConnection: Int?
    @Option(help: "How connections reach the loops: reusePort (a listener per loop) or handOff (one hands them out).")
    var accept: NetworkServer.AcceptMode?
    @Option(help: "libevent loops (threads); default one per core.") var loops: Int?
    @Option(help: "Real seconds per second of the server's timings (0.05 runs them 20 times faster).")
    var timeScale: Double?
    @Option(help: "Serve the admin API (kicks, token expiry, members, /healthz, /metrics) on HTTP at HOST:PORT.")
    var admin: String?
    @Option(help: "The admin API's bearer token; without one (or --admin-token-file) it listens on loopback only.")
    var adminToken: String?
    @Option(help: "A file whose first line is the admin API's bearer token.") var adminTokenFile: String?
    @Option(help: "Log level: trace, debug, info, notice (each closed connection's reason), warning, error.")
    var logLevel: Logger.Level?
    @Option(
        help: """
            Share presence with other nodes in Redis at redis://HOST:PORT[/DB]: several serve processes (one port \
            with SO_REUSEPORT, or several machines) act as one server (docs/redis.md).
            """
    )
    var redis: String?
    @Option(help: "This node's name in the cluster (letters, digits, -, _, .); default HOST-PID.") var nodeID: String?
    @Option(help: "How often the node refreshes its members' leases in Redis (default 2s).")
    var leasePeriod: DurationArgument?
    @OptionGroup(title: "Server capacity (docs/contract.md §9)") var serverOptions: ServerOptions
    @OptionGroup(title: "Room callbacks to the app's backend (docs/callbacks.md)") var callbackOptions: CallbackOptions

    func run() async throws {
        // Before anything can say the server is ready: a stop asked for from then on is heard.
        TerminationSignal.watch()
        // The configuration file, if any, was read into the flags before they were parsed (`ServeConfiguration`).
        var settings: ServeSettings
        do {
            settings = try ServeSettings(flags: self)
        } catch {
            throw fail(error)
        }
        let level = settings.logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        // Made after the bootstrap, so that it logs through the bootstrapped handler.
        settings.server.logger = Logger(label: "roomlink.serve")
        let openFiles = OpenFileLimit.raiseToHard()
        let group: LibeventLoopGroup
        do {
            group = try LibeventLoopGroup(
                configuration: .init(
                    loopCount: settings.loops,
                    timeScale: settings.timeScale,
                    usesPreciseTimer: true
                )
            )
        } catch {
            throw fail(error)
        }
        defer { group.shutdown() }
        var presence: RedisPresence?
        if let configuration = settings.presence {
            do {
                presence = try RedisPresence(group: group, configuration: configuration)
            } catch {
                throw fail(RoomLinkError(code: .invalidInput, field: "--redis", message: "--redis: \(error)"))
            }
            settings.server.cluster = presence
        }
        let node = ServedNode(server: try makeServer(settings, group: group), presence: presence)
        let addresses: ServedNode.Addresses
        do {
            addresses = try await node.start(
                listen: settings.listen,
                admin: settings.admin,
                adminToken: settings.adminToken
            )
        } catch {
            throw fail(Self.error(error))
        }
        announce(addresses, settings: settings, openFiles: openFiles)
        let (_, statistics) = await node.run(
            until: { await TerminationSignal.next() },
            whenStopping: { signal in
                say(
                    "roomlink serve: \(signal): stopping (goodbye to \(node.server.statistics.connectionsOpen) connections)"
                )
            }
        )
        if let presence { say("roomlink serve: \(presence.summary)") }
        if let callbacks = node.server.callbacks {
            callbacks.finish()
            say("roomlink serve: \(callbacks.statistics.summary)")
        }
        say(
            "roomlink serve: stopped — \(statistics[.connectionsAccepted]) connections, "
                + "\(statistics[.loginRequests]) logins (\(statistics[.loginsAccepted]) accepted, "
                + "\(statistics[.loginsRejected]) rejected, \(statistics[.loginsBusy]) busy), "
                + "\(statistics[.heartbeatsReceived]) heartbeats, "
                + "\(statistics.connectionsClosed(by: .protocolError)) protocol errors"
                + (settings.server.tls == nil ? "" : ", \(statistics[.tlsHandshakesFailed]) failed TLS handshakes")
        )
    }

    /// The server `settings` describe: LiveKit's protocol with its keys, or RoomLink's own.
    private func makeServer(_ settings: ServeSettings, group: LibeventLoopGroup) throws -> NetworkServer {
        var callbacks: RoomCallbacks?
        if let (callbackSettings, format) = settings.callbacks {
            do {
                callbacks = try RoomCallbacks(settings: callbackSettings, format: format, loop: group.eventLoops[0])
            } catch {
                if case .tls = error {
                    throw fail(RoomLinkError(code: .invalidInput, field: "--ca", message: "--ca: \(error)"))
                }
                throw fail(
                    RoomLinkError(code: .ioFailure, field: "--callback-truth", message: "--callback-truth: \(error)")
                )
            }
        }
        guard let keys = settings.liveKitKeys else {
            guard let callbacks else { return NetworkServer(group: group, configuration: settings.server) }
            return NetworkServer(group: group, configuration: settings.server, callbacks: callbacks)
        }
        do {
            return try NetworkServer.liveKit(
                group: group,
                configuration: settings.server,
                keys: keys,
                callbacks: callbacks,
                peerHelper: settings.peerHelper,
                pingTimeout: settings.clientSilenceTimeout,
                tokenRefresh: settings.tokenRefresh
            )
        } catch {
            if case .webhookTLS = error {
                throw fail(RoomLinkError(code: .invalidInput, field: "--ca", message: "--ca: \(error)"))
            }
            throw fail(RoomLinkError(code: .invalidInput, field: "--webhook-key", message: "--webhook-key: \(error)"))
        }
    }

    /// What a failed start is, as the CLI reports it: a node ID in use is the flag's fault; the rest, I/O's.
    private static func error(_ failure: ServedNode.StartFailure) -> RoomLinkError {
        if case .nodeIDInUse = failure {
            return RoomLinkError(code: .invalidInput, field: "--node-id", message: failure.description)
        }
        if case .listen(.tls(let error)) = failure {
            return RoomLinkError(code: .invalidInput, field: "--tls-cert", message: "--tls-cert/--tls-key: \(error)")
        }
        return RoomLinkError(code: .ioFailure, message: failure.description)
    }

    /// The lines that say the node serves: the admin API, the cluster, and then — the line a script waits for —
    /// the dialect, the address and the loops.
    private func announce(_ addresses: ServedNode.Addresses, settings: ServeSettings, openFiles: Int) {
        if let admin = addresses.admin {
            let loopbackOnly = settings.adminToken == nil ? " (no token: loopback only)" : ""
            let scheme = settings.server.tls == nil ? "http" : "https"
            say("roomlink serve: admin API on \(scheme)://\(admin)\(loopbackOnly)")
        }
        if let presence = settings.presence {
            say(
                "roomlink serve: node \(presence.nodeID), presence in \(presence.endpoint)"
                    + (addresses.presenceReached ? "" : " (not reachable yet: logins are answered busy until it is)")
            )
        }
        let connections = OpenFileLimit.connections(loops: settings.loops, reserve: OpenFileLimit.serverReserve)
        say(
            "roomlink serve: \(settings.server.dialect.rawValue)\(settings.liveKitKeys == nil ? "" : " (LiveKit's protocol)") "
                + "on \(addresses.server)\(settings.server.tls == nil ? "" : " over TLS") — \(settings.loops) loops "
                + "(\(settings.server.acceptMode.rawValue)); open-file limit \(openFiles): up to \(connections) "
                + "connections"
        )
    }

    /// One line on standard output, written at once (a script waits for the first to learn the port).
    private func say(_ line: String) {
        StandardStream.output.write(line + "\n")
    }
}

extension NetworkServer.AcceptMode: ExpressibleByArgument {}

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// The wire protocols `roomlink serve` speaks.
enum ServedWireProtocol: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// RoomLink's own (docs/protocol.md).
    case roomlink
    /// LiveKit's signalling and access tokens (docs/livekit.md).
    case livekit
}
