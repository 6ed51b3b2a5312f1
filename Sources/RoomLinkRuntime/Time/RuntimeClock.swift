/// A `Clock` over a ``TimerService``, for APIs that take a clock (`Task.sleep(for:clock:)`,
/// swift-async-algorithms' timers).
public struct RuntimeClock: Clock {
    public typealias Instant = RuntimeInstant

    /// The service whose time this clock tells.
    public let service: any TimerService

    /// Creates a clock reading `service`'s time.
    public init(_ service: any TimerService) {
        self.service = service
    }

    public var now: RuntimeInstant { service.now }
    public var minimumResolution: Duration { .nanoseconds(1) }

    public func sleep(until deadline: RuntimeInstant, tolerance: Duration?) async throws {
        try await service.sleep(until: deadline)
    }
}
