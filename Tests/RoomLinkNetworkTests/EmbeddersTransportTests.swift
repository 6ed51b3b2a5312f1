import Foundation
import Glibc
import RoomLink
import RoomLinkTestSupport
import Synchronization
import Testing

// The transport below is the one <doc:Embedding> shows ("A transport of your own"), character for character between
// its markers, after the imports above but Testing: written against `import RoomLink` alone — no `@testable`, no SPI,
// nothing the package keeps to itself.

// MARK: - Embedding: a transport of your own (begin)
/// A client transport of your own: one TCP connection per room to a `roomlink serve`, in RoomLink's wire protocol
/// (`docs/roomlink.proto`), with a blocking socket and a reader thread per connection.
final class SocketTransport: ClientTransport {
    /// One room's connection: the channel the client hands back with every message.
    final class Connection: RoomChannel {
        let socket: Int32
        let room: String
        /// The client gave it up: what its reader sees next is no news to the client.
        let abandoned = Atomic(false)

        init(socket: Int32, room: String) {
            self.socket = socket
            self.room = room
        }
    }

    let server: (host: String, port: UInt16)
    let dialect: DialectName
    /// The server outlives this process: a session ID of this run must not be one of an earlier run's.
    let sessionSalt = UInt64.random(in: 1...UInt64.max)

    init(host: String, port: UInt16, dialect: DialectName) {
        self.server = (host, port)
        self.dialect = dialect
    }

    func open(toRoom roomID: String, for client: any ClientEndpoint) -> (any RoomChannel)? {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = server.port.bigEndian
        inet_pton(AF_INET, server.host, &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        let hello = ClientFrame.hello(ClientHello(dialect: dialect, clientID: client.endpointID))
        guard connected == 0, Self.write(hello.encoded(at: client.loop.now), to: fd) else {
            close(fd)
            return nil  // the client counts the attempt refused, and opens a new channel at its next
        }
        let connection = Connection(socket: fd, room: roomID)
        Thread { Self.read(connection, for: client) }.start()
        client.loop.runSoon { client.connectionChanged(.connected, room: roomID) }
        return connection
    }

    func send(_ message: ClientMessage, on channel: any RoomChannel, from client: any ClientEndpoint) -> SendOutcome {
        let connection = channel as! Connection  // a channel this transport opened
        let frame = ClientFrame.room(connection.room, message).encoded(at: client.loop.now)
        return Self.write(frame, to: connection.socket) ? .sent : .refused
    }

    /// The server hears a socket close by itself.
    func closed(_ channel: any RoomChannel, session: SessionID, from client: any ClientEndpoint) {}

    /// The room went unanswered for its timeout: hang up, so that the next attempt dials a new connection and the
    /// server hears this one close.
    func abandon(_ channel: any RoomChannel, from client: any ClientEndpoint) {
        let connection = channel as! Connection
        connection.abandoned.store(true, ordering: .releasing)
        shutdown(connection.socket, Int32(SHUT_RDWR))
    }

    private static func write(_ frame: [UInt8], to fd: Int32) -> Bool {
        frame.withUnsafeBytes { bytes in
            var sent = 0
            while sent < bytes.count {
                let written = Glibc.send(fd, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
                guard written > 0 else { return false }
                sent += written
            }
            return true
        }
    }

    /// Reads the server's frames until the connection ends, delivering each room message on the client's loop.
    private static func read(_ connection: Connection, for client: any ClientEndpoint) {
        var reader = FrameReader()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var cause = ConnectionCloseCause.reset
        reading: while true {
            let count = buffer.withUnsafeMutableBytes { recv(connection.socket, $0.baseAddress, $0.count, 0) }
            guard count > 0 else {
                if count == 0 { cause = .endOfStream }
                break
            }
            reader.append(buffer[..<count])
            do {
                while let body = try reader.next() {
                    switch try ServerFrame(body: body) {
                    case .room(let room, let message):
                        client.loop.runSoon { client.deliver(message, from: room) }
                    case .goodbye(let reason, _):
                        cause = reason == .serverShutdown ? .serverShutdown : .protocolError
                        break reading
                    case .helloAck, .keepAlive:
                        continue
                    }
                }
            } catch {
                cause = .protocolError  // a frame this client cannot read: the stream is lost
                break
            }
        }
        close(connection.socket)
        guard !connection.abandoned.load(ordering: .acquiring) else { return }
        let (room, event) = (connection.room, ConnectionEvent.closed(cause))
        client.loop.runSoon { client.connectionChanged(event, room: room) }
    }
}
// MARK: - Embedding: a transport of your own (end)

/// The transport above, compiled here against the public API only, and run against `roomlink serve` — the binary
/// this package builds beside its tests.
@Suite(.hangLimit(minutes: 10))
struct EmbeddersTransportTests {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// `roomlink`, built beside this test bundle.
    static var roomlink: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("roomlink")
    }

    /// Starts `roomlink serve` on an ephemeral loopback port; its address is its first line.
    static func serve(_ arguments: [String]) throws -> (Process, UInt16) {
        let process = Process()
        process.executableURL = roomlink
        process.arguments = ["serve", "--listen", "127.0.0.1:0", "--log-level", "warning"] + arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { break }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self)
        // "zego on 127.0.0.1:PORT — …"
        guard
            let port = text.split(separator: " ").first(where: { $0.hasPrefix("127.0.0.1:") })
                .flatMap({ UInt16($0.dropFirst("127.0.0.1:".count)) })
        else {
            process.terminate()
            throw Failure(description: "roomlink serve said no address: \(text)")
        }
        return (process, port)
    }

    @Test
    func aZegoClientOverTheEmbeddersTransportLogsInSeesItsPeerAndReconnectsWhenServeDies() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.roomlink.path),
            "roomlink is built beside the tests (swift build --build-tests)"
        )
        let (server, port) = try Self.serve([])
        defer { if server.isRunning { server.terminate() } }
        try await LibeventLoopGroup.withLoopGroup(configuration: .init(loopCount: 1)) { group in
            let transport = SocketTransport(host: "127.0.0.1", port: port, dialect: .zego)
            let environment = ZegoClient.Environment(transport: transport)
            let alice = ZegoClient(id: "alice", loop: group.loop(for: "alice"), environment: environment)
            let bob = ZegoClient(id: "bob", loop: group.loop(for: "bob"), environment: environment)
            var changes = await alice.events().makeAsyncIterator()

            /// The next of alice's events that `matches`, within 20 s of real time.
            func next(_ what: String, _ matches: @escaping (ZegoEvent) -> Bool) async throws -> ZegoEvent {
                let deadline = ContinuousClock.now + .seconds(20)
                while ContinuousClock.now < deadline {
                    guard let change = await changes.next() else { break }
                    if matches(change.event) { return change.event }
                }
                throw Failure(description: "alice never heard \(what)")
            }

            #expect(await alice.loginRoom("r1", config: ZegoRoomConfig(isUserStatusNotify: true)) == .success)
            _ = try await next("logined") {
                if case .roomStateChanged("r1", .logined, .success, _) = $0 { true } else { false }
            }
            #expect(await bob.loginRoom("r1") == .success)
            _ = try await next("bob join") {
                if case .roomUserUpdate("r1", .add, let users) = $0 { users == ["bob"] } else { false }
            }
            #expect(await bob.logoutRoom("r1") == .success)
            _ = try await next("bob leave") {
                if case .roomUserUpdate("r1", .delete, let users) = $0 { users == ["bob"] } else { false }
            }
            // The server dies: alice's connection reaches its end, and her room reconnects.
            server.terminate()
            server.waitUntilExit()
            _ = try await next("reconnecting") {
                if case .roomStateChanged("r1", .reconnecting, _, _) = $0 { true } else { false }
            }
            await alice.shutdown()
            await bob.shutdown()
        }
    }

    /// <doc:Embedding> shows the transport this file compiles and runs, as it is here.
    @Test
    func theEmbeddingArticleShowsThisTransport() throws {
        let here = URL(fileURLWithPath: #filePath)
        let source = try String(contentsOf: here, encoding: .utf8)
        let begin = try #require(source.range(of: "// MARK: - Embedding: a transport of your own (begin)\n"))
        let end = try #require(source.range(of: "// MARK: - Embedding: a transport of your own (end)"))
        let code = String(source[begin.upperBound..<end.lowerBound])
        let article = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/RoomLinkEngine/Docs.docc/Embedding.md")
        let text = try String(contentsOf: article, encoding: .utf8)
        let imports = "import Foundation\nimport Glibc\nimport RoomLink\nimport Synchronization\n\n"
        #expect(text.contains("```swift\n" + imports + code + "```"), "Embedding.md's transport differs from this one")
    }
}
