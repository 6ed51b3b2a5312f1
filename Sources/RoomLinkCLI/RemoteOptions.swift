public import ArgumentParser
import RoomLink
import RoomLinkLiveKit

/// `--server`: play against `roomlink serve` over TCP instead of an in-process server, for `run` and `load`.
struct RemoteOptions: ParsableArguments {
    @Option(
        help: """
            Play against `roomlink serve` at HOST:PORT over TCP, on the real clock (scaled by --time-scale; the server \
            needs the same scale and timings), instead of an in-process server; tls://HOST:PORT over TLS. A list \
            (a:7800,b:7800) names the nodes of one cluster (serve --redis): each client starts on one and moves to \
            the next when its connection fails.
            """
    )
    var server: String?

    @Option(
        help: """
            With a TLS --server (tls://, wss://): trust the certificate authorities in this PEM file instead of the \
            system's. A server certificate that does not verify is a failed connection, never plain text.
            """
    )
    var ca: String?

    @Option(
        help: "The server's admin API, HOST:PORT: where the scenario's kicks, reconnect requests and token expiries go."
    )
    var serverAdmin: String?

    @Option(help: "The admin API's bearer token.") var serverAdminToken: String?
    @Option(
        help: """
            Local addresses the clients' connections leave from, spread over by client: a range (127.0.0.2-127.0.0.40) \
            or a list (a,b,c), to open more connections than one address's ephemeral ports allow.
            """
    )
    var sourceAddresses: String?
    @Option(
        help: """
            With several --server nodes, which one each client's connection goes to: client (picked by the client's \
            ID, the default: every node keeps every room it has a member of whole) or room (every client of a room \
            on one node, as LiveKit routes a room: a node keeps only the members it serves). A failed connection \
            moves on to the next node either way.
            """
    )
    var route: ServerRouting?
    @Option(
        name: .customLong("protocol"),
        help: """
            The server's wire protocol: roomlink (the default), or livekit — LiveKit's signalling, a WebSocket to \
            GET /rtc per room with an access token minted from --keys, for any LiveKit-protocol server (roomlink \
            serve --protocol livekit, livekit-server); --server may then be ws://HOST:PORT (docs/livekit.md).
            """
    )
    var wireProtocol: ServedWireProtocol?
    @Option(help: "With --protocol livekit: the API key and secret, KEY:SECRET, that sign the clients' tokens.")
    var keys: String?

    /// The servers' addresses, checked, and whether they speak TLS; `nil` without `--server`.
    func addresses() throws(RoomLinkError) -> (servers: [SocketAddress], tls: TLSClientConfiguration?)? {
        for (flag, value) in [
            ("--server-admin", serverAdmin), ("--server-admin-token", serverAdminToken), ("--route", route?.rawValue),
            ("--protocol", wireProtocol?.rawValue), ("--keys", keys), ("--ca", ca),
        ]
        where value != nil && server == nil {
            throw RoomLinkError(code: .invalidInput, field: flag, message: "\(flag) needs --server")
        }
        guard let server else { return nil }
        let parts = server.split(separator: ",", omittingEmptySubsequences: false)
        var addresses: [SocketAddress] = []
        var secure: Bool?
        for part in parts {
            var text = part.filter { $0 != " " }
            var isTLS = false
            for scheme in ["ws://", "wss://", "tls://", "http://", "https://"] where text.lowercased().hasPrefix(scheme)
            {
                // LiveKit's URLs are ws:// and wss:// (its SDKs and tools are given them); RoomLink's over TLS is
                // tls://.
                let liveKit = wireProtocol == .livekit
                let fits = liveKit ? scheme == "ws://" || scheme == "wss://" : scheme == "tls://"
                guard fits else {
                    throw RoomLinkError(
                        code: .invalidInput,
                        field: "--server",
                        message: liveKit
                            ? "--server: '\(part)': LiveKit's protocol takes ws://, wss:// or HOST:PORT"
                            : scheme.hasPrefix("ws")
                                ? "--server: a \(scheme) URL is LiveKit's: add --protocol livekit"
                                : "--server: '\(part)': RoomLink's protocol takes tls://HOST:PORT or HOST:PORT"
                    )
                }
                isTLS = scheme != "ws://"
                text = String(text.dropFirst(scheme.count))
                if text.hasSuffix("/") { text.removeLast() }
            }
            if let secure, secure != isTLS {
                throw RoomLinkError(
                    code: .invalidInput,
                    field: "--server",
                    message:
                        "--server: '\(server)' mixes TLS and plain addresses: a cluster's nodes speak one or the other"
                )
            }
            secure = isTLS
            guard !text.isEmpty else {
                throw RoomLinkError(
                    code: .invalidInput,
                    field: "--server",
                    message: "--server: an empty address in '\(server)'"
                )
            }
            addresses.append(try Self.parse(text, flag: "--server"))
        }
        if secure != true, ca != nil {
            throw RoomLinkError(
                code: .invalidInput,
                field: "--ca",
                message: "--ca: the server is not a TLS one (give tls://HOST:PORT, or wss:// with --protocol livekit)"
            )
        }
        return (addresses, secure == true ? TLSClientConfiguration(caFile: ca) : nil)
    }

    /// `--source-addresses`, expanded: every address of each range, in order.
    func sources() throws(RoomLinkError) -> [String] {
        guard let sourceAddresses else { return [] }
        do {
            return try SourceAddresses.expand(sourceAddresses)
        } catch {
            throw RoomLinkError(
                code: .invalidInput,
                field: "--source-addresses",
                message: "--source-addresses: \(error)"
            )
        }
    }

    /// The transport of LiveKit's signalling to `servers`, its tokens signed by `keys` (one `KEY:SECRET`).
    private static func liveKit(
        servers: [SocketAddress],
        keys: String?,
        sources: [String],
        routing: ServerRouting,
        tls: TLSClientConfiguration?
    ) throws(RoomLinkError)
        -> @Sendable (any ConnectionObserver) throws(RoomLinkError) -> any ClientTransport
    {
        guard let keys else {
            throw RoomLinkError(
                code: .invalidInput,
                field: "--keys",
                message: "--protocol livekit needs --keys KEY:SECRET (the clients' tokens are signed with it), "
                    + "or --token-url (the app's token server makes them)"
            )
        }
        let key: (name: String, secret: String)
        do {
            let parsed = try LiveKitKeys(parsing: [keys])
            key = (parsed.secrets.keys.first!, parsed.secrets.values.first!)
        } catch {
            throw RoomLinkError(code: .invalidInput, field: "--keys", message: "--keys: \(error.description)")
        }
        return { observer throws(RoomLinkError) in
            do throws(NetworkError) {
                return try LiveKitClientTransport(
                    servers: servers,
                    apiKey: key.name,
                    secret: key.secret,
                    configuration: .init(sourceAddresses: sources, observer: observer, routing: routing, tls: tls)
                )
            } catch {
                throw RoomLinkError(code: .invalidInput, field: "server", message: "server: \(error.description)")
            }
        }
    }

    /// The admin API's address, checked.
    func adminAddress() throws(RoomLinkError) -> SocketAddress? {
        try serverAdmin.map { text throws(RoomLinkError) in try Self.parse(text, flag: "--server-admin") }
    }

    private static func parse(_ text: String, flag: String) throws(RoomLinkError) -> SocketAddress {
        do {
            return try SocketAddress(parsing: text)
        } catch {
            throw RoomLinkError(code: .invalidInput, field: flag, message: "\(flag): \(error.description)")
        }
    }

    /// Points `playback` at the server, when `--server` is given, after checking that `scenario` can play against
    /// it; with `comparison` (`run`'s flags) the real run is compared with its simulation.
    func configure(
        _ playback: inout Playback,
        for scenario: Scenario,
        capacityFlags: ServerOptions,
        comparison: ComparisonOptions? = nil
    ) throws(RoomLinkError) {
        guard let (servers, tls) = try addresses() else {
            if comparison?.compareWithVirtual == true {
                throw RoomLinkError(
                    code: .invalidInput,
                    field: "--compare-with-virtual",
                    message: "--compare-with-virtual needs --server"
                )
            }
            return
        }
        let sourceAddresses = try sources()
        let routing = route ?? .byClient
        var target = TCPServerTarget(
            servers: servers,
            admin: try adminAddress(),
            adminToken: serverAdminToken,
            sourceAddresses: sourceAddresses,
            routing: routing,
            tls: tls
        )
        if wireProtocol == .livekit {
            target.makeTransport = try Self.liveKit(
                servers: servers,
                // With fetched tokens every login carries its own, and the key signs none: any key will do.
                keys: keys ?? (playback.tokens.map { _ in "unused:fetched-tokens-are-signed-by-the-token-server" }),
                sources: sourceAddresses,
                routing: routing,
                tls: tls
            )
            guard scenario.dialect == .livekit else {
                throw RoomLinkError(
                    code: .invalidInput,
                    field: "--protocol",
                    message: "--protocol livekit: LiveKit's protocol carries the livekit dialect, and the scenario's "
                        + "is \(scenario.dialect.rawValue)"
                )
            }
        } else if keys != nil {
            throw RoomLinkError(code: .invalidInput, field: "--keys", message: "--keys needs --protocol livekit")
        }
        try Self.check(scenario, against: target, capacityFlags: capacityFlags)
        playback.remote = target
        if let comparison, comparison.compareWithVirtual { playback.compareWithin = comparison.tolerance.duration }
    }

    /// Checks that `scenario` can run against `target` (``TCPServerTarget/check(_:)``: its server-side actions need
    /// the admin API), and that no capacity flag was given: a server's capacity is the server's own (`roomlink serve
    /// --server-capacity`).
    static func check(
        _ scenario: Scenario,
        against target: TCPServerTarget,
        capacityFlags: ServerOptions
    ) throws(RoomLinkError) {
        do {
            try target.check(scenario)
        } catch {
            throw RoomLinkError(
                code: .invalidInput,
                field: "--server-admin",
                message: error.message + ": give --server-admin HOST:PORT (roomlink serve --admin)"
            )
        }
        let flags = capacityFlags
        if flags.serverNodes != nil || flags.serverCapacity != nil || flags.admission != nil || flags.maxQueue != nil
            || flags.shedExpired
        {
            throw RoomLinkError(
                code: .invalidInput,
                field: "--server",
                message: "--server: the remote server's capacity is its own; give these flags to roomlink serve"
            )
        }
    }
}

/// `run`'s check of a real run against its simulation (`load`'s event log is too large to compare).
struct ComparisonOptions: ParsableArguments {
    @Flag(
        help: """
            With --server: also play the scenario in virtual time, and compare: each user must be told the same \
            things in the same order, each within --tolerance of virtual time and never early (docs/protocol.md).
            """
    )
    var compareWithVirtual = false

    @Option(help: "How much later than in virtual time the real run may tell a user anything (--compare-with-virtual).")
    var tolerance = DurationArgument("2s")
}

extension ServerRouting: ExpressibleByArgument {}
