import Foundation
import RoomLinkRuntime
import RoomLinkTestSupport
import RoomLinkTokens
import Testing

@testable import RoomLink
@testable import RoomLinkEngine
@testable import RoomLinkScenarios

/// A client that fetches its tokens (``TokenSource``), as its state decides: before it logs in, when a login with a
/// token it used before is refused, when the server warns the token will expire; a failed fetch retried by the
/// client's own policy. Then the modelled token server, and a whole run in virtual time whose tokens run out while
/// their clients are away.
@Suite(.hangLimit(minutes: 10))
struct TokenStepTests {
    typealias Action = RoomClientState.Action
    typealias Tests = RoomClientStateTests

    /// A ZEGO client whose rules fetch tokens, with the no-jitter policy of `RoomClientStateTests` (attempt 2 one
    /// second after a failure, then two seconds each).
    struct Driver {
        var state = RoomClientState(clientID: "A", userID: "A", seed: 7)
        let rules: RoomClientState.Rules
        let recorder = RoomClientStateTests.Recorder()

        init(policy: RetryPolicy = RoomClientStateTests.policy) {
            var rules = RoomClientState.Rules(
                Zego.self,
                timings: ZegoTimings.default.engine,
                retryPolicy: policy,
                logsAttempts: true
            )
            rules.fetchesTokens = true
            self.rules = rules
        }

        mutating func join(token: String? = nil, at seconds: Double) -> [Action] {
            let recorder = recorder
            state.join("r", options: JoinOptions(token: token), at: Tests.at(seconds), rules: rules) {
                recorder.perform($0, &$1)
            }
            return recorder.take()
        }

        mutating func receive(_ message: ServerMessage, at seconds: Double) -> [Action] {
            let recorder = recorder
            state.receive(message, from: "r", at: Tests.at(seconds), rules: rules) { recorder.perform($0, &$1) }
            return recorder.take()
        }

        mutating func fetched(
            _ result: Result<String, TokenFetchFailure>,
            for fetch: Fetch,
            at seconds: Double
        )
            -> [Action]
        {
            let recorder = recorder
            state.tokenFetched(
                result,
                room: "r",
                session: fetch.session,
                attempt: fetch.attempt,
                at: Tests.at(seconds),
                rules: rules
            ) { recorder.perform($0, &$1) }
            return recorder.take()
        }

        mutating func fire(_ timer: RoomClientState.Timer, at seconds: Double) -> [Action] {
            let recorder = recorder
            state.timerFired(timer, at: Tests.at(seconds), rules: rules) { recorder.perform($0, &$1) }
            return recorder.take()
        }

        mutating func link(_ link: LinkState, at seconds: Double) -> [Action] {
            let recorder = recorder
            state.linkChanged(to: link, at: Tests.at(seconds), rules: rules) { recorder.perform($0, &$1) }
            return recorder.take()
        }

        mutating func heartbeat(at seconds: Double) -> [Action] {
            let recorder = recorder
            state.heartbeatDue(at: Tests.at(seconds), rules: rules) { recorder.perform($0, &$1) }
            return recorder.take()
        }
    }

    struct Fetch: Equatable {
        var session: SessionID
        var attempt: UInt32
    }

    static func fetches(_ actions: [Action]) -> [Fetch] {
        actions.compactMap { action in
            guard case .fetchToken(let room, let session, let attempt) = action, room == "r" else { return nil }
            return Fetch(session: session, attempt: attempt)
        }
    }

    /// Joins with a fetched token `t1`, accepted at `seconds + 0.2`.
    static func joined(_ client: inout Driver, at seconds: Double) {
        let fetch = fetches(client.join(at: seconds))[0]
        let login = Tests.logins(client.fetched(.success("t1"), for: fetch, at: seconds + 0.1))[0]
        _ = client.receive(
            .loginAccepted(session: login.session, attempt: login.attempt, roomSessionID: "s", present: []),
            at: seconds + 0.2
        )
    }

    @Test
    func aJoinFetchesItsTokenFirstAndLogsInWithIt() {
        var client = Driver()
        let actions = client.join(at: 1)
        // No login yet: the fetch stands for the first attempt, and only the join's deadline is armed.
        #expect(Tests.logins(actions).isEmpty)
        let fetch = Self.fetches(actions)
        #expect(fetch.count == 1)
        #expect(Tests.armed(actions).map(\.1) == [Tests.at(31)])  // ZEGO's 30 s login timeout
        let login = Tests.logins(client.fetched(.success("t1"), for: fetch[0], at: 1.3))
        #expect(login.count == 1 && login[0].token == "t1" && login[0].sentAt == Tests.at(1.3))
        // A token the app gave is used as it is: no fetch.
        var given = Driver()
        let direct = given.join(token: "app", at: 0)
        #expect(Self.fetches(direct).isEmpty && Tests.logins(direct).map(\.token) == ["app"])
    }

    @Test
    func aFailedFetchIsAFailedAttemptRetriedByThePolicyUntilTheLoginTimeout() {
        var client = Driver()
        var fetch = Self.fetches(client.join(at: 0))[0]
        // The policy's 1 s, then 2 s each: the fetches follow it, and no login leaves while they fail.
        var at = 0.5
        var next: [Double] = []
        for _ in 0..<4 {
            let actions = client.fetched(.failure(TokenFetchFailure(.httpStatus, "500")), for: fetch, at: at)
            #expect(Tests.logins(actions).isEmpty)
            let timer = Tests.armed(actions)
            #expect(timer.count == 1)
            guard let (armed, deadline) = timer.first else { return }
            next.append(Double(deadline.nanoseconds) / 1e9 - at)
            let retry = client.fire(armed, at: Double(deadline.nanoseconds) / 1e9)
            #expect(Tests.logins(retry).isEmpty)
            fetch = Self.fetches(retry)[0]
            at = Double(deadline.nanoseconds) / 1e9 + 0.5
        }
        #expect(next == [1, 2, 2, 2])
        // A stale answer — to a fetch the room has moved past — is ignored.
        #expect(client.fetched(.success("late"), for: Fetch(session: fetch.session, attempt: 1), at: at).isEmpty)
        // At the login timeout the room gives up, whatever the fetch in flight.
        let gaveUp = client.fire(.room("r", .nextAttempt(after: fetch.attempt)), at: 30)
        #expect(Tests.reports(gaveUp).contains(.gaveUp(from: .joining)))
        #expect(client.state.rooms.isEmpty)
    }

    @Test
    func aRefusalOfAnOldTokenFetchesANewOneButAFreshTokenRefusedIsTheTokensFault() {
        var client = Driver()
        Self.joined(&client, at: 0)
        // The link goes; the reconnection's login carries the token it joined with, and is refused (it expired).
        _ = client.link(.down, at: 10)
        let reconnect = Tests.logins(client.link(.up, at: 20))
        #expect(reconnect.map(\.token) == ["t1"])
        let refused = client.receive(
            .loginRejected(session: reconnect[0].session, attempt: reconnect[0].attempt, reason: .tokenInvalid),
            at: 20.1
        )
        #expect(!Tests.reports(refused).contains { if case .rejected = $0 { true } else { false } })
        let (timer, deadline) = Tests.armed(refused)[0]
        let fetch = Self.fetches(client.fire(timer, at: Double(deadline.nanoseconds) / 1e9))
        #expect(fetch.count == 1)
        let again = Tests.logins(client.fetched(.success("t2"), for: fetch[0], at: 21.5))
        #expect(again.map(\.token) == ["t2"])
        // This one was just fetched: refused too, it is the token's fault, and the room ends as refused.
        let final = client.receive(
            .loginRejected(session: again[0].session, attempt: again[0].attempt, reason: .tokenInvalid),
            at: 21.6
        )
        #expect(Tests.reports(final) == [.rejected(.tokenInvalid, from: .reconnecting)])
    }

    @Test
    func aWarningFetchesTheRenewalAndAFailedOneAsksAgainByThePolicy() {
        var client = Driver()
        Self.joined(&client, at: 0)
        let session = client.state.rooms[0].session
        let warned = client.receive(.tokenWillExpire(session: session, remaining: .seconds(30)), at: 100)
        #expect(Tests.reports(warned) == [.tokenWillExpire(remaining: .seconds(30))])
        let fetch = Self.fetches(warned)
        #expect(fetch.count == 1)
        // A second warning while the renewal is on its way asks for nothing more.
        #expect(
            Self.fetches(client.receive(.tokenWillExpire(session: session, remaining: .seconds(29)), at: 101)).isEmpty
        )
        // The fetch fails: the renewal asks again after the policy's first delay (1 s), then its next (2 s).
        let failed = client.fetched(.failure(TokenFetchFailure(.timeout)), for: fetch[0], at: 105)
        #expect(Tests.armed(failed).map(\.0) == [.renewal(room: "r")])
        #expect(Tests.armed(failed).map(\.1) == [Tests.at(106)])
        let retry = Self.fetches(client.fire(.renewal(room: "r"), at: 106))
        #expect(retry.count == 1)
        let failedAgain = client.fetched(.failure(TokenFetchFailure(.refused)), for: retry[0], at: 106.5)
        #expect(Tests.armed(failedAgain).map(\.1) == [Tests.at(108.5)])
        let last = Self.fetches(client.fire(.renewal(room: "r"), at: 108.5))
        // The token arrives: it goes to the server as a renewal, and later logins use it.
        let renewed = Tests.sent(client.fetched(.success("t2"), for: last[0], at: 109))
        #expect(renewed == [.renewToken(userID: "A", session: session, token: "t2")])
        #expect(client.state.rooms[0].options.token == "t2")
    }

    @Test
    func aConnectionLostWhileTheRenewalWaitsFetchesBeforeItsReconnection() {
        var client = Driver()
        Self.joined(&client, at: 0)
        let session = client.state.rooms[0].session
        let fetch = Self.fetches(client.receive(.tokenWillExpire(session: session, remaining: .seconds(30)), at: 50))
        _ = client.fetched(.failure(TokenFetchFailure(.timeout)), for: fetch[0], at: 55)
        // The link goes down: the renewal's timer is cancelled, and the reconnection's first attempt is a fetch.
        let lost = client.link(.down, at: 55.5)
        #expect(lost.contains(.cancel(.renewal(room: "r"))))
        #expect(Tests.logins(lost).isEmpty)
        let refetch = Self.fetches(lost)
        #expect(refetch.count == 1)
        // The link back while the token is on its way: the login still waits for it.
        let back = client.link(.up, at: 60)
        #expect(Tests.logins(back).isEmpty && Self.fetches(back).isEmpty)
        #expect(Tests.logins(client.fetched(.success("t3"), for: refetch[0], at: 60.2)).map(\.token) == ["t3"])
    }

    // MARK: - The modelled token server

    @Test
    func theModelledServerQueuesByCapacityTimesOutAndFailsItsShareDeterministically() async throws {
        func answers(_ model: ModelledTokenServer.Model, count: Int) async throws -> [(Double, String)] {
            try await SimulationRuntime.withSimulation(seed: 1) { simulation in
                try await simulation.run {
                    let loop = simulation.loops[0]
                    let server = ModelledTokenServer(model: model, loops: simulation.loops, seed: 3)
                    let box = LockedBox<[(Double, String)]>([])
                    for index in 0..<count {
                        let request = TokenRequest(userID: "u\(index)", roomID: "r", dialect: .zego)
                        server.fetchToken(for: request, on: loop) { result in
                            let text =
                                switch result {
                                case .success(let token): token
                                case .failure(let failure): failure.cause.rawValue
                                }
                            box.withLock { $0.append((Double(loop.now.nanoseconds) / 1e9, text)) }
                        }
                    }
                    try await simulation.sleep(for: .seconds(60))
                    return box.withLock { $0 }
                }
            }
        }
        // Ten a second, 50 ms each: the fifth fetch waits for four turns; past the 0.35 s timeout they give up.
        let model = ModelledTokenServer.Model(latency: .milliseconds(50), capacity: 10, timeout: .milliseconds(350))
        let queued = try await answers(model, count: 6)
        #expect(queued.map(\.0) == [0.15, 0.25, 0.35, 0.35, 0.35, 0.35])
        #expect(queued.map(\.1) == ["tok-u0-1", "tok-u1-2", "tok-u2-3", "timeout", "timeout", "timeout"])
        // A failure share fails about that share, the same ones on every run.
        let failing = ModelledTokenServer.Model(latency: .milliseconds(5), failureShare: 0.3)
        let first = try await answers(failing, count: 400)
        let again = try await answers(failing, count: 400)
        let failures = first.filter { $0.1 == "httpStatus" }.count
        #expect((80...160).contains(failures))
        #expect(first.map(\.1) == again.map(\.1))
        #expect(throws: RoomLinkError.self) { try ModelledTokenServer.Model(parsing: "capacity=-1") }
        #expect(throws: RoomLinkError.self) { try ModelledTokenServer.Model(parsing: "latency") }
        let parsed = try ModelledTokenServer.Model(parsing: "latency=40ms,capacity=500,failures=0.1,timeout=2s")
        #expect(parsed == .init(latency: .milliseconds(40), capacity: 500, failureShare: 0.1, timeout: .seconds(2)))
    }

    // MARK: - A whole run

    /// Agora clients mint AccessToken2 that live 90 s; the in-process server verifies them. Half the users lose their
    /// network for two minutes, longer than their tokens live: back, their reconnection is refused for the expired
    /// token, they mint a new one and rejoin. Everyone ends in the room; the report counts every token.
    @Test
    func tokensThatRunOutWhileTheirClientsAreAwayAreFetchedAgainAndTheyRejoin() async throws {
        let json = """
            {"dialect": "agora", "seed": 5, "end": "6m",
             "population": {"clients": 40, "rooms": 4},
             "timeline": [
               {"at": "0s", "user": "*", "action": "login", "over": "5s"},
               {"at": "20s", "user": "*", "fraction": 0.5, "action": "networkDown"},
               {"at": "2m20s", "user": "*", "fraction": 0.5, "action": "networkUp"}
             ]}
            """
        var runner = try ScenarioRunner(scenario: Scenario(json: Data(json.utf8)))
        runner.collectsLoadStatistics = true
        let minter = VendorTokenMinter(
            .agora(appID: "970CA35de60c44645bbae8a215061b33", certificate: "5CFd2fd1755d40ecb72977518be15d3b")
        )
        let unixTimeAtZero: Int64 = 1_800_000_000
        let source = MintedTokenSource(minter: minter, lifetime: .seconds(90), unixTimeAtZero: unixTimeAtZero)
        let statistics = TokenStatistics()
        runner.tokens = ScenarioRunner.TokenPlan(
            source: { _ in source },
            verified: VerifiedTokens(verifier: minter.verifier, unixTimeAtZero: unixTimeAtZero),
            statistics: statistics
        )
        let report = try await SimulationRuntime.withSimulation(seed: 1) { try await runner.run(on: $0) }
        let load = try #require(report.load)
        #expect(load.online == 40 && load.failed == 0)
        let tokens = try #require(report.tokens)
        #expect(tokens.failed == 0)
        // 40 joins, renewals every 60 s of those online (a token warns 30 s before its end), and the 20 that came
        // back fetch again after their refusal.
        #expect(tokens.fetches == tokens.fetched)
        #expect(tokens.fetches >= 40 + 20 + 40 * 3)
        #expect(report.eventsByType["tokenPrivilegeWillExpire", default: 0] >= 40 * 3)
        #expect(report.violations == 0)
    }
}
