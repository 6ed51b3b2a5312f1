import Glibc
import RoomLinkLibevent
import RoomLinkRuntime
import RoomLinkTestSupport
import Synchronization
import Testing

@testable import RoomLinkRedis

/// One hiredis connection's life on its loop, with no Redis: a socket that listens and never answers stands in for
/// a server that is slow to take a dial.
@Suite(.hangLimit(minutes: 5))
struct RedisConnectionTests {
    /// A TCP socket on loopback that listens and never accepts: a dial to it is taken by the kernel and never
    /// answered, so a connection to it is still connecting as far as hiredis knows until its loop turns.
    final class SilentListener: Sendable {
        let descriptor: Int32
        let port: Int

        init() throws {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            try #require(descriptor >= 0, "socket: errno \(errno)")
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                    bind(descriptor, address, length) == 0 && listen(descriptor, 8) == 0
                        && getsockname(descriptor, address, &length) == 0
                }
            }
            if !bound { Glibc.close(descriptor) }
            try #require(bound, "bind, listen or getsockname: errno \(errno)")
            self.descriptor = descriptor
            self.port = Int(UInt16(bigEndian: address.sin_port))
        }

        deinit { Glibc.close(descriptor) }
    }

    /// What a connection closed while connecting did, recorded on its loop.
    struct Outcome: Sendable {
        var started = false
        var disconnects: [String] = []
        /// Per reply: whether it was `nil`.
        var replies: [Bool] = []
        /// Whether the test's own reference was the connection's only one once it was closed.
        var released = false
    }

    final class Seen: Sendable {
        private let outcome = Mutex(Outcome())
        func record(_ change: (inout Outcome) -> Void) { outcome.withLock { change(&$0) } }
        var value: Outcome { outcome.withLock { $0 } }
    }

    /// A connection closed before hiredis saw it connect answers the command it was holding (if any) `nil`, says
    /// once that it closed, and is let go: hiredis frees such a context and calls neither of its callbacks, so a
    /// connection that waited for one stayed alive for good — one per reconnect attempt of a Redis presence whose
    /// other connection failed first.
    @Test(arguments: [false, true])
    func aConnectionClosedWhileStillConnectingAnswersWhatItHeldAndIsLetGo(holdingACommand: Bool) async throws {
        let listener = try SilentListener()
        let outcome = try await LibeventLoopGroup.withLoopGroup(configuration: .init(loopCount: 1)) { group in
            let loop = group.eventLoops[0]
            let seen = Seen()
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                loop.execute {
                    var connection = RedisConnection(
                        loop: loop,
                        endpoint: RedisEndpoint(host: "127.0.0.1", port: listener.port)
                    )
                    connection.onDisconnect = { reason in seen.record { $0.disconnects.append(reason) } }
                    let started = connection.connect()
                    if holdingACommand {
                        connection.send(["PING"]) { reply in seen.record { $0.replies.append(reply == nil) } }
                    }
                    connection.close()
                    connection.close()  // a second close does nothing
                    let released = isKnownUniquelyReferenced(&connection)
                    seen.record {
                        $0.started = started
                        $0.released = released
                    }
                    // Then a while on the loop: a callback hiredis still had to make would come in it.
                    if (try? loop.schedule(after: .milliseconds(50), { done.resume() })) == nil { done.resume() }
                }
            }
            return seen.value
        }
        #expect(outcome.started, "hiredis starts a dial to a socket that listens")
        #expect(outcome.replies == (holdingACommand ? [true] : []), "the PING it held is answered, and answered nil")
        #expect(outcome.disconnects == ["closed"], "it says once that it closed")
        #expect(outcome.released, "nothing but its user keeps the closed connection alive")
    }
}
