internal import CLibevent
internal import CLibeventTLS
package import RoomLinkEngine

#if canImport(Glibc)
import Glibc
#endif

/// TLS for the connections RoomLink opens: the certificate authorities it trusts and the name it asks for.
///
/// The peer's certificate must chain to one of the authorities (the system's store, or `caFile` alone) and name the
/// host dialled (or `serverName`); a certificate that does not is a failed connection (`ConnectionFailure.certificate`),
/// never a silent fall back to plain text. TLS 1.2 is the oldest version offered.
public struct TLSClientConfiguration: Sendable, Hashable {
    /// A PEM file of the certificate authorities to trust instead of the system's store (`--ca FILE`).
    public var caFile: String?
    /// The name to ask for (SNI) and to check the certificate against; `nil` for the host of the address dialled.
    public var serverName: String?

    public init(caFile: String? = nil, serverName: String? = nil) {
        self.caFile = caFile
        self.serverName = serverName
    }
}

/// TLS for the connections a server takes: its certificate chain and private key, both PEM
/// (`serve --tls-cert FILE --tls-key FILE`).
public struct TLSServerConfiguration: Sendable, Hashable {
    /// The server's certificate, followed by any intermediates, in PEM.
    public var certificateFile: String
    /// The certificate's private key, in PEM.
    public var keyFile: String

    public init(certificateFile: String, keyFile: String) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
    }
}

/// What can go wrong setting TLS up, before any connection: each case names the file and OpenSSL's reason.
public enum TLSError: Error, Sendable, Hashable, CustomStringConvertible {
    case cannotReadAuthorities(file: String, reason: String)
    case cannotReadCertificate(file: String, reason: String)
    case cannotReadKey(file: String, reason: String)
    case keyDoesNotMatchCertificate(certificate: String, key: String)
    case noSystemAuthorities(reason: String)
    case openSSL(reason: String)

    public var description: String {
        switch self {
        case .cannotReadAuthorities(let file, let reason):
            "cannot read the certificate authorities in \(file): \(reason)"
        case .cannotReadCertificate(let file, let reason): "cannot read the certificate chain in \(file): \(reason)"
        case .cannotReadKey(let file, let reason): "cannot read the private key in \(file): \(reason)"
        case .keyDoesNotMatchCertificate(let certificate, let key):
            "the private key in \(key) is not the key of the certificate in \(certificate)"
        case .noSystemAuthorities(let reason): "cannot load the system's certificate authorities: \(reason)"
        case .openSSL(let reason): "OpenSSL: \(reason)"
        }
    }
}

/// One OpenSSL context, client or server, made once and shared by every connection of a transport: OpenSSL lets
/// many threads make sessions from a context once it is set up, and it is never changed after `init`.
///
/// Connections get a bufferevent from it (``bufferEvent(fd:on:connecting:serverName:)``): libevent's OpenSSL
/// bufferevent, which filters the socket's so that the connection above reads and writes plain bytes and sees
/// `BEV_EVENT_CONNECTED` only when the handshake is done.
package final class TLSContext: @unchecked Sendable {
    // Safe: `context` is set up in `init` and only read after (SSL_new takes a reference of its own), and OpenSSL's
    // contexts are safe to share between threads for that; it is freed in `deinit`, when no one holds this object.
    private let context: OpaquePointer

    /// A client's context: the system's authorities, or `configuration.caFile`'s, and peer verification on.
    package init(client configuration: TLSClientConfiguration) throws(TLSError) {
        let context = try Self.makeContext(TLS_client_method())
        self.context = context
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        if let file = configuration.caFile {
            guard SSL_CTX_load_verify_locations(context, file, nil) == 1 else {
                throw .cannotReadAuthorities(file: file, reason: Self.lastError())
            }
        } else if SSL_CTX_set_default_verify_paths(context) != 1 {
            throw .noSystemAuthorities(reason: Self.lastError())
        }
    }

    /// A server's context: its certificate chain and key, checked to match.
    package init(server configuration: TLSServerConfiguration) throws(TLSError) {
        let context = try Self.makeContext(TLS_server_method())
        self.context = context
        guard SSL_CTX_use_certificate_chain_file(context, configuration.certificateFile) == 1 else {
            throw .cannotReadCertificate(file: configuration.certificateFile, reason: Self.lastError())
        }
        guard SSL_CTX_use_PrivateKey_file(context, configuration.keyFile, SSL_FILETYPE_PEM) == 1 else {
            let reason = Self.lastError()
            // OpenSSL checks the key against the certificate as it reads it.
            if reason.hasSuffix("key values mismatch") {
                throw .keyDoesNotMatchCertificate(
                    certificate: configuration.certificateFile,
                    key: configuration.keyFile
                )
            }
            throw .cannotReadKey(file: configuration.keyFile, reason: reason)
        }
        guard SSL_CTX_check_private_key(context) == 1 else {
            ERR_clear_error()
            throw .keyDoesNotMatchCertificate(
                certificate: configuration.certificateFile,
                key: configuration.keyFile
            )
        }
    }

    deinit {
        SSL_CTX_free(context)
    }

    /// A context of `method` with what every RoomLink context has: TLS 1.2 at least, and idle connections' buffers
    /// released (`SSL_MODE_RELEASE_BUFFERS`: tens of kilobytes a held connection).
    private static func makeContext(_ method: OpaquePointer?) throws(TLSError) -> OpaquePointer {
        guard let context = SSL_CTX_new(method) else { throw .openSSL(reason: lastError()) }
        _ = CLibeventTLS_setMinimumVersion12(context)
        _ = CLibeventTLS_releaseBuffers(context)
        return context
    }

    /// A bufferevent for `fd` (or, with `fd` -1, for a socket `bufferevent_socket_connect` will open) that speaks TLS
    /// over it: connecting, it asks for `serverName` and checks the certificate names it (an IP address is checked
    /// as one, and not sent as a name); accepting, it answers with the server's certificate. `nil` when OpenSSL or
    /// libevent cannot make one (out of memory); then `fd` is still the caller's.
    package func bufferEvent(
        fd: Int32,
        on base: OpaquePointer,
        connecting: Bool,
        serverName: String?,
        options: Int32 = Sockets.bufferEventOptions
    ) -> OpaquePointer? {
        guard let ssl = SSL_new(context) else { return nil }
        if connecting, let serverName {
            let param = SSL_get0_param(ssl)
            if Self.isIPAddress(serverName) {
                X509_VERIFY_PARAM_set1_ip_asc(param, serverName)
            } else {
                _ = CLibeventTLS_setServerName(ssl, serverName)
                _ = SSL_set1_host(ssl, serverName)
            }
        }
        let state = connecting ? CLibeventTLS_connecting() : CLibeventTLS_accepting()
        guard
            let bufferEvent = bufferevent_openssl_socket_new(
                base,
                fd,
                ssl,
                bufferevent_ssl_state(rawValue: UInt32(state)),
                options
            )
        else {
            SSL_free(ssl)
            return nil
        }
        // A peer that closes its socket without TLS's close-notify (most do, on a reset or a crash) is an end of
        // stream, as on plain TCP, not an error.
        bufferevent_openssl_set_allow_dirty_shutdown(bufferEvent, 1)
        return bufferEvent
    }

    /// Why a TLS bufferevent failed before its handshake was done, when TLS is the reason: the certificate did not
    /// verify (`ConnectionFailure.certificate`, with OpenSSL's words for why), or the handshake failed otherwise
    /// (`ConnectionFailure.tlsHandshake`); `nil` when the failure was the socket's (refused, reset), which `errno`
    /// tells, or came after the handshake. Clears the bufferevent's OpenSSL errors.
    package static func failure(of bufferEvent: OpaquePointer) -> (ConnectionFailure, reason: String)? {
        var code = bufferevent_get_openssl_error(bufferEvent)
        var first: UInt = 0
        while code != 0 {
            if first == 0 { first = code }
            code = bufferevent_get_openssl_error(bufferEvent)
        }
        if let ssl = bufferevent_openssl_get_ssl(bufferEvent) {
            guard SSL_is_init_finished(ssl) == 0 else { return nil }
            let verdict = SSL_get_verify_result(ssl)
            if verdict != X509_V_OK {
                let reason = X509_verify_cert_error_string(verdict).map { String(cString: $0) } ?? "code \(verdict)"
                return (.certificate, reason)
            }
        }
        guard first != 0 else { return nil }
        return (.tlsHandshake, Self.describe(first))
    }

    /// The bufferevent of a connection a client opens on `fd`: over TLS when `tls` is given (the handshake asking
    /// for, and checking, `serverName`), plain otherwise. RoomLink's and LiveKit's client connections open theirs so.
    package static func clientBufferEvent(
        _ tls: TLSContext?,
        fd: Int32,
        on base: OpaquePointer,
        serverName: String
    ) -> OpaquePointer? {
        guard let tls else { return bufferevent_socket_new(base, fd, Sockets.bufferEventOptions) }
        return tls.bufferEvent(fd: fd, on: base, connecting: true, serverName: serverName)
    }

    /// Why a client connection failed before it opened: TLS's cause when TLS was the reason (``failure(of:)``),
    /// otherwise what `errno` says.
    package static func connectFailure(of bufferEvent: OpaquePointer?, tls: TLSContext?) -> ConnectionFailure {
        let failure = tls != nil ? bufferEvent.flatMap(failure(of:))?.0 : nil
        return failure ?? ConnectionFailure(errno: errno)
    }

    /// OpenSSL's words for an error code.
    static func describe(_ code: UInt) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The thread's last OpenSSL error, in OpenSSL's words, and the queue cleared.
    static func lastError() -> String {
        var last: UInt = 0
        while case let code = ERR_get_error(), code != 0 { last = code }
        return last == 0 ? "unknown error" : describe(last)
    }

    static func isIPAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}

// MARK: - HTTPS (libevent's evhttp over TLS)

extension TLSContext {
    /// An evhttp connection to `host:port` that speaks TLS (an `https://` URL), asking for `serverName` and checking
    /// the certificate names it; `nil` when one cannot be made.
    package func httpConnection(
        on base: OpaquePointer,
        host: String,
        port: UInt16,
        serverName: String?
    ) -> OpaquePointer? {
        // evhttp's own bufferevents close their socket when freed and call back at once: the same here.
        let options = Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)
        guard
            let bufferEvent = bufferEvent(
                fd: -1,
                on: base,
                connecting: true,
                serverName: serverName ?? host,
                options: options
            )
        else { return nil }
        return evhttp_connection_base_bufferevent_new(base, nil, bufferEvent, host, port)
    }

    /// An evhttp connection to `host`:`port` a client opens: over TLS when `tls` is given (asking for `serverName`,
    /// or the host), plain otherwise. The admin client, the webhooks and the token fetches open theirs so.
    package static func httpConnection(
        _ tls: TLSContext?,
        on base: OpaquePointer,
        host: String,
        port: UInt16,
        serverName: String?
    ) -> OpaquePointer? {
        guard let tls else { return evhttp_connection_base_new(base, nil, host, port) }
        return tls.httpConnection(on: base, host: host, port: port, serverName: serverName)
    }

    /// Makes the evhttp server `http` answer over TLS: each connection it accepts gets a bufferevent of this
    /// context's. The context must outlive `http`.
    package func serveHTTPS(_ http: OpaquePointer) {
        evhttp_set_bevcb(http, httpsBufferEvent, Unmanaged.passUnretained(self).toOpaque())
    }
}

/// evhttp's `bevcb`: a TLS bufferevent for a connection it accepts (its socket set by evhttp after).
private func httpsBufferEvent(_ base: OpaquePointer?, _ context: UnsafeMutableRawPointer?) -> OpaquePointer? {
    guard let base, let context else { return nil }
    let tls = Unmanaged<TLSContext>.fromOpaque(context).takeUnretainedValue()
    return tls.bufferEvent(
        fd: -1,
        on: base,
        connecting: false,
        serverName: nil,
        options: Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)
    )
}
