/// Receives every event of many clients, on the thread that published it.
///
/// A population run records all clients' events through one sink (an event-log writer, a counter) instead of a
/// stream and a task per client.
///
/// - Important: `record` runs synchronously on the publishing client's loop; a sink shared by clients on several
///   loops must be safe to call from those threads at once.
public protocol EventSink<Event>: Sendable {
    associatedtype Event: Sendable

    /// Records `event`, published by the client named `client`.
    func record(_ event: Stamped<Event>, from client: String)

    /// Records how a login attempt of `client` ended, when the clients' environment logs attempts
    /// (``RoomClient/Environment/logsAttempts``). Attempts are not events of the app's stream: only a sink sees them,
    /// and its default implementation ignores them.
    func recordAttempt(_ attempt: Stamped<AttemptRecord>, from client: String)
}

extension EventSink {
    /// Ignores the attempt.
    public func recordAttempt(_ attempt: Stamped<AttemptRecord>, from client: String) {}
}
