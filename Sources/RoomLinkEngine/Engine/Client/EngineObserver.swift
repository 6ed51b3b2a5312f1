/// Sees what every client's engine does, as it does it, whatever the dialect: a load test's statistics
/// (`LoadStatistics`). Called on the client's loop; one observer shared by clients on several loops must be safe
/// to call from those threads at once.
public protocol EngineObserver: Sendable {
    /// `client`'s connection to `room` went through `transition` at `time`.
    func transition(_ transition: RoomTransition, client: String, room: String, at time: RuntimeInstant)
    /// `client` sent a login for `room` at `time`: a first join's attempt, or a reconnection's; `number` counts the
    /// attempts of the join or reconnection episode (1 for its first).
    func attempt(client: String, room: String, reconnecting: Bool, number: Int, at time: RuntimeInstant)
    /// A callback of `client` reached the app (its stream and sink) `latency` after the timer or message that
    /// caused it was due, in real time. Real clock only (in virtual time nothing is late).
    func delivered(client: String, latency: Duration)
}

extension EngineObserver {
    public func delivered(client: String, latency: Duration) {}
}
