import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A forwarder on loopback between clients and a server that can fall silent as a firewall's DROP rule makes a path
/// silent — the fault the client's socket cannot see, unlike its own transport's injected one:
///
/// - a connection made before the silence keeps both its ends open; what either side sends waits (TCP retransmits
///   into the void) and arrives, in order, a close included — not when the silence lifts but at the next
///   retransmission, whose backoff has grown by then: here, when the test calls ``releaseHeld()``;
/// - a connection the client opens during the silence gets no further than the proxy: if the client gives up on it
///   before the silence lifts it never reaches the server (its SYN never got through), and otherwise it is connected
///   then, with what the client wrote.
///
/// One thread runs it with poll(2), 20 ms at a time; ``stop()`` ends it and closes every socket.
///
/// `stall` makes the thread wait before each delivery to a client until the first silence, as a thread descheduled on
/// a loaded machine does: what the server sends meanwhile is read in the thread's next turn, which may find the path
/// silent by then.
final class SilentProxy: Sendable {
    /// The port clients connect to.
    let port: UInt16
    private let stall: Duration
    private let silent = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    private let released = Atomic<Bool>(false)
    private let finished = Mutex<Bool>(false)
    private let stalledNanoseconds = Atomic<Int>(0)

    /// Starts forwarding to `serverPort` on 127.0.0.1, stalling `stall` before each delivery to a client.
    init(to serverPort: UInt16, stall: Duration = .zero) throws {
        self.stall = stall
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(listener, 64) == 0 else {
            Glibc.close(listener)
            throw RawConnection.RawError.system("bind", errno)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(listener, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in run(listener: listener, serverPort: serverPort) }
        thread.start()
    }

    /// Whether the path is silent now.
    var isSilent: Bool {
        get { silent.load(ordering: .sequentiallyConsistent) }
        set { silent.store(newValue, ordering: .sequentiallyConsistent) }
    }

    /// The longest the thread was held up past its poll's timeout so far (descheduled on a loaded machine), real time;
    /// the stalls it makes on purpose (`stall`) are not counted.
    var longestStall: Duration { .nanoseconds(stalledNanoseconds.load(ordering: .relaxed)) }

    /// The connections made before the silence carry again (their retransmissions got through).
    func releaseHeld() {
        released.store(true, ordering: .sequentiallyConsistent)
    }

    /// Stops the thread and closes every socket; returns once it has.
    func stop() async {
        stopped.store(true, ordering: .sequentiallyConsistent)
        while !finished.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(10)) }
    }

    /// One client connection: its socket, the server's once connected, and what waits to cross each way.
    private final class Pair {
        let client: Int32
        var server: Int32?
        var toServer: [UInt8] = []
        var toClient: [UInt8] = []
        var clientClosed = false
        var serverClosed = false
        /// Made before a silence: carries again only once released.
        var held = false

        init(client: Int32) { self.client = client }
    }

    private func run(listener: Int32, serverPort: UInt16) {
        var pairs: [Pair] = []
        var beenSilent = false
        defer {
            for pair in pairs {
                Glibc.close(pair.client)
                if let server = pair.server { Glibc.close(server) }
            }
            Glibc.close(listener)
            finished.withLock { $0 = true }
        }
        let clock = ContinuousClock()
        var turnStart = clock.now
        var stalledOnPurpose = Duration.zero
        while !stopped.load(ordering: .sequentiallyConsistent) {
            // A turn takes a poll (at most 20 ms) and what it moves; anything beyond is the machine's doing.
            let now = clock.now
            let late = (turnStart.duration(to: now) - stalledOnPurpose - .milliseconds(20)) / .nanoseconds(1)
            if late > Double(stalledNanoseconds.load(ordering: .relaxed)) {
                stalledNanoseconds.store(Int(late), ordering: .relaxed)
            }
            turnStart = now
            stalledOnPurpose = .zero
            let silentNow = isSilent
            beenSilent = beenSilent || silentNow
            if silentNow {
                for pair in pairs where pair.server != nil { pair.held = true }
            }
            let releasedNow = released.load(ordering: .sequentiallyConsistent)
            var polled = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            for pair in pairs {
                polled.append(pollfd(fd: pair.clientClosed ? -1 : pair.client, events: Int16(POLLIN), revents: 0))
                polled.append(
                    pollfd(fd: pair.serverClosed ? -1 : (pair.server ?? -1), events: Int16(POLLIN), revents: 0)
                )
            }
            _ = poll(&polled, nfds_t(polled.count), 20)
            for (index, pair) in pairs.enumerated() {
                if polled[1 + 2 * index].revents != 0 {
                    if !Self.read(pair.client, into: &pair.toServer) { pair.clientClosed = true }
                }
                if polled[2 + 2 * index].revents != 0, let server = pair.server {
                    if !Self.read(server, into: &pair.toClient) { pair.serverClosed = true }
                }
            }
            if polled[0].revents & Int16(POLLIN) != 0 {
                let fd = accept(listener, nil, nil)
                if fd >= 0 { pairs.append(Pair(client: fd)) }
            }
            guard !silentNow else { continue }
            // The path carries again: connections made during the silence reach the server now — unless their
            // client gave up first — and everything that waited crosses, closes last.
            pairs.removeAll { pair in
                if pair.held && !releasedNow { return false }
                if pair.server == nil {
                    guard !pair.clientClosed, let server = Self.connect(port: serverPort) else {
                        Glibc.close(pair.client)
                        return true
                    }
                    pair.server = server
                }
                let server = pair.server!
                if !pair.toServer.isEmpty { Self.write(&pair.toServer, to: server) }
                if !pair.toClient.isEmpty {
                    // Until the first silence only: after it, a stalled thread would notice late that a client gave up
                    // an attempt, and connect it to the server anyway.
                    if stall > .zero && !beenSilent {
                        usleep(UInt32(stall / .microseconds(1)))
                        stalledOnPurpose += stall
                    }
                    Self.write(&pair.toClient, to: pair.client)
                }
                if pair.clientClosed || pair.serverClosed {
                    Glibc.close(pair.client)
                    Glibc.close(server)
                    return true
                }
                return false
            }
        }
    }

    /// Reads what is there into `buffer`; false at the end of the stream or on an error.
    private static func read(_ fd: Int32, into buffer: inout [UInt8]) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if count > 0 {
            buffer.append(contentsOf: chunk[0..<count])
            return true
        }
        return count < 0 && (errno == EAGAIN || errno == EINTR)
    }

    private static func write(_ buffer: inout [UInt8], to fd: Int32) {
        let sent = buffer.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        buffer.removeFirst(max(0, sent))
    }

    private static func connect(port: UInt16) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = loopback(port: port)
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard status == 0 else {
            Glibc.close(fd)
            return nil
        }
        return fd
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return address
    }
}
