/// Conversion between scenario time and real time for a time scale (real = scenario × factor).
@_spi(RoomLinkInternals) public struct TimeScale: Sendable {
    /// Real nanoseconds per scenario nanosecond.
    @_spi(RoomLinkInternals) public let factor: Double

    @inlinable
    @_spi(RoomLinkInternals) public init(_ factor: Double) { self.factor = factor }

    /// The real time for a scenario time, rounded up so that scaling never makes a timer early.
    @inlinable
    @_spi(RoomLinkInternals) public func real(_ scenario: Int64) -> UInt64 {
        guard scenario > 0 else { return 0 }
        if factor == 1 { return UInt64(scenario) }
        let real = (Double(scenario) * factor).rounded(.up)
        return real >= Double(UInt64.max) ? .max : UInt64(real)
    }

    /// The scenario time for a real time, rounded down.
    @inlinable
    @_spi(RoomLinkInternals) public func scenario(_ real: UInt64) -> Int64 {
        if factor == 1 { return Int64(clamping: real) }
        let scenario = (Double(real) / factor).rounded(.down)
        return scenario >= Double(Int64.max) ? .max : Int64(scenario)
    }
}
