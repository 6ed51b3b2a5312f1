import RoomLink
import RoomLinkRuntime
import RoomLinkTestSupport
import Testing

/// The engine over a transport of the test's own, written against the two per-side protocols only — as a socket
/// transport will be: no `SimulatedNetwork`, no fault injection, no object of one side handed to the other.
@Suite(.hangLimit(minutes: 10))
struct TransportSeamTests {
    /// Carries messages in 10 ms on the receiver's loop, and keeps per channel what a socket server keeps per
    /// connection: the session that logged in on it, so that it can tell the room when the connection closes.
    final class DirectTransport: ClientTransport, ServerTransport {
        final class Channel: RoomChannel, ClientChannel {
            let client: any ClientEndpoint
            let roomID: String
            let room: any RoomEndpoint
            let session = LockedBox<SessionID?>(nil)
            let isOpen = LockedBox(true)

            init(client: any ClientEndpoint, roomID: String, room: any RoomEndpoint) {
                self.client = client
                self.roomID = roomID
                self.room = room
            }

            /// The room's answer: carried to the client in the transport's 10 ms, unless the channel closed.
            func send(_ message: ServerMessage, from room: any RoomEndpoint) {
                guard isOpen.withLock({ $0 }) else { return }
                _ = try? client.loop.schedule(after: .milliseconds(10)) { [client, roomID] in
                    client.deliver(message, from: roomID)
                }
            }
        }

        let delay = Duration.milliseconds(10)
        private let directory = LockedBox<(any RoomDirectory)?>(nil)
        private let channels = LockedBox<[Channel]>([])
        /// Every login the server's side saw, as `"<user> <kind>"`.
        let logins = LockedBox<[String]>([])

        func open(toRoom roomID: String, for client: any ClientEndpoint) -> (any RoomChannel)? {
            guard let room = directory.withLock({ $0 })?.room(roomID) else { return nil }
            let channel = Channel(client: client, roomID: roomID, room: room)
            channels.withLock { $0.append(channel) }
            return channel
        }

        func send(
            _ message: ClientMessage,
            on channel: any RoomChannel,
            from client: any ClientEndpoint
        )
            -> SendOutcome
        {
            let channel = channel as! Channel
            guard channel.isOpen.withLock({ $0 }) else { return .refused }
            if case .login(let request) = message {
                channel.session.withLock { $0 = request.session }
                logins.withLock { $0.append("\(request.userID) \(request.kind)") }
            }
            _ = try? channel.room.loop.schedule(after: delay) { channel.room.deliver(message, on: channel) }
            return .sent
        }

        func closed(_ channel: any RoomChannel, session: SessionID, from client: any ClientEndpoint) {
            let channel = channel as! Channel
            _ = try? channel.room.loop.schedule(after: delay) {
                channel.room.connectionClosed(userID: channel.client.userID, session: session, on: channel)
            }
        }

        /// Nothing to give up: a channel here is no connection that could hang.
        func abandon(_ channel: any RoomChannel, from client: any ClientEndpoint) {}

        func serve(_ rooms: any RoomDirectory) {
            directory.withLock { $0 = rooms }
        }

        /// Resets every open connection of `userID`, as a socket reset does: each side hears it from its own end —
        /// the client as a connection event, the room as `connectionClosed` for the session logged in on it.
        func reset(_ userID: String) {
            for channel in channels.withLock({ $0 }) where channel.client.userID == userID {
                guard
                    channel.isOpen.withLock({ open in
                        defer { open = false }
                        return open
                    })
                else { continue }
                let client = channel.client
                _ = try? client.loop.schedule(after: .zero) {
                    client.connectionChanged(.closed(.reset), room: channel.roomID)
                }
                if let session = channel.session.withLock({ $0 }) {
                    _ = try? channel.room.loop.schedule(after: .zero) {
                        channel.room.connectionClosed(userID: userID, session: session, on: channel)
                    }
                }
            }
        }
    }

    /// A server's side only: channels that record what the rooms send them, so that a test plays a socket server's
    /// connections by hand — which connection a member logs in on, and when each one's data stops or it closes.
    final class RecordingTransport: ServerTransport {
        final class Connection: ClientChannel {
            let received = LockedBox<[ServerMessage]>([])

            func send(_ message: ServerMessage, from room: any RoomEndpoint) {
                received.withLock { $0.append(message) }
            }
        }

        func serve(_ rooms: any RoomDirectory) {}
    }

    /// A kernel-made black hole over sockets, played on a room's actor in virtual time: alice's first connection
    /// goes silent (its data stops, and the room's timeout for her runs), she comes back on a second connection with
    /// her session, and then — the hole lifted — the first connection's held data and its close arrive. In every
    /// dialect she stays through three of the server's timeouts (heard on her new connection as her dialect hears),
    /// and her peer never sees her leave.
    @Test(arguments: [ServerTimings.zego, .agora, .liveKit])
    func aStaleConnectionsLateCloseNeverRemovesAMemberANewerOneCarries(timings: ServerTimings) async throws {
        try await SimulationRuntime.withSimulation(seed: 1) { simulation in
            let transport = RecordingTransport()
            let server = RoomServer(group: simulation, transport: transport, timings: timings)
            let room = server.serverRoom("r")
            let (old, new, peer) = (
                RecordingTransport.Connection(), RecordingTransport.Connection(), RecordingTransport.Connection()
            )
            let session = SessionID(rawValue: 7)
            @Sendable func onRoom(_ body: @escaping @Sendable () -> Void) throws {
                _ = try simulation.schedule(after: .zero, body)
            }
            let bob = SessionID(rawValue: 1)
            let timeout = Int(timings.heartbeatTimeout.components.seconds)
            try await simulation.run {
                // A second at a time: the logins at 0 s, alice's old connection silent from 10 s (the room hears her
                // data stopped), her new one from 15 s, and at 18 s — the hole lifted — the old connection's held
                // data and its close. Heartbeats every 5 s for a dialect that beats, each on the member's connection.
                for second in 0...(18 + 3 * timeout) {
                    try onRoom {
                        switch second {
                        case 0:
                            let first = LoginRequest(userID: "bob", session: bob, userStatusNotify: true)
                            room.deliver(.login(first), on: peer)
                            room.deliver(.login(LoginRequest(userID: "alice", session: session)), on: old)
                        case 10:
                            room.connectionClosed(userID: "alice", session: session, on: old)
                        case 15:
                            let again = LoginRequest(userID: "alice", session: session, kind: .reconnect)
                            room.deliver(.login(again), on: new)
                        case 18:
                            room.dataResumed(userID: "alice", session: session, on: old)
                            room.connectionClosed(userID: "alice", session: session, on: old)
                        default:
                            break
                        }
                        guard !timings.continuousData, second > 0, second % 5 == 0 else { return }
                        room.deliver(.heartbeat(userID: "bob", session: bob), on: peer)
                        if second < 10 || second > 15 {
                            room.deliver(.heartbeat(userID: "alice", session: session), on: second < 10 ? old : new)
                        }
                    }
                    try await simulation.sleep(for: .seconds(1))
                }
                #expect(await room.memberIDs == ["bob", "alice"])
                // What the room says to her goes to her new connection.
                await room.requestReconnect("alice")
                let asked = { (connection: RecordingTransport.Connection) in
                    connection.received.withLock { $0 }.contains { $0 == .reconnectRequested(session: session) }
                }
                #expect(asked(new) && !asked(old))
                let told = peer.received.withLock { $0 }.compactMap { message -> String? in
                    guard case .userUpdate(let change, let users, _) = message, users == ["alice"] else { return nil }
                    return "\(change)"
                }
                #expect(told == ["add"], "bob's view of alice")
                // The old connection heard its login answered and its heartbeats, nothing after it went silent.
                #expect(old.received.withLock { $0 }.count == (timings.continuousData ? 1 : 2))
            }
        }
    }

    @Test
    func aResetConnectionIsReopenedAndTheRoomKeepsItsMemberMeanwhile() async throws {
        try await SimulationRuntime.withSimulation(seed: 1) { simulation in
            let transport = DirectTransport()
            let server = RoomServer(group: simulation, transport: transport)
            let events = EventCollector()
            let environment = ZegoClient.Environment(transport: transport, sink: events.typed())
            try await simulation.run {
                let a = ZegoClient(id: "A", loop: simulation, environment: environment)
                let b = ZegoClient(id: "B", loop: simulation, environment: environment)
                await a.loginRoom("r")
                await b.loginRoom("r", config: ZegoRoomConfig(isUserStatusNotify: true))
                try await simulation.sleep(for: .seconds(10))
                transport.reset("A")
                try await simulation.sleep(for: .seconds(5))
                #expect(transport.logins.withLock { $0 } == ["A join", "B join", "A reconnect"])
                // A notices the reset at once (ZEGO's network-closed code) and is back one round trip and the
                // server's 20 ms login time later; B, told of peers, never sees A leave; the room still holds A.
                #expect(
                    events.entries.map(\.compact) == [
                        "0 A r logining 0", "0 B r logining 0", "40 A r logined 0", "40 B r logined 0",
                        "40 B r add A", "10000 A r reconnecting 1002051", "10040 A r reconnected 0",
                    ]
                )
                #expect(await a.phase(of: "r") == .joined)
                let room = server.serverRoom("r")
                #expect(await room.memberIDs == ["A", "B"])
                await a.shutdown()
                await b.shutdown()
            }
        }
    }
}
