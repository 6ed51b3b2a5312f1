internal import CLibevent

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TCP endpoint as `HOST:PORT`: an IPv4 address or name, or a bracketed IPv6 address (`[::1]:7000`).
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT`.
    ///
    /// - Throws: ``NetworkError/invalidAddress(_:reason:)`` naming what is wrong.
    public init(parsing text: String) throws(NetworkError) {
        guard let colon = text.lastIndex(of: ":") else {
            throw .invalidAddress(text, reason: "expected HOST:PORT")
        }
        var host = String(text[..<colon])
        let portText = text[text.index(after: colon)...]
        guard let port = UInt16(portText) else {
            throw .invalidAddress(text, reason: "the port '\(portText)' is not a number from 0 to 65535")
        }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw .invalidAddress(text, reason: "the host is empty") }
        self.init(host: host, port: port)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Whether the address is on this machine only (127.0.0.0/8, ::1, localhost).
    public var isLoopback: Bool {
        host == "localhost" || host.hasPrefix("127.") || host == "::1"
    }

    /// The address resolved (`getaddrinfo`, numeric port): the bytes of a `sockaddr` and their length.
    package func resolved() throws(NetworkError) -> ResolvedAddress {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            let reason = status == 0 ? "no address" : String(cString: gai_strerror(status))
            throw .invalidAddress(description, reason: reason)
        }
        defer { freeaddrinfo(list) }
        let length = Int(first.pointee.ai_addrlen)
        let bytes = [UInt8](UnsafeRawBufferPointer(start: first.pointee.ai_addr, count: length))
        return ResolvedAddress(bytes: bytes)
    }
}

/// A resolved socket address: a `sockaddr`'s bytes.
package struct ResolvedAddress: Sendable {
    var bytes: [UInt8]

    /// `AF_INET` or `AF_INET6`.
    package var family: Int32 {
        withSockaddr { address, _ in Int32(address.pointee.sa_family) }
    }

    func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>, Int32) -> T) -> T {
        bytes.withUnsafeBytes { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), Int32(raw.count))
        }
    }

    /// The address a socket is bound to (`getsockname`), as text and port.
    static func local(of fd: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard status == 0 else { return nil }
        return describe(&storage)
    }

    /// `storage` as an address and port.
    static func describe(_ storage: UnsafePointer<sockaddr_storage>) -> SocketAddress? {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(storage.pointee.ss_family) {
        case AF_INET:
            return storage.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                var raw = address.pointee.sin_addr
                inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
                let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                return SocketAddress(host: host, port: UInt16(bigEndian: address.pointee.sin_port))
            }
        case AF_INET6:
            return storage.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
                var raw = address.pointee.sin6_addr
                inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
                let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                return SocketAddress(host: host, port: UInt16(bigEndian: address.pointee.sin6_port))
            }
        default:
            return nil
        }
    }
}

extension ResolvedAddress {
    /// Starts connecting `bufferEvent` (a libevent bufferevent with no socket yet, or one bound to a source address)
    /// to this address: `bufferevent_socket_connect`'s status (0: under way).
    package func connect(_ bufferEvent: OpaquePointer) -> Int32 {
        withSockaddr { bufferevent_socket_connect(bufferEvent, $0, $1) }
    }
}

extension SocketAddress {
    /// Starts connecting `bufferEvent` (a libevent bufferevent with no socket yet) to this address, resolved now:
    /// `bufferevent_socket_connect`'s status (0: under way).
    package func connect(_ bufferEvent: OpaquePointer) throws(NetworkError) -> Int32 {
        try resolved().withSockaddr { bufferevent_socket_connect(bufferEvent, $0, $1) }
    }
}
