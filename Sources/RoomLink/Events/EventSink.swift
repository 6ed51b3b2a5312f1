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
}
