import RoomLink
import RoomLinkNetwork
import RoomLinkTestSupport
import Testing

/// The admin API over real HTTP: tokens are required, members are listed in join order, kicks and reconnect
/// requests reach the clients, token expiry warns and kicks, and bad requests are answered with what was wrong.
@Suite(.hangLimit(minutes: 10))
struct AdminAPITests {
    static func withAdmin(
        token: String? = "s3cret",
        _ body: (NetworkServer, AdminClient, SocketAddress, LibeventLoopGroup) async throws -> Void
    ) async throws {
        try await NetworkTest.withGroup { group in
            var timings = ServerTimings.zego
            timings.tokenRenewalGrace = .seconds(4)
            let (server, address) = try await NetworkTest.server(on: group, .init(dialect: .zego, timings: timings))
            let admin = try await server.startAdmin(on: SocketAddress(host: "127.0.0.1", port: 0), token: token)
            let client = AdminClient(address: admin, token: token, loop: group.eventLoops[0])
            try await body(server, client, address, group)
            await server.shutdown()
        }
    }

    @Test func withoutTheTokenOnlyHealthAnswers() async throws {
        try await Self.withAdmin { _, admin, _, group in
            let anonymous = AdminClient(address: admin.address, token: nil, loop: group.eventLoops[1])
            #expect(await anonymous.request("GET", "/healthz").status == 200)
            #expect(await anonymous.request("GET", "/metrics").status == 401)
            let wrong = AdminClient(address: admin.address, token: "guess", loop: group.eventLoops[1])
            #expect(await wrong.request("GET", "/rooms").status == 403)
            #expect(await admin.request("GET", "/rooms").status == 200)
        }
    }

    @Test func anAdminAPIWithoutATokenListensOnLoopbackOnly() async throws {
        try await NetworkTest.withGroup { group in
            let server = NetworkServer(group: group, configuration: .init(dialect: .zego))
            await #expect(throws: NetworkError.self) {
                try await server.startAdmin(on: SocketAddress(host: "0.0.0.0", port: 0), token: nil)
            }
            await server.shutdown()
        }
    }

    @Test func badRequestsAreAnsweredWithWhatWasWrong() async throws {
        try await Self.withAdmin { _, admin, _, _ in
            #expect(await admin.request("GET", "/nope").status == 404)
            #expect(await admin.request("GET", "/rooms/none/members").status == 404)
            #expect(await admin.request("POST", "/rooms").status == 405)
            let missing = await admin.request("POST", "/rooms/r/kick", body: ["people": ["a"]])
            #expect(missing.status == 400)
            #expect((missing.object?["error"] as? String)?.contains("users") == true)
            // Any other method is the wrong one (405, as documented), not one the server does not know (501).
            for method in ["PUT", "DELETE", "PATCH", "OPTIONS"] {
                #expect(await admin.request(method, "/rooms").status == 405, "\(method) /rooms")
                #expect(await admin.request(method, "/healthz").status == 405, "\(method) /healthz")
            }
        }
    }

    /// A body that is not strict JSON is refused and changes nothing: a trailing comma, a key twice, a user that is
    /// not a string.
    @Test func aBodyThatIsNotStrictJSONIsRefusedAndChangesNothing() async throws {
        try await Self.withAdmin { server, admin, address, group in
            let client = try NetworkServerTests.client("a", on: group, to: address)
            #expect(await client.loginRoom("r", config: ZegoRoomConfig(isUserStatusNotify: true)) == .success)
            try await NetworkTest.until("a is in") { await admin.members(of: "r") == ["a"] }
            for body in [
                #"{"users": ["a"],}"#, #"{"users": ["a",]}"#, #"{"users": ["b"], "users": ["a"]}"#,
                #"{"users": ["a", 1]}"#,
            ] {
                let answer = await admin.request("POST", "/rooms/r/kick", bytes: Array(body.utf8))
                #expect(answer.status == 400, "\(body)")
            }
            #expect(await admin.members(of: "r") == ["a"], "nobody was kicked")
            _ = (server, client)
        }
    }

    @Test func membersKicksReconnectsAndTokenExpiry() async throws {
        try await Self.withAdmin { server, admin, address, group in
            let names = ["alice", "bob", "carol"]
            var clients: [ZegoClient] = []
            var logs: [EventLog] = []
            for name in names {
                let client = try NetworkServerTests.client(name, on: group, to: address)
                logs.append(await EventLog(client))
                #expect(await client.loginRoom("room-1", config: ZegoRoomConfig(isUserStatusNotify: true)) == .success)
                try await NetworkTest.until("\(name) is in") { await admin.members(of: "room-1")?.last == name }
                clients.append(client)
            }
            #expect(await admin.members(of: "room-1") == names)
            let rooms = await admin.request("GET", "/rooms").object?["rooms"] as? [[String: Any]]
            #expect(rooms?.first?["members"] as? Int == 3)

            // A kick: bob is told (1002050) and does not come back; the others see him leave.
            let kicked = await admin.request("POST", "/rooms/room-1/kick", body: ["users": ["bob", "nobody"]])
            #expect(kicked.object?["kicked"] as? [String] == ["bob"])
            try await NetworkTest.until("bob is kicked out") { logs[1].count(of: .kickOut) == 1 }
            try await NetworkTest.until("bob is gone") { await admin.members(of: "room-1") == ["alice", "carol"] }

            // A reconnect request: carol reconnects and is a member again.
            let asked = await admin.request("POST", "/rooms/room-1/reconnect", body: ["users": ["carol"]])
            #expect(asked.object?["asked"] as? [String] == ["carol"])
            try await NetworkTest.until("carol reconnected") { logs[2].count(of: .reconnected) == 1 }

            // Token expiry: alice is warned (roomTokenWillExpire) and, not renewing, kicked after the grace.
            #expect(await admin.request("POST", "/users/alice/expire-token").status == 200)
            try await NetworkTest.until("alice is warned") {
                logs[0].all.contains { if case .roomTokenWillExpire = $0 { true } else { false } }
            }
            try await NetworkTest.until("alice is kicked out") { logs[0].count(of: .kickOut) == 1 }

            let metrics = await admin.request("GET", "/metrics").body
            #expect(metrics.contains(#"roomlink_logins_total{outcome="accepted",dialect="zego"}"#))
            #expect(metrics.contains(#"roomlink_connections_open{dialect="zego"} 3"#))
            for client in clients { await client.shutdown() }
            _ = server
        }
    }
}
