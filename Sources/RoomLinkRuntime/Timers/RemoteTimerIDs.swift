import Synchronization

/// Hands out timer handles off a service's thread, from a space disjoint from the wheel's packed IDs.
@_spi(RoomLinkInternals) public final class RemoteTimerIDs: Sendable {
    private let counter = Atomic<UInt64>(0)

    @_spi(RoomLinkInternals) public init() {}

    /// A new handle value, unique for this allocator.
    @_spi(RoomLinkInternals) public func next() -> UInt64 {
        let (value, _) = counter.add(1, ordering: .relaxed)
        return value | (1 << 63)
    }

    /// Whether a handle value came from an allocator like this one.
    @inlinable
    @_spi(RoomLinkInternals) public static func isRemote(_ raw: UInt64) -> Bool { raw & (1 << 63) != 0 }
}
