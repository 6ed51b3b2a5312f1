import ArgumentParser
import RoomLink

/// `--server`: play against `roomlink serve` over TCP instead of an in-process server, for `run` and `load`.
struct RemoteOptions: ParsableArguments {
    @Option(
        help: """
            Play against `roomlink serve` at HOST:PORT over TCP, on the real clock (scaled by --time-scale; the server \
            needs the same scale and timings), instead of an in-process server. A list (a:7800,b:7800) names the \
            nodes of one cluster (serve --redis): each client starts on one and moves to the next when its \
            connection fails.
            """
    )
    var server: String?

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

    /// The servers' addresses, checked; `nil` without `--server`.
    func addresses() throws(RoomLinkError) -> [SocketAddress]? {
        for (flag, value) in [("--server-admin", serverAdmin), ("--server-admin-token", serverAdminToken)]
        where value != nil && server == nil {
            throw RoomLinkError(code: .invalidInput, field: flag, message: "\(flag) needs --server")
        }
        guard let server else { return nil }
        let parts = server.split(separator: ",", omittingEmptySubsequences: false)
        var addresses: [SocketAddress] = []
        for part in parts {
            let text = part.filter { $0 != " " }
            guard !text.isEmpty else {
                throw RoomLinkError(
                    code: .invalidInput,
                    field: "--server",
                    message: "--server: an empty address in '\(server)'"
                )
            }
            addresses.append(try Self.parse(text, flag: "--server"))
        }
        return addresses
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
        guard let servers = try addresses() else {
            if comparison?.compareWithVirtual == true {
                throw RoomLinkError(
                    code: .invalidInput,
                    field: "--compare-with-virtual",
                    message: "--compare-with-virtual needs --server"
                )
            }
            return
        }
        let target = TCPServerTarget(
            servers: servers,
            admin: try adminAddress(),
            adminToken: serverAdminToken,
            sourceAddresses: try sources()
        )
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
