import Foundation
import RoomLink
import RoomLinkNetwork
import RoomLinkTestSupport
import Testing

/// The test certificates (`scripts/make-test-certificates`): a test authority, a server certificate for localhost
/// and 127.0.0.1 it signed, and the ones that must not verify.
enum TLSFixtures {
    static func path(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/tls/\(name)").path
    }

    /// The server's side, with certificate `name` (`server`, `untrusted`, `expired`, `elsewhere`).
    static func server(_ name: String = "server") -> TLSServerConfiguration {
        TLSServerConfiguration(certificateFile: path("\(name).pem"), keyFile: path("\(name)-key.pem"))
    }

    /// The client's side, trusting the test authority (or `ca`).
    static func client(ca: String = "ca.pem", serverName: String? = nil) -> TLSClientConfiguration {
        TLSClientConfiguration(caFile: path(ca), serverName: serverName)
    }
}

/// RoomLink's protocol over TLS (libevent's OpenSSL bufferevents): a client that trusts the server's certificate
/// logs in as over TCP; one that cannot verify it fails its connection, by a cause of its own, and never speaks plain
/// text; a server drops a connection that does not speak TLS and goes on serving the others. Counts and causes only.
@Suite(.hangLimit(minutes: 10))
struct TLSTests {
    static func tlsServer(
        on group: LibeventLoopGroup,
        certificate: String = "server"
    ) async throws -> (NetworkServer, SocketAddress) {
        var configuration = NetworkServer.Configuration(dialect: .zego)
        configuration.tls = TLSFixtures.server(certificate)
        return try await NetworkTest.server(on: group, configuration)
    }

    static func transport(
        to address: SocketAddress,
        tls: TLSClientConfiguration?,
        observer: ConnectionStatistics
    ) throws -> TCPClientTransport {
        try TCPClientTransport(
            servers: [address],
            dialect: .zego,
            configuration: .init(observer: observer, tls: tls)
        )
    }

    @Test func clientsLogInOverTLSAndSeeEachOther() async throws {
        try await NetworkTest.withGroup { group in
            let (server, address) = try await Self.tlsServer(on: group)
            let statistics = ConnectionStatistics(origin: group.now)
            let transport = try Self.transport(to: address, tls: TLSFixtures.client(), observer: statistics)
            let alice = ConnectionMetricsTests.client("alice", on: group, transport: transport)
            let bob = ConnectionMetricsTests.client("bob", on: group, transport: transport)
            #expect(await alice.loginRoom("room-1", config: ZegoRoomConfig(isUserStatusNotify: true)) == .success)
            #expect(await bob.loginRoom("room-1") == .success)
            try await NetworkTest.until("both are in, and alice is told bob came") {
                ConnectionReport(statistics.tally(end: 1)).loggedIn >= 2 && server.statistics[.presenceChangesSent] >= 1
            }
            let report = ConnectionReport(statistics.tally(end: 1))
            #expect(report.loggedIn >= 2)
            #expect(report.failures["certificate"] == nil && report.failures["tlsHandshake"] == nil)
            #expect(server.statistics[.loginsAccepted] >= 2)
            #expect(server.statistics[.tlsHandshakesFailed] == 0)
            await alice.shutdown()
            await bob.shutdown()
            await transport.close()
            await server.shutdown()
        }
    }

    /// Each way a certificate fails to verify — an authority the client does not trust, a certificate past its
    /// date, one for another name — is `certificate`, and no login reaches the server.
    @Test(
        arguments: [
            ("server", "other-ca.pem", nil),
            ("untrusted", "ca.pem", nil),
            ("expired", "ca.pem", nil),
            ("elsewhere", "ca.pem", nil),
            ("server", "ca.pem", "elsewhere.example"),
        ] as [(String, String, String?)]
    )
    func aCertificateThatDoesNotVerifyIsAFailedConnection(
        certificate: String,
        ca: String,
        serverName: String?
    ) async throws {
        try await NetworkTest.withGroup { group in
            let (server, address) = try await Self.tlsServer(on: group, certificate: certificate)
            let statistics = ConnectionStatistics(origin: group.now)
            let tls = TLSFixtures.client(ca: ca, serverName: serverName)
            let transport = try Self.transport(to: address, tls: tls, observer: statistics)
            let carol = ConnectionMetricsTests.client("carol", on: group, transport: transport)
            #expect(await carol.loginRoom("room-1") == .success)
            try await NetworkTest.until("carol's connection fails on the certificate") {
                (statistics.tally(end: 1).failures["certificate"] ?? 0) >= 1
            }
            let report = ConnectionReport(statistics.tally(end: 1))
            #expect(report.opened == 0 && report.loggedIn == 0)
            #expect(server.statistics[.loginRequests] == 0, "nothing crossed in plain text")
            await carol.shutdown()
            await transport.close()
            await server.shutdown()
        }
    }

    /// A client that speaks plain TCP to a TLS server is dropped (its hello is no TLS handshake), counted, and a TLS
    /// client that comes after it is served.
    @Test func aPlainClientIsDroppedAndTheOthersAreServed() async throws {
        try await NetworkTest.withGroup { group in
            let (server, address) = try await Self.tlsServer(on: group)
            let plainStatistics = ConnectionStatistics(origin: group.now)
            let plain = try Self.transport(to: address, tls: nil, observer: plainStatistics)
            let dave = ConnectionMetricsTests.client("dave", on: group, transport: plain)
            #expect(await dave.loginRoom("room-1") == .success)
            try await NetworkTest.until("the server drops dave's plain connection") {
                server.statistics[.tlsHandshakesFailed] >= 1
            }
            #expect(server.statistics[.loginRequests] == 0)
            await dave.shutdown()
            await plain.close()

            let statistics = ConnectionStatistics(origin: group.now)
            let secure = try Self.transport(to: address, tls: TLSFixtures.client(), observer: statistics)
            let erin = ConnectionMetricsTests.client("erin", on: group, transport: secure)
            #expect(await erin.loginRoom("room-1") == .success)
            try await NetworkTest.until("erin logs in") { ConnectionReport(statistics.tally(end: 1)).loggedIn >= 1 }
            await erin.shutdown()
            await secure.close()
            await server.shutdown()
        }
    }

    /// A TLS client at a plain server fails its handshake: never a login, and never a silent plain-text fallback.
    @Test func aTLSClientAtAPlainServerFailsItsHandshake() async throws {
        try await NetworkTest.withGroup { group in
            let (server, address) = try await NetworkTest.server(on: group)
            let statistics = ConnectionStatistics(origin: group.now)
            let transport = try Self.transport(to: address, tls: TLSFixtures.client(), observer: statistics)
            let frank = ConnectionMetricsTests.client("frank", on: group, transport: transport)
            #expect(await frank.loginRoom("room-1") == .success)
            try await NetworkTest.until("frank's attempt fails") {
                statistics.tally(end: 1).failures.values.reduce(0, +) >= 1
            }
            let report = ConnectionReport(statistics.tally(end: 1))
            #expect(report.opened == 0 && report.loggedIn == 0)
            #expect(server.statistics[.loginRequests] == 0)
            await frank.shutdown()
            await transport.close()
            await server.shutdown()
        }
    }

    /// What cannot be read is named before anything listens: the file and OpenSSL's reason.
    @Test func unreadableCertificatesAndMismatchedKeysAreNamed() async throws {
        try await NetworkTest.withGroup { group in
            var configuration = NetworkServer.Configuration(dialect: .zego)
            configuration.tls = TLSServerConfiguration(
                certificateFile: TLSFixtures.path("missing.pem"),
                keyFile: TLSFixtures.path("server-key.pem")
            )
            let missing = NetworkServer(group: group, configuration: configuration)
            await #expect {
                _ = try await missing.listen(on: SocketAddress(host: "127.0.0.1", port: 0))
            } throws: { error in
                guard case NetworkError.tls(.cannotReadCertificate(let file, _)) = error else { return false }
                return file.hasSuffix("missing.pem")
            }
            configuration.tls = TLSServerConfiguration(
                certificateFile: TLSFixtures.path("server.pem"),
                keyFile: TLSFixtures.path("expired-key.pem")
            )
            let mismatched = NetworkServer(group: group, configuration: configuration)
            await #expect {
                _ = try await mismatched.listen(on: SocketAddress(host: "127.0.0.1", port: 0))
            } throws: { error in
                guard case NetworkError.tls(.keyDoesNotMatchCertificate) = error else { return false }
                return true
            }
        }
        #expect(throws: NetworkError.self) {
            _ = try TCPClientTransport(
                servers: [SocketAddress(host: "127.0.0.1", port: 1)],
                dialect: .zego,
                configuration: .init(tls: TLSFixtures.client(ca: "missing-ca.pem"))
            )
        }
    }
}
