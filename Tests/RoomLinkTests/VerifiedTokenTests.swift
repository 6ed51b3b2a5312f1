import Foundation
import RoomLink
import RoomLinkRuntime
import RoomLinkTestSupport
import RoomLinkTokens
import Testing

/// A server that checks the vendor's own tokens (``VerifiedTokens``), in virtual time: a login with a token that
/// does not verify is refused with the dialect's code; a member is warned the renewal grace before its token's own
/// expiry and removed at it; a renewal with a token that verifies moves both, and one that does not changes nothing.
@Suite(.hangLimit(minutes: 10))
struct VerifiedTokenTests {
    static let appID = "970CA35de60c44645bbae8a215061b33"
    static let certificate = "5CFd2fd1755d40ecb72977518be15d3b"
    /// The Unix time of the simulation's zero instant.
    static let start: UInt32 = 1_700_000_000

    static func agoraToken(
        user: String,
        channel: String = "c1",
        issuedAfter seconds: UInt32 = 0,
        lifetime: UInt32 = 100,
        certificate: String = certificate
    ) throws -> String {
        try AgoraAccessToken2.make(
            appID: appID,
            certificate: certificate,
            channel: channel,
            user: user,
            issuedAt: start + seconds,
            lifetime: lifetime,
            privileges: [.joinChannel: lifetime]
        )
    }

    @Test func agoraTokensAreVerifiedAndTheirExpiryDrivesTheWarningAndTheKick() async throws {
        let lines = try await SimulationRuntime.withSimulation(seed: 1) { simulation in
            try await simulation.run {
                let network = SimulatedNetwork(conditions: Scenario.Network(), seed: 1)
                let tokens = VerifiedTokens(
                    verifier: AgoraTokenVerifier(appID: Self.appID, certificate: Self.certificate),
                    unixTimeAtZero: Int64(Self.start)
                )
                let server = RoomServer(group: simulation, transport: network, timings: .agora, tokens: tokens)
                let events = EventCollector()
                let environment = AgoraClient.Environment(transport: network, sink: events.typed())
                let clients = ["A", "B", "C", "D", "E"].map {
                    AgoraClient(id: $0, loop: simulation.loops[0], environment: environment)
                }
                let (a, b, c, d, e) = (clients[0], clients[1], clients[2], clients[3], clients[4])
                await a.joinChannel("c1", token: try Self.agoraToken(user: "A"))
                await b.joinChannel("c1", token: try Self.agoraToken(user: "B"))
                let forged = try Self.agoraToken(user: "C", certificate: String(repeating: "0", count: 32))
                await c.joinChannel("c1", token: forged)
                await d.joinChannel("c1", token: try Self.agoraToken(user: "D", channel: "c2"))
                // E's token has a second left: less than the grace, so the warning comes at once.
                await e.joinChannel("c1", token: try Self.agoraToken(user: "E", issuedAfter: 0, lifetime: 1))
                try await simulation.sleep(until: .zero.advanced(by: .seconds(60)))
                // B renews with a token of its own, valid 100 s from now; A tries another user's.
                await b.renewToken(try Self.agoraToken(user: "B", issuedAfter: 60))
                await a.renewToken(try Self.agoraToken(user: "B", issuedAfter: 60))
                try await simulation.sleep(until: .zero.advanced(by: .seconds(200)))
                for client in clients { await client.shutdown() }
                _ = server
                return events.lines
            }
        }
        // Each token's times, plus the 50 ms its warning and its kick take to reach the client.
        #expect(lines.contains("200 A c1 connectionState connected joinSuccess"))
        #expect(lines.contains("70050 A c1 tokenPrivilegeWillExpire"), "30 s before its 100 s")
        // A's renewal with B's token was refused and changed nothing.
        #expect(lines.contains("100050 A c1 connectionState failed tokenExpired"))
        #expect(!lines.contains("70050 B c1 tokenPrivilegeWillExpire"), "B renewed before its warning")
        #expect(lines.contains("130050 B c1 tokenPrivilegeWillExpire"))
        #expect(lines.contains("160050 B c1 connectionState failed tokenExpired"))
        #expect(lines.contains("200 C c1 connectionState disconnected invalidToken"), "another certificate")
        #expect(lines.contains("200 D c1 connectionState disconnected invalidToken"), "another channel")
        #expect(lines.contains("200 E c1 tokenPrivilegeWillExpire"))
        #expect(lines.contains("1050 E c1 connectionState failed tokenExpired"))
        #expect(lines.filter { $0.contains("tokenPrivilegeWillExpire") }.count == 3)
    }
}
