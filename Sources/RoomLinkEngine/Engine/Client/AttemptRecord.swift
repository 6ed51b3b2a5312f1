/// One login attempt of a client and how it ended: the event log's optional `attempt` line (`--attempts`), an added
/// type beyond contract §7 that shows a client's retry schedule.
///
/// `{"t_ms":…,"user":"A","room":"r1","type":"attempt","n":3,"after_ms":2400,"outcome":"busy","code":1002099,
/// "retry_after_ms":500}`: the line's time is when the outcome was known; `n` counts the attempts of the join or
/// reconnection episode from 1; `after_ms` is when the attempt was sent, from the episode's start, in whole milliseconds.
public struct AttemptRecord: Sendable, Equatable {
    /// How an attempt ended.
    public enum Outcome: String, Sendable, Hashable, CaseIterable {
        /// The server accepted it.
        case ok
        /// No answer within the attempt timeout (or before the episode gave up).
        case timeout
        /// It could not be made or was turned down for good: the link was down, the connection dropped under it,
        /// the server could not resume the session, or refused the login (a bad token, a full room).
        case refused
        /// The server was too busy (admission control): it answered with a delay to wait before the next attempt.
        case busy
    }

    public var room: String
    /// The attempt's number in its episode, from 1.
    public var number: Int
    /// Whether the episode is a reconnection (not a first join).
    public var reconnecting: Bool
    /// When the attempt was sent, from the episode's start.
    public var after: Duration
    public var outcome: Outcome
    /// What a busy server asked the client to wait.
    public var retryAfter: Duration?
    /// The dialect's code for a busy server (``RoomDialect/busyCode``), logged with a busy outcome.
    public var busyCode: Int64

    public init(
        room: String,
        number: Int,
        reconnecting: Bool,
        after: Duration,
        outcome: Outcome,
        retryAfter: Duration? = nil,
        busyCode: Int64 = 0
    ) {
        self.room = room
        self.number = number
        self.reconnecting = reconnecting
        self.after = after
        self.outcome = outcome
        self.retryAfter = retryAfter
        self.busyCode = busyCode
    }
}

extension AttemptRecord: EventLogRepresentable {
    public var eventLogLine: EventLogLine {
        var fields: [(String, EventLogLine.Value)] = [
            ("n", .integer(Int64(number))),
            ("after_ms", .integer(Self.wholeMilliseconds(after))),
            ("outcome", .string(outcome.rawValue)),
        ]
        if outcome == .busy {
            fields.append(("code", .integer(busyCode)))
            if let retryAfter { fields.append(("retry_after_ms", .integer(Self.wholeMilliseconds(retryAfter)))) }
        }
        return EventLogLine(type: "attempt", room: room, fields: fields)
    }

    /// A duration in whole milliseconds, rounded up (a wait is never shown shorter than it was).
    private static func wholeMilliseconds(_ duration: Duration) -> Int64 {
        let nanoseconds = duration.nanosecondsClamped
        return nanoseconds / 1_000_000 + (nanoseconds % 1_000_000 > 0 ? 1 : 0)
    }
}
