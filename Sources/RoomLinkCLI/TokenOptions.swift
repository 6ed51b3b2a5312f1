import ArgumentParser
import Foundation
import RoomLink
import RoomLinkTokens

/// Where `run` and `load` clients get their tokens, as apps do: minted with the project's keys, fetched from the
/// app's own token server (`--token-url`), or from a modelled one (`--token-server`) (docs/cli.md, "Tokens").
struct TokenOptions: ParsableArguments {
    @Option(
        help: """
            The app's ID: with --app-certificate (Agora) or --server-secret (ZEGO), the clients mint the vendor's \
            tokens (AccessToken2, token04), and the in-process server verifies them as the vendor's cloud does.
            """
    )
    var appID: String?
    @Option(help: "Agora's app certificate, with --app-id.") var appCertificate: String?
    @Option(help: "ZEGO's server secret (32 characters), with --app-id (a number).") var serverSecret: String?
    @Option(help: "How long each minted token is good for (Agora's join privilege lasts as long).")
    var tokenLifetime: DurationArgument?

    @Option(
        help: """
            Fetch each client's token from the app's token server: GET URL with {user}, {room} and {dialect} filled \
            in; the answer is JSON {"token": "…"} or the token as text. Before a login, when a login with an old \
            token is refused, and when the server says the token will expire. http:// or https://; real clock only.
            """
    )
    var tokenURL: String?
    @Option(help: "With --token-url: how long a client waits for a token (default 5s).") var tokenTimeout:
        DurationArgument?
    @Option(help: "With an https:// --token-url: trust the authorities in this PEM file instead of the system's.")
    var tokenCA: String?
    @Option(help: "With --token-url: kept-alive connections to the token server per loop (default 8).")
    var tokenConnections: Int?

    @Option(
        help: """
            Fetch tokens from a modelled token server: latency=DURATION,capacity=PER_SECOND,failures=SHARE,\
            timeout=DURATION (any of them; default latency=20ms, no capacity limit, no failures, timeout=5s). It \
            hands out minted tokens with --app-id, opaque ones without.
            """
    )
    var tokenServer: String?

    /// What the flags ask for, checked against the scenario's dialect and whether a server is remote; `nil` when no
    /// token flag was given.
    func settings(dialect: DialectName, remote: Bool) throws(RoomLinkError) -> TokenSettings? {
        func invalid(_ flag: String, _ message: String) -> RoomLinkError {
            RoomLinkError(code: .invalidInput, field: flag, message: "\(flag): \(message)")
        }
        let vendor = try TokenCommand.Vendor.parse(
            dialect: dialect.rawValue,
            appID: appID,
            certificate: appCertificate,
            secret: serverSecret
        )
        let minter = vendor.map { vendor -> VendorTokenMinter in
            switch vendor {
            case .agora(let certificate): VendorTokenMinter(.agora(appID: appID!, certificate: certificate))
            case .zego(let number, let secret): VendorTokenMinter(.zego(appID: number, secret: secret))
            }
        }
        if let tokenLifetime {
            guard minter != nil else { throw invalid("--token-lifetime", "is for minted tokens: give --app-id") }
            let seconds = tokenLifetime.duration.components.seconds
            guard seconds >= 1, seconds <= Int64(UInt32.max) else {
                throw invalid(
                    "--token-lifetime",
                    "a whole number of seconds from 1 s to 136 years, not \(tokenLifetime)"
                )
            }
        }
        for (flag, given) in [
            ("--token-timeout", tokenTimeout != nil), ("--token-ca", tokenCA != nil),
            ("--token-connections", tokenConnections != nil),
        ] where given && tokenURL == nil {
            throw invalid(flag, "needs --token-url")
        }
        if tokenURL != nil, tokenServer != nil {
            throw invalid("--token-server", "models a token server; --token-url is a real one: give one of them")
        }
        var source: TokenSettings.Source
        if let tokenURL {
            let endpoint = try HTTPTokenSource.Endpoint(parsing: tokenURL)
            if tokenCA != nil, !endpoint.isSecure { throw invalid("--token-ca", "the --token-url is not https://") }
            if let tokenConnections, !(1...1024).contains(tokenConnections) {
                throw invalid("--token-connections", "1 to 1024, not \(tokenConnections)")
            }
            let timeout = tokenTimeout?.duration ?? .seconds(5)
            guard timeout > .zero else { throw invalid("--token-timeout", "must be above 0") }
            source = .url(endpoint, timeout: timeout, ca: tokenCA, connections: tokenConnections ?? 8)
        } else if let tokenServer {
            source = .modelled(try ModelledTokenServer.Model(parsing: tokenServer))
        } else if minter != nil {
            source = .minted
        } else {
            return nil
        }
        if dialect == .livekit, minter == nil, case .modelled = source, remote {
            throw invalid("--token-server", "hands LiveKit's clients opaque tokens, which a LiveKit server refuses")
        }
        return TokenSettings(
            source: source,
            minter: minter,
            lifetime: tokenLifetime?.duration ?? .seconds(3600),
            verifiesInProcess: !remote
        )
    }
}

/// The clients' token supply as the flags set it (``TokenOptions``).
struct TokenSettings: Sendable {
    enum Source: Sendable {
        case minted
        case url(HTTPTokenSource.Endpoint, timeout: Duration, ca: String?, connections: Int)
        case modelled(ModelledTokenServer.Model)
    }

    var source: Source
    var minter: VendorTokenMinter?
    var lifetime: Duration
    /// Whether the in-process server checks the minted tokens (no `--server`).
    var verifiesInProcess: Bool

    /// The run's token plan on `group`, its Unix time taken from the wall clock now; the token server probed first
    /// (`--token-url`): one that cannot be reached is an error naming it.
    func plan(
        on group: any RuntimeLoopGroup,
        seed: UInt64,
        dialect: DialectName
    ) async throws(RoomLinkError) -> ScenarioRunner.TokenPlan {
        let unixTimeAtZero = Int64(Date().timeIntervalSince1970) - group.now.nanoseconds / 1_000_000_000
        let minted = minter.map {
            MintedTokenSource(minter: $0, lifetime: lifetime, unixTimeAtZero: unixTimeAtZero)
        }
        let verified =
            verifiesInProcess
            ? minter.map { VerifiedTokens(verifier: $0.verifier, unixTimeAtZero: unixTimeAtZero) } : nil
        switch source {
        case .minted:
            guard let minted else { preconditionFailure("minted tokens without keys") }
            return ScenarioRunner.TokenPlan(source: { _ in minted }, verified: verified)
        case .modelled(let model):
            return ScenarioRunner.TokenPlan(
                source: { loops in ModelledTokenServer(model: model, loops: loops, seed: seed, tokens: minted) },
                verified: verified
            )
        case .url(let endpoint, let timeout, let ca, let connections):
            guard let loops = group as? LibeventLoopGroup else {
                throw RoomLinkError(
                    code: .invalidInput,
                    field: "--token-url",
                    message: "--token-url: a real token server is fetched on the real clock: add --clock real"
                )
            }
            let source: HTTPTokenSource
            do {
                source = try HTTPTokenSource(
                    endpoint: endpoint,
                    timeout: timeout,
                    connectionsPerLoop: connections,
                    tls: TLSClientConfiguration(caFile: ca)
                )
            } catch {
                throw RoomLinkError(code: .invalidInput, field: "--token-ca", message: "--token-ca: \(error)")
            }
            if let failure = await source.probe(on: loops.eventLoops[0], dialect: dialect) {
                throw RoomLinkError(
                    code: .invalidInput,
                    field: "--token-url",
                    message: "--token-url: \(endpoint) cannot be reached: \(failure)"
                )
            }
            return ScenarioRunner.TokenPlan(source: { _ in source }, verified: verified)
        }
    }
}
