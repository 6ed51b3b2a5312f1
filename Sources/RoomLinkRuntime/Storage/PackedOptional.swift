/// An optional integer kept in the integer's own word, where `Optional` takes a second one for its tag — for a
/// field that a million values keep (a client's step time, a room's member records).
///
/// It keeps the value itself, and `Wrapped.max` for `nil`. **The invariant that makes it right:** the value is never
/// `Wrapped.max`, which would come back as `nil` (a clock's nanoseconds, or a count of events, never reach it); a
/// debug build stops at such a store. `PackedOptionalTests` checks that every other value, the extremes included,
/// comes back as it went in.
@frozen
public struct PackedOptional<Wrapped: FixedWidthInteger & Sendable>: Sendable, Equatable {
    @usableFromInline var bits: Wrapped

    @inlinable
    public init(_ value: Wrapped? = nil) {
        bits = .max
        self.value = value
    }

    /// The value, or `nil`.
    @inlinable
    public var value: Wrapped? {
        get { bits == .max ? nil : bits }
        set {
            assert(newValue != .max, "PackedOptional cannot keep \(Wrapped.self).max")
            bits = newValue ?? .max
        }
    }
}
