/// A point in time on a RoomLink runtime's clock: nanoseconds since the runtime started.
///
/// Every timestamp RoomLink reports (timer deadlines, event times, report figures) is a `RuntimeInstant` in
/// *scenario time*. On the virtual clock scenario time is the only time there is; on the libevent clock with a
/// time scale of `0.01`, one real second is one hundred scenario seconds, and deadlines are converted at the
/// edge of the timer service so that callers never see real time.
public struct RuntimeInstant: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Nanoseconds since the runtime's epoch.
    public var nanoseconds: Int64

    /// Creates an instant `nanoseconds` after the runtime's epoch.
    public init(nanoseconds: Int64) {
        self.nanoseconds = nanoseconds
    }

    /// The runtime's epoch: the instant the clock started.
    public static let zero = RuntimeInstant(nanoseconds: 0)

    /// Milliseconds since the epoch, as the event log writes them.
    public var milliseconds: Double { Double(nanoseconds) / 1_000_000 }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    public var description: String { "\(milliseconds)ms" }
}

extension RuntimeInstant: InstantProtocol {
    public typealias Duration = Swift.Duration

    public func advanced(by duration: Swift.Duration) -> RuntimeInstant {
        let (sum, overflow) = nanoseconds.addingReportingOverflow(duration.nanosecondsClamped)
        return RuntimeInstant(nanoseconds: overflow ? (duration < .zero ? .min : .max) : sum)
    }

    public func duration(to other: RuntimeInstant) -> Swift.Duration {
        .nanoseconds(other.nanoseconds - nanoseconds)
    }
}

extension Duration {
    /// The duration in whole nanoseconds, clamped to `Int64`'s range.
    ///
    /// Sub-nanosecond parts are truncated toward zero; no RoomLink timing is finer than a nanosecond.
    public var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return seconds < 0 ? .min : .max }
        return sum
    }
}
