public import RoomLinkWire
import Synchronization

/// What a network server has done since it started: counters any thread may read while the loops run.
public final class NetworkServerStatistics: Sendable {
    /// One counter of ``NetworkServerStatistics``.
    public enum Counter: String, Sendable, CaseIterable {
        /// Connections accepted.
        case connectionsAccepted
        /// Connections closed (for any `CloseReason`, which `RoomLinkWire` defines).
        case connectionsClosed
        case framesReceived, framesSent, bytesReceived, bytesSent
        /// Login requests received (every kind).
        case loginRequests
        case loginsAccepted
        /// Logins refused for good (bad token, member cap).
        case loginsRejected
        /// Logins turned away by admission control (busy, retry after).
        case loginsBusy
        case heartbeatsReceived
        /// Presence changes sent to members (user updates).
        case presenceChangesSent
        /// Failed accepts (out of file descriptors, mostly).
        case acceptFailures
        /// Webhook requests answered 2xx (LiveKit's protocol, `--webhook`).
        case webhooksDelivered
        /// Webhook requests that failed: no connection, a timeout, or an answer other than 2xx.
        case webhooksFailed
        /// Webhook events dropped because the delivery queue was full (a reconnect storm is a webhook storm).
        case webhooksDropped
        /// Accepted connections whose TLS handshake failed (a client that spoke no TLS, or refused the certificate).
        case tlsHandshakesFailed
    }

    private let counters: [Cell] = Counter.allCases.map { _ in Cell() }
    private let closedBy: [Cell] = CloseReason.allCases.map { _ in Cell() }

    /// An atomic counter in a box: `Atomic` is not copyable, so an array holds boxes.
    private final class Cell: Sendable {
        let value = Atomic<Int>(0)
    }

    package init() {}

    /// The value of `counter` so far.
    public subscript(_ counter: Counter) -> Int {
        counters[counter.index].value.load(ordering: .relaxed)
    }

    /// Connections open now.
    public var connectionsOpen: Int { self[.connectionsAccepted] - self[.connectionsClosed] }

    /// Connections closed so far for `reason`.
    public func connectionsClosed(by reason: CloseReason) -> Int {
        closedBy[reason.index].value.load(ordering: .relaxed)
    }

    package func add(_ counter: Counter, _ amount: Int = 1) {
        counters[counter.index].value.add(amount, ordering: .relaxed)
    }

    package func count(_ reason: CloseReason) {
        closedBy[reason.index].value.add(1, ordering: .relaxed)
        add(.connectionsClosed)
    }
}

extension NetworkServerStatistics.Counter {
    fileprivate var index: Int { Self.allCases.firstIndex(of: self)! }
}

extension CloseReason {
    fileprivate var index: Int { Self.allCases.firstIndex(of: self)! }
}
