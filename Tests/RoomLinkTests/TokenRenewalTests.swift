import Foundation
import RoomLink
import RoomLinkTestSupport
import Testing

/// A token renewal must present a token the server accepts for that user — listed in the auth table when there is
/// one, not empty, not expired — or it is refused, changes nothing, and the expiry it answered kicks the user at the
/// grace's end. In every dialect: the rule is the server's.
@Suite(.hangLimit(minutes: 10))
struct TokenRenewalTests {
    /// How each dialect says "your token expired and you are out": the end of a compact log line.
    static func kicked(_ dialect: String) -> String {
        switch dialect {
        case "agora": "connectionState failed tokenExpired"
        case "livekit": "disconnected participantRemoved"
        default: "kickOut 1002056"
        }
    }

    /// A's token expires at 60 s and A renews with `token` at 75 s (within the 30 s grace); at 3 m A logs in again
    /// (after a kick) or stays. `auth` is the scenario's table (JSON), or none.
    static func run(dialect: String, auth: String?, renewal: String) async throws -> [String] {
        let login = #"{ "at": "0s", "user": "A", "action": "login", "room": "r1" }"#
        let json = """
            { "dialect": "\(dialect)", "seed": 3, "network": { "latency": "50ms" },
              \(auth.map { #""auth": \#($0),"# } ?? "")
              "users": [ { "id": "A", "token": "t1" }, { "id": "B", "token": "b1" } ],
              "timeline": [
                \(login),
                { "at": "0s", "user": "B", "action": "login", "room": "r1" },
                { "at": "60s", "user": "A", "action": "expireToken" },
                { "at": "75s", "user": "A", "action": "renewToken", "token": "\(renewal)" }
              ],
              "end": "3m" }
            """
        let (events, report) = try await ScenarioHarness.run(json)
        #expect(report.violations == 0, "\(report.violationSample)")
        return events.lines(of: "A")
    }

    static let auth = #"{ "A": ["t1", "t2"], "B": "b1" }"#

    @Test(arguments: ["zego", "agora", "livekit"])
    func aRenewalWithAnotherOfTheUsersTokensIsAccepted(_ dialect: String) async throws {
        let lines = try await Self.run(dialect: dialect, auth: Self.auth, renewal: "t2")
        #expect(!lines.contains { $0.hasSuffix(Self.kicked(dialect)) }, "\(lines)")
    }

    /// A token the table does not list for the user — someone else's, made up — or the very token that expired is
    /// refused: the user is kicked at the grace's end as if it had not renewed.
    @Test(arguments: ["zego", "agora", "livekit"], ["b1", "made-up", "t1"])
    func aRenewalWithATokenTheTableDoesNotAcceptIsRefused(_ dialect: String, _ token: String) async throws {
        let lines = try await Self.run(dialect: dialect, auth: Self.auth, renewal: token)
        #expect(lines.contains { $0.hasSuffix(Self.kicked(dialect)) }, "\(lines)")
    }

    /// Without a table the server checks only that a renewal brings a token, and not the one that expired.
    @Test(arguments: ["zego", "agora", "livekit"])
    func withoutATableAnyNewTokenRenews(_ dialect: String) async throws {
        let renewed = try await Self.run(dialect: dialect, auth: nil, renewal: "anything")
        #expect(!renewed.contains { $0.hasSuffix(Self.kicked(dialect)) }, "\(renewed)")
        let same = try await Self.run(dialect: dialect, auth: nil, renewal: "t1")
        #expect(same.contains { $0.hasSuffix(Self.kicked(dialect)) }, "\(same)")
    }

    /// A refused renewal changes nothing: the token it brought does not become valid for a login either.
    @Test func aRefusedRenewalDoesNotMakeItsTokenValid() async throws {
        try await SimulationRuntime.withSimulation(seed: 1) { simulation in
            try await simulation.run {
                let network = SimulatedNetwork(conditions: .init(latency: .milliseconds(50)), seed: 1)
                let server = RoomServer(group: simulation, transport: network, auth: ["A": "t1"])
                let a = ZegoClient(
                    id: "A",
                    loop: simulation.loop(for: "A"),
                    environment: ZegoClient.Environment(transport: network)
                )
                let changes = await a.events()
                await a.loginRoom("r1", config: ZegoRoomConfig(token: "t1"))
                try await simulation.sleep(for: .seconds(10))
                server.expireToken(userID: "A")
                try await simulation.sleep(for: .seconds(5))
                #expect(await a.renewToken("forged", roomID: "r1") == .success)  // sent; the server decides
                try await simulation.sleep(for: .seconds(60))
                await a.loginRoom("r1", config: ZegoRoomConfig(token: "forged"))
                try await simulation.sleep(for: .seconds(5))
                await a.shutdown()
                var reasons: [String] = []
                for await change in changes {
                    if case .roomStateChanged(_, let reason, let code, _) = change.event {
                        reasons.append("\(reason) \(code.rawValue)")
                    }
                }
                #expect(
                    reasons == [
                        "logining 0", "logined 0", "kickOut 1002056", "logining 0", "loginFailed 1002033",
                    ]
                )
            }
        }
    }
}
