import RoomLinkEngine
import RoomLinkRuntime
import RoomLinkTestSupport
import RoomLinkWire

#if canImport(Glibc)
import Glibc
#endif

/// A client written against the wire protocol alone, on a blocking loopback socket: what a hostile or buggy peer
/// sends, byte for byte.
///
/// Every read and write waits at most `timeout` of real time, times the hang-limit factor (three under a sanitizer,
/// six in the soak: ``Sanitizers/hangLimitFactor``), so a test never hangs: a bound for hangs, not a speed. A read
/// that waited that long throws ``RawError/timedOut(_:)`` rather than taking the silence for the end of the stream.
/// (A ThreadSanitizer soak run read nothing at all after an offence — no answer, no goodbye — which a loop stalled
/// past an unscaled 20 s and a dropped stream would both have explained; now they read differently.)
final class RawConnection {
    let fd: Int32
    private var reader = FrameReader()
    /// How long a read or a write may wait.
    let bound: Duration

    init(port: UInt16, receiveBuffer: Int32? = nil, timeout: Duration = .seconds(20)) throws {
        bound = timeout * Sanitizers.hangLimitFactor
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawError.system("socket", errno) }
        var seconds = timeval(tv_sec: Int(bound.components.seconds), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &seconds, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &seconds, socklen_t(MemoryLayout<timeval>.size))
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard status == 0 else {
            Glibc.close(fd)
            throw RawError.system("connect", errno)
        }
    }

    deinit { Glibc.close(fd) }

    /// Writes `bytes`; false once the server has closed the connection, or a write waited its whole bound.
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if sent < 0, errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    func send(_ frame: ClientFrame) {
        write(frame.encoded(at: .zero))
    }

    func hello(dialect: DialectName? = .zego) {
        send(.hello(ClientHello(dialect: dialect, clientID: "raw")))
    }

    /// The next frame, or `nil` at the end of the stream (the server closed or reset the connection).
    ///
    /// - Throws: ``RawError/timedOut(_:)`` when nothing came for ``bound``; a frame's decoding error.
    func next() throws -> ServerFrame? {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            if let body = try reader.next() { return try ServerFrame(body: body) }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            // A socket with a timeout is not restarted after a stop signal (signal(7)): a process stopped and
            // continued (`kill -STOP`, a stall made on demand) gets EINTR, which ends nothing.
            if count < 0, errno == EINTR { continue }
            if count < 0, errno == EAGAIN || errno == EWOULDBLOCK { throw RawError.timedOut(bound) }
            guard count > 0 else { return nil }
            reader.append(buffer[..<count])
        }
    }

    /// Every frame until the server closes the connection.
    func untilClosed() throws -> [ServerFrame] {
        var frames: [ServerFrame] = []
        while let frame = try next() { frames.append(frame) }
        return frames
    }

    enum RawError: Error {
        case system(String, Int32)
        /// A read waited its whole bound.
        case timedOut(Duration)
    }
}
