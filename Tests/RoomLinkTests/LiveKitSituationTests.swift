import Foundation
import RoomLink
import RoomLinkRuntime
import RoomLinkTestSupport
import Testing

/// contract §4's LiveKit behaviour in virtual time: quick reconnection first, full when the server lost the session and
/// on the last attempt, the give-up after the tenth attempt, and every disconnect reason.
///
/// Times follow from the defaults: 50 ms latency each way and 20 ms join processing (connected at 120 ms), peers
/// told 20 ms after the server registers a change (140 ms), ping every 5 s, server removal 20 s after last heard.
@Suite(.hangLimit(minutes: 10))
struct LiveKitSituationTests {
    /// Users A and B in room r1 (B connects first), plus `timeline`.
    static func scenario(_ timeline: String, end: String = "10m", users: String? = nil, extra: String = "") -> String {
        """
        { "dialect": "livekit", "seed": 3, "network": { "latency": "50ms" }, \(extra)
          "users": \(users ?? #"[ { "id": "A" }, { "id": "B" } ]"#),
          "timeline": [
            { "at": "0s", "user": "B", "action": "login", "room": "r1" },
            { "at": "0s", "user": "A", "action": "login", "room": "r1" }\(timeline.isEmpty ? "" : ",") \(timeline) ],
          "end": "\(end)" }
        """
    }

    static let connectedA = [
        "0 A r1 connectionState connecting disconnected", "120 A r1 connectionState connected connecting",
        "120 A r1 participantConnected B",
    ]
    static let connectedB = [
        "0 B r1 connectionState connecting disconnected", "120 B r1 connectionState connected connecting",
        "140 B r1 participantConnected A",
    ]

    @Test
    func aShortOutageIsAQuickReconnectionPeersNeverSee() async throws {
        let (events, report) = try await ScenarioHarness.run(
            Self.scenario(
                """
                { "at": "10s", "user": "A", "action": "networkDown" },
                { "at": "14s", "user": "A", "action": "networkUp" }
                """
            )
        )
        #expect(
            events.lines(of: "A") == Self.connectedA + [
                "10000 A r1 connectionState reconnecting connected", "10000 A r1 reconnectStarted quick",
                "14120 A r1 connectionState connected reconnecting", "14120 A r1 reconnectCompleted quick",
            ]
        )
        #expect(events.lines(of: "B") == Self.connectedB)
        #expect(report.violations == 0, "\(report.violationSample)")
    }

    @Test
    func afterTheServerRemovedTheParticipantTheQuickAttemptFailsAndAFullOneRejoins() async throws {
        let (events, report) = try await ScenarioHarness.run(
            Self.scenario(
                """
                { "at": "10s", "user": "A", "action": "networkDown" },
                { "at": "35s", "user": "A", "action": "networkUp" }
                """
            )
        )
        let a = events.lines(of: "A")
        // At 35 s the network is back: a quick attempt at once, refused (the server removed A at 30.05 s), then a
        // full one after the policy's next delay: the client drops B, and sees the room again.
        try #require(a.count == Self.connectedA.count + 7, "\(a)")
        #expect(Array(a.prefix(4)) == Self.connectedA + ["10000 A r1 connectionState reconnecting connected"])
        #expect(a[4] == "10000 A r1 reconnectStarted quick")
        let full = a[5...].map { $0.split(separator: " ", maxSplits: 2)[2] }
        #expect(
            full == [
                "r1 reconnectStarted full", "r1 participantDisconnected B", "r1 connectionState connected reconnecting",
                "r1 reconnectCompleted full", "r1 participantConnected B",
            ]
        )
        let fullAt = Double(a[5].split(separator: " ")[0])!
        #expect(fullAt > 35_120 && fullAt <= 35_120 + 8_000, "one policy delay (≤ 7 s + 1 s jitter) after the refusal")
        let b = events.lines(of: "B")
        #expect(b.prefix(3) == Self.connectedB[...])
        #expect(
            b[3] == "30120 B r1 participantDisconnected A",
            "removed 20 s after the close reached the server, told 20 ms later, heard 50 ms after"
        )
        #expect(b[4].hasSuffix("B r1 participantConnected A") && b.count == 5)
        #expect(report.violations == 0, "\(report.violationSample)")
    }

    @Test
    func theTenthAttemptIsFullAndThenTheClientGivesUp() async throws {
        let (events, report) = try await ScenarioHarness.run(
            Self.scenario(#"{ "at": "10s", "user": "A", "action": "networkDown" }"#)
        )
        let a = events.lines(of: "A")
        try #require(a.count == Self.connectedA.count + 6, "\(a)")
        let tail = a[3...].map { $0.split(separator: " ", maxSplits: 2)[2] }
        #expect(
            tail == [
                "r1 connectionState reconnecting connected", "r1 reconnectStarted quick", "r1 reconnectStarted full",
                "r1 participantDisconnected B",
                "r1 connectionState disconnected reconnecting", "r1 disconnected connectionTimeout",
            ]
        )
        // Ten attempts after 0, 0.3, 1.2, 2.7, 4.8 and 5 × 7 s, the last eight with up to 1 s of jitter: 44–52 s.
        let gaveUp = Double(a.last!.split(separator: " ")[0])! - 10_000
        #expect(gaveUp >= 44_000 && gaveUp <= 52_000, "gave up \(gaveUp) ms after the outage began")
        #expect(events.lines(of: "B").last == "30120 B r1 participantDisconnected A")
        #expect(report.violations == 0, "\(report.violationSample)")
    }

    @Test
    func everyDisconnectReasonAndStateIsReached() async throws {
        let (events, report) = try await ScenarioHarness.run(
            Self.scenario(
                """
                { "at": "1s", "user": "C", "action": "login", "room": "r1" },
                { "at": "2s", "user": "D", "action": "networkDown" },
                { "at": "2s", "user": "D", "action": "login", "room": "r1" },
                { "at": "3s", "user": "E", "action": "login", "room": "r1" },
                { "at": "4s", "user": "F", "action": "login", "room": "r1" },
                { "at": "5s", "user": "F", "action": "kick", "room": "r1" },
                { "at": "6s", "user": "B", "action": "logout" },
                { "at": "7s", "user": "C", "action": "networkDown" }
                """,
                users: """
                    [ { "id": "A", "token": "a" }, { "id": "B", "token": "b" }, { "id": "C", "userID": "A", "token": "a" },
                      { "id": "D", "token": "d" }, { "id": "E", "token": "wrong" }, { "id": "F", "token": "f" } ]
                    """,
                extra: #""auth": { "A": "a", "B": "b", "D": "d", "E": "e", "F": "f" },"#
            )
        )
        let lines = events.lines
        func has(_ line: String) { #expect(lines.contains(line), "missing \(line)") }
        has("1120 A r1 connectionState disconnected connected")
        has("1120 A r1 disconnected duplicateIdentity")
        has("2000 D r1 connectionState disconnected connecting")
        has("2000 D r1 disconnected joinFailure")
        has("3120 E r1 disconnected joinFailure")
        has("5050 F r1 disconnected participantRemoved")
        has("6000 B r1 connectionState disconnecting connected")
        has("6000 B r1 connectionState disconnected disconnecting")
        has("6000 B r1 disconnected clientInitiated")
        #expect(lines.contains { $0.contains("C r1 disconnected connectionTimeout") })
        var states: Set<String> = []
        for entry in events.entries where entry.line.type == "connectionState" {
            states.insert(entry.line.string("state") ?? "")
        }
        #expect(states == Set(LiveKitConnectionState.allCases.map(\.rawValue)))
        #expect(report.violations == 0, "\(report.violationSample)")
    }

    @Test
    func connectingAConnectedRoomThrowsAndChangesNothing() async throws {
        try await SimulationRuntime.withSimulation(seed: 1) { simulation in
            try await simulation.run {
                let network = SimulatedNetwork(conditions: Scenario.Network(), seed: 1)
                let server = RoomServer(group: simulation, transport: network, timings: .liveKit)
                let client = LiveKitClient(
                    id: "A",
                    loop: simulation.loops[0],
                    environment: LiveKitClient.Environment(transport: network)
                )
                try await client.connect(to: "r1")
                await #expect(throws: LiveKitError.alreadyConnected(room: "r1")) { try await client.connect(to: "r2") }
                try await simulation.sleep(for: .seconds(1))
                #expect(await client.connectionState == .connected)
                await client.shutdown()
                await #expect(throws: LiveKitError.shutDown) { try await client.connect(to: "r1") }
                _ = server
            }
        }
    }
}

extension LiveKitSituationTests {
    @Test
    func aServerRequestReconnectsInFullAtOnceWhileZegoResumes() async throws {
        let (events, report) = try await ScenarioHarness.run(
            Self.scenario(#"{ "at": "10s", "user": "A", "action": "requestReconnect", "room": "r1" }"#, end: "1m")
        )
        // The request reaches A at 10.05 s; the full join is accepted at 10.17 s; B hears of the replacement as the
        // old participant leaving and the new one joining, 20 ms after the server made it.
        #expect(
            events.lines(of: "A") == Self.connectedA + [
                "10050 A r1 connectionState reconnecting connected", "10050 A r1 reconnectStarted full",
                "10050 A r1 participantDisconnected B", "10170 A r1 connectionState connected reconnecting",
                "10170 A r1 reconnectCompleted full", "10170 A r1 participantConnected B",
            ]
        )
        #expect(
            events.lines(of: "B") == Self.connectedB + [
                "10190 B r1 participantDisconnected A", "10190 B r1 participantConnected A",
            ]
        )
        #expect(report.violations == 0, "\(report.violationSample)")

        let (zego, zegoReport) = try await ScenarioHarness.run(
            ScenarioHarness.twoUsers(#"{ "at": "10s", "user": "A", "action": "requestReconnect", "room": "r1" }"#)
        )
        #expect(
            zego.lines(of: "A") == [
                "0 A r1 logining 0", "120 A r1 logined 0", "10050 A r1 reconnecting 1002051",
                "10170 A r1 reconnected 0",
            ]
        )
        #expect(zego.lines(of: "B") == ZegoSituationTests.loggedIn, "the same session resumes: B sees nothing")
        #expect(zegoReport.violations == 0, "\(zegoReport.violationSample)")
    }
}
