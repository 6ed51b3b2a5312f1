internal import CLibevent
import RoomLinkEngine

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// libevent's socket constants and calls as Swift sees them (its flags are C enums and macros).
package enum Sockets {
    /// Every bufferevent closes its socket when freed, and defers its callbacks to the loop: a write never calls
    /// back into the code that wrote (see `LibeventLoop.runCallback`).
    package static let bufferEventOptions = Int32(BEV_OPT_CLOSE_ON_FREE.rawValue | BEV_OPT_DEFER_CALLBACKS.rawValue)
    package static let readWrite = Int16(EV_READ | EV_WRITE)
    package static let read = Int16(EV_READ)
    package static let eof = Int16(BEV_EVENT_EOF)
    package static let error = Int16(BEV_EVENT_ERROR)
    package static let timeout = Int16(BEV_EVENT_TIMEOUT)
    package static let connected = Int16(BEV_EVENT_CONNECTED)

    /// Sends small frames at once (heartbeats are latency, not throughput).
    package static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Writes `bytes` to `bufferEvent`'s socket at once when nothing is waiting before them, and leaves to the
    /// bufferevent only what the socket did not take. A `bufferevent_write` alone turns the socket's write interest on
    /// and, once the loop has written, off again — two `epoll_ctl` calls around each frame's `writev`; a fan-out server
    /// writes one frame to each of many connections per loop turn, so that was three system calls a frame where one
    /// does. Order is kept: a socket with bytes waiting in its buffer gets the new ones behind them. A write that
    /// fails (a reset) leaves the bytes to the bufferevent, whose own write fails the same way and reports it. Only
    /// for a connected socket: on one still connecting, the `send` would take the error libevent reads to report a
    /// failed connect.
    package static func write(_ bytes: UnsafeRawBufferPointer, to bufferEvent: OpaquePointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        var sent = 0
        if evbuffer_get_length(bufferevent_get_output(bufferEvent)) == 0 {
            let fd = bufferevent_getfd(bufferEvent)
            if fd >= 0 {
                sent = max(0, Glibc.send(fd, base, bytes.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)))
            }
        }
        if sent < bytes.count { _ = bufferevent_write(bufferEvent, base + sent, bytes.count - sent) }
    }

    /// Starts an accepted connection's bufferevent reading. Reading only: writing is enabled from the start
    /// (libevent's default), and the bufferevent watches for writability once bytes wait in its output. Enabling
    /// writing here too armed that watch on an empty buffer — the socket is writable at once, so two `epoll_ctl` calls
    /// and a wake-up for nothing on every accepted connection.
    package static func startReading(_ bufferEvent: OpaquePointer) {
        bufferevent_enable(bufferEvent, read)
    }

    /// Sets the kernel's send buffer of `fd` (`SO_SNDBUF`).
    package static func setSendBuffer(_ fd: Int32, bytes: Int) {
        var size = Int32(clamping: bytes)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    /// The input buffer's high watermark: libevent stops reading a connection whose unread bytes reach it. Two
    /// maximal frames: a complete frame always fits, and a peer cannot make the process buffer more.
    package static let inputHighWatermark = 2 * (4 + 65_536)

    /// `duration` of scenario time as a libevent timeout in real time (`scale` real seconds per scenario second).
    static func timeval(_ duration: Duration, scale: Double) -> timeval {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        let micros = Int(min(seconds * scale, 86_400 * 365) * 1e6)
        return Glibc.timeval(tv_sec: micros / 1_000_000, tv_usec: micros % 1_000_000)
    }

    /// `errno` as text.
    package static func errorText(_ code: Int32) -> String { String(cString: strerror(code)) }
}

/// The frames waiting in a bufferevent's input buffer, read in place.
enum InputFrames {
    enum Next {
        /// A whole frame's body, valid until `drain` is called.
        case frame(UnsafeRawBufferPointer, consumed: Int)
        /// Not a whole frame yet.
        case incomplete
        /// The length prefix is over the maximum.
        case tooLong(length: Int)
    }

    static func next(in input: OpaquePointer) -> Next {
        let available = evbuffer_get_length(input)
        guard available >= 4 else { return .incomplete }
        var prefix: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0)
        _ = withUnsafeMutableBytes(of: &prefix) { evbuffer_copyout(input, $0.baseAddress, 4) }
        let length = Int(prefix.0) << 24 | Int(prefix.1) << 16 | Int(prefix.2) << 8 | Int(prefix.3)
        guard length <= 65_536 else { return .tooLong(length: length) }
        guard available >= 4 + length else { return .incomplete }
        guard let start = evbuffer_pullup(input, 4 + length) else { return .incomplete }
        return .frame(UnsafeRawBufferPointer(start: start + 4, count: length), consumed: 4 + length)
    }
}

extension Sockets {
    /// Linux's `IP_BIND_ADDRESS_NO_PORT` (not in Glibc's module): a bound socket takes its port at connect, so that
    /// many connections from one address to different servers share ports.
    private static let bindAddressNoPort: Int32 = 24

    /// A non-blocking TCP socket bound to `source` (port 0), or −1 with `errno` set.
    package static func bound(to source: ResolvedAddress) -> Int32 {
        let socket = Glibc.socket(
            source.family,
            Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
            0
        )
        guard socket >= 0 else { return -1 }
        var on: Int32 = 1
        if source.family == AF_INET {
            _ = setsockopt(socket, Int32(IPPROTO_IP), bindAddressNoPort, &on, socklen_t(MemoryLayout<Int32>.size))
        }
        let status = source.withSockaddr { bind(socket, $0, socklen_t($1)) }
        guard status == 0 else {
            let error = errno
            Glibc.close(socket)
            errno = error
            return -1
        }
        return socket
    }
}

extension ConnectionFailure {
    /// The failure an `errno` of `socket`, `bind` or `connect` stands for.
    package init(errno: Int32) {
        switch errno {
        case ECONNREFUSED: self = .refused
        case ETIMEDOUT: self = .timeout
        case ECONNRESET, EPIPE, ECONNABORTED: self = .reset
        case EADDRNOTAVAIL, EADDRINUSE: self = .outOfPorts
        case EMFILE, ENFILE, ENOBUFS, ENOMEM: self = .outOfFiles
        default: self = .other
        }
    }
}
