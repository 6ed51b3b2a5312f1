/// What a socket transport tells a load tester about its connections, as they happen (`TCPClientTransport`'s
/// `observer`): attempts, how long the TCP handshake and the login took, why connections failed, heartbeat round
/// trips. Called on the client's loop, often: keep each call short and thread-safe.
public protocol ConnectionObserver: AnyObject, Sendable {
    /// A connection attempt began.
    func connectionAttempted(at time: RuntimeInstant)
    /// A connection attempt succeeded after `handshake` (TCP connect).
    func connectionOpened(after handshake: Duration, at time: RuntimeInstant)
    /// A connection attempt failed, or a login on an open connection did not get in, for `cause`.
    func connectionFailed(_ cause: ConnectionFailure, at time: RuntimeInstant)
    /// An open connection closed (for any reason).
    func connectionClosed(at time: RuntimeInstant)
    /// A login was answered (accepted, refused or busy) `latency` after it was sent.
    func loginAnswered(after latency: Duration, accepted: Bool, at time: RuntimeInstant)
    /// A heartbeat was acknowledged `roundTrip` after it was sent.
    func heartbeatAnswered(after roundTrip: Duration, at time: RuntimeInstant)
}

/// Why a connection, or a login on it, did not get a client in: what a load tester sorts its failures by.
public enum ConnectionFailure: String, Sendable, Hashable, CaseIterable, Codable {
    /// The server refused the TCP connection (`ECONNREFUSED`: nothing listens, or the backlog overflowed).
    case refused
    /// The TCP handshake or the login got no answer before the client gave up on it.
    case timeout
    /// The connection was reset, or closed by the server, before its login was answered.
    case reset
    /// The server answered the login busy (admission control, or a cluster node without its store).
    case busy
    /// The server refused the login's credentials (token).
    case auth
    /// The client ran out of local ports (`EADDRNOTAVAIL`, `EADDRINUSE`): add source addresses.
    case outOfPorts
    /// The client ran out of file descriptors (`EMFILE`, `ENFILE`): add generator processes.
    case outOfFiles
    /// Anything else (no route, unreachable network, …).
    case other
    /// The TLS handshake failed: no version or cipher in common, or the other end does not speak TLS.
    case tlsHandshake
    /// The server's certificate did not verify: signed by an authority the client does not trust, expired, or
    /// issued for another name.
    case certificate
}
