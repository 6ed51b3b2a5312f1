/// Receives the outcome of a timer scheduled on a ``TimerService``.
///
/// Every timer has exactly one outcome: a one-shot timer is either fired once or cancelled once; a periodic timer
/// fires once per period until it is cancelled once. Both calls run on the service's own thread (the loop the
/// timer was scheduled on, or the simulation), so an actor pinned to that loop can handle them with
/// `assumeIsolated` and no thread hop:
///
/// ```swift
/// extension Client: TimerHandler {
///     nonisolated func timerFired(_ timer: TimerHandle) {
///         assumeIsolated { $0.heartbeatDue() }
///     }
/// }
/// ```
public protocol TimerHandler: Sendable {
    /// Called when the timer's deadline has passed (never before it).
    func timerFired(_ timer: TimerHandle)

    /// Called once when the timer is cancelled before firing, explicitly or because its loop shut down.
    ///
    /// For a periodic timer this is its last call.
    func timerCancelled(_ timer: TimerHandle)
}

extension TimerHandler {
    /// Does nothing.
    public func timerCancelled(_ timer: TimerHandle) {}
}

/// A handler as a timer table keeps it: a class instance — the handler itself when it is one (an actor, a class),
/// else a box around it. Sixteen bytes where `any TimerHandler` takes forty, in every timer a million clients keep.
@_spi(RoomLinkInternals) public typealias TimerHandlerObject = any TimerHandler & AnyObject

extension TimerHandlers {
    /// `handler` as a table keeps it: itself when it is a class instance, else boxed.
    @inlinable
    @_spi(RoomLinkInternals) public static func object(_ handler: some TimerHandler) -> TimerHandlerObject {
        if let object = handler as? TimerHandlerObject { return object }
        return BoxedTimerHandler(handler)
    }
}

/// Namespace for ``TimerHandlers/object(_:)``.
@_spi(RoomLinkInternals) public enum TimerHandlers {}

/// A value-type handler in a box, so that a table keeps every handler as an object.
@usableFromInline
final class BoxedTimerHandler<Handler: TimerHandler>: TimerHandler {
    @usableFromInline let handler: Handler

    @inlinable
    init(_ handler: Handler) {
        self.handler = handler
    }

    @inlinable
    func timerFired(_ timer: TimerHandle) { handler.timerFired(timer) }

    @inlinable
    func timerCancelled(_ timer: TimerHandle) { handler.timerCancelled(timer) }
}
