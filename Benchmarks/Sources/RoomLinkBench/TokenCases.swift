import ArgumentParser
import Foundation
import RoomLink

/// `roomlink-bench tokens`: what the vendors' tokens cost a login. Each format's verification (and making) alone, per
/// token, beside a login's whole cost in a fill of a population: plain, and with every client minting its token and
/// the server verifying it (virtual time, one simulation, alternating rounds).
struct Tokens: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokens",
        abstract: "The vendors' tokens: verification and making per token, against a login's whole cost."
    )

    @Option(help: "Tokens verified (and made) per round.") var count = 20_000
    @Option(help: "Clients of the fill whose logins are timed.") var clients = 100_000
    @Option(help: "Rounds, alternating the cases; medians are reported.") var rounds = 3

    static let appID = "970CA35de60c44645bbae8a215061b33"
    static let certificate = "5CFd2fd1755d40ecb72977518be15d3b"
    static let zegoSecret = "fa94dd0f974cf2e293728a526b028271"

    struct Result: Codable {
        var name: String
        /// Per token (verify, make) or per login (fill), nanoseconds of process CPU, median of the rounds.
        var nanosecondsEach: Double
        var rounds: [Double]
    }

    func run() async throws {
        let now: Int64 = 1_800_000_000
        let agora = VendorTokenMinter(.agora(appID: Self.appID, certificate: Self.certificate))
        let agora006 = VendorTokenMinter(.agora(appID: Self.appID, certificate: Self.certificate, legacy: true))
        let zego = VendorTokenMinter(.zego(appID: 1_234_567, secret: Self.zegoSecret))
        var results: [String: [Double]] = [:]
        func cpu(_ body: () throws -> Void) rethrows -> Double {
            let start = ProcessCPU.now()
            try body()
            return Double(ProcessCPU.now() - start)
        }
        for _ in 0..<rounds {
            for (name, minter) in [("agora-007", agora), ("agora-006", agora006), ("zego-04", zego)] {
                var tokens: [String] = []
                tokens.reserveCapacity(count)
                let made = try cpu {
                    for index in 0..<count {
                        tokens.append(
                            try minter.token(user: "u\(index)", room: "room-1", issuedAt: UInt32(now), lifetime: 3600)
                        )
                    }
                }
                results["make \(name)", default: []].append(made / Double(count))
                let verifier = minter.verifier
                var accepted = 0
                let verified = cpu {
                    for (index, token) in tokens.enumerated() {
                        if case .accepted = verifier.verify(token, userID: "u\(index)", roomID: "room-1", unixTime: now)
                        {
                            accepted += 1
                        }
                    }
                }
                precondition(accepted == count, "\(name): \(count - accepted) tokens refused")
                results["verify \(name)", default: []].append(verified / Double(count))
            }
            for minted in [false, true] {
                let perLogin = try await fill(minted: minted, now: now, minter: agora)
                results[minted ? "login with a minted, verified token" : "login without a token", default: []]
                    .append(perLogin)
            }
        }
        let out = results.keys.sorted().map { name in
            let rounds = results[name]!
            return Result(name: name, nanosecondsEach: rounds.sorted()[rounds.count / 2], rounds: rounds)
        }
        for result in out {
            print(String(format: "%-40@ %10.0f ns each", result.name as NSString, result.nanosecondsEach))
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        FileHandle.standardError.write(try encoder.encode(out))
        FileHandle.standardError.write(Data("\n".utf8))
    }

    /// The process CPU per login of `clients` Agora clients joining 1,000 rooms over 20 s (virtual time), with their
    /// tokens minted and verified or with none.
    private func fill(minted: Bool, now: Int64, minter: VendorTokenMinter) async throws -> Double {
        let json = """
            {"dialect": "agora", "seed": 1, "end": "30s",
             "population": {"clients": \(clients), "rooms": 1000},
             "timeline": [{"at": "0s", "user": "*", "action": "login", "over": "20s"}]}
            """
        var runner = try ScenarioRunner(scenario: Scenario(json: Data(json.utf8)))
        if minted {
            let source = MintedTokenSource(minter: minter, lifetime: .seconds(3600), unixTimeAtZero: now)
            runner.tokens = ScenarioRunner.TokenPlan(
                source: { _ in source },
                verified: VerifiedTokens(verifier: minter.verifier, unixTimeAtZero: now)
            )
        }
        let start = ProcessCPU.now()
        let report = try await SimulationRuntime.withSimulation(seed: 1) { try await runner.run(on: $0) }
        precondition(report.eventsByType["joinChannelSuccess", default: 0] == clients, "not every client joined")
        return Double(ProcessCPU.now() - start) / Double(clients)
    }
}
