public import RoomLinkEngine
public import RoomLinkRuntime

/// A client connection's round trips, as a value: when each room's unanswered login and heartbeat left, and what
/// their answers — or their lack — say. These are the figures a load tester's `ConnectionObserver` collects. The
/// socket code (`RoomLinkNetwork`'s client connection) tells it what left, what came back and when the connection
/// ended, and hands the reports it answers to the observer; tests drive it alone, with no socket.
public struct ConnectionRoundTrips: Sendable {
    /// What to tell the observer.
    public enum Report: Sendable, Hashable {
        /// A login did not get the client in, for this cause (`ConnectionObserver.connectionFailed(_:at:)`).
        case failed(ConnectionFailure)
        /// A login was answered this long after it left (`ConnectionObserver.loginAnswered(after:accepted:at:)`).
        case loginAnswered(after: Duration, accepted: Bool)
        /// A heartbeat was acknowledged this long after it left
        /// (`ConnectionObserver.heartbeatAnswered(after:at:)`).
        case heartbeatAnswered(after: Duration)
    }

    /// When each room's unanswered login left.
    private var loginsSent: [String: RuntimeInstant] = [:]
    /// When each room's unanswered heartbeat left.
    private var heartbeatsSent: [String: RuntimeInstant] = [:]

    /// A connection on which nothing has left yet.
    public init() {}

    /// How many logins wait for their answers.
    public var loginsWaiting: Int { loginsSent.count }

    /// `message` of `room` leaves at `now`. A login sent again before the last one was answered means the last one
    /// timed out: that is a failure to report.
    public mutating func sending(_ message: ClientMessage, room: String, at now: RuntimeInstant) -> [Report] {
        switch message {
        case .login:
            return loginsSent.updateValue(now, forKey: room) == nil ? [] : [.failed(.timeout)]
        case .heartbeat:
            heartbeatsSent[room] = now
            return []
        default:
            return []
        }
    }

    /// `message` of `room` arrives at `now`: a heartbeat's acknowledgement, or a login's answer — accepted, or a
    /// failure named by why (a refused token is `auth`, busy is `busy`, anything else `other`) — timed from when
    /// it left. An answer to nothing waiting reports nothing.
    public mutating func answered(_ message: ServerMessage, room: String, at now: RuntimeInstant) -> [Report] {
        switch message {
        case .heartbeatAck:
            guard let sent = heartbeatsSent.removeValue(forKey: room) else { return [] }
            return [.heartbeatAnswered(after: sent.duration(to: now))]
        case .loginAccepted, .loginRejected, .busy, .kicked, .sessionUnknown:
            guard let sent = loginsSent.removeValue(forKey: room) else { return [] }
            let answered = Report.loginAnswered(after: sent.duration(to: now), accepted: message.isLoginAccepted)
            return Self.failure(answering: message).map { [.failed($0), answered] } ?? [answered]
        default:
            return []
        }
    }

    /// The connection ended while logins waited for their answers: each of them failed, for `cause` (a reset when
    /// it closed under the client, a timeout when the client gave it up). They wait no more.
    public mutating func unanswered(_ cause: ConnectionFailure) -> [Report] {
        defer { loginsSent.removeAll() }
        return Array(repeating: .failed(cause), count: loginsSent.count)
    }

    /// Why a login answered with `message` did not get the client in; `nil` when it did.
    private static func failure(answering message: ServerMessage) -> ConnectionFailure? {
        switch message {
        case .loginAccepted: nil
        case .loginRejected(_, _, .tokenInvalid): .auth
        case .busy: .busy
        default: .other
        }
    }
}

extension ServerMessage {
    fileprivate var isLoginAccepted: Bool {
        if case .loginAccepted = self { true } else { false }
    }
}

extension ConnectionObserver {
    /// Tells the observer `reports`, in order, at `time`.
    public func report(_ reports: [ConnectionRoundTrips.Report], at time: RuntimeInstant) {
        for report in reports {
            switch report {
            case .failed(let cause): connectionFailed(cause, at: time)
            case .loginAnswered(let latency, let accepted): loginAnswered(after: latency, accepted: accepted, at: time)
            case .heartbeatAnswered(let roundTrip): heartbeatAnswered(after: roundTrip, at: time)
            }
        }
    }
}
