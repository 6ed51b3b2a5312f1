/// A reference to an object that something else keeps alive, used without a retain or a release.
///
/// A counted reference read from shared storage is retained around its use, and the object's count is one cache line
/// that every thread using it writes: an object every client or every message of a run reaches (a dialect's entry
/// points, an interned retry policy, a room a network lane loads ahead) was retained and released by both shards at
/// once, millions of times. This reference is a plain address.
///
/// **The invariant that makes it safe:** the object outlives every use of the reference. Whoever makes one names
/// the owner that keeps the object — an environment that stores it beside the reference, an intern table that never
/// frees, a simulation that holds its lanes, an actor whose method is running — and the reference must not be used
/// after the owner lets go. Broken, a use reads freed memory: `FenceChecks` (run by `EngineFenceTests`, and by CI in
/// `roomlink-fence-checks` built with AddressSanitizer) exercises each owner's promise, and under AddressSanitizer
/// such a read is reported as a heap use-after-free.
///
/// The engine's other tricks with object lifetimes live here too, so that the rules read as rules: no
/// `unowned(unsafe)`, no `Unmanaged` and no underscored standard-library call anywhere else in `RoomLinkEngine`.
@frozen
public struct UnretainedReference<Object: AnyObject>: @unchecked Sendable {
    // @unchecked Sendable: the reference is an address; sending it sends no access to the object that `Object`'s own
    // Sendable conformance would not allow (every use goes through `withObject`, which hands out `Object` itself).
    @usableFromInline
    let unmanaged: Unmanaged<Object>

    /// Refers to `object`, which its owner keeps alive for as long as this reference is used.
    @inlinable
    public init(_ object: Object) {
        unmanaged = Unmanaged.passUnretained(object)
    }

    /// Refers to the object at `address` (an `UnretainedReference(_:).address`, or an object's identifier as an
    /// address), which its owner keeps alive for as long as this reference is used.
    @inlinable
    public init(at address: UnsafeRawPointer) {
        unmanaged = Unmanaged.fromOpaque(address)
    }

    /// Calls `body` with the object, neither retained nor released around the call.
    @inlinable
    @inline(__always)
    public func withObject<Result>(_ body: (Object) throws -> Result) rethrows -> Result {
        try unmanaged._withUnsafeGuaranteedRef(body)
    }

    /// The object, for code that keeps it (a retain, as any read of a counted reference).
    @inlinable
    public var object: Object { unmanaged.takeUnretainedValue() }

    /// Where the object lives.
    @inlinable
    public var address: UnsafeRawPointer { UnsafeRawPointer(unmanaged.toOpaque()) }
}

extension LoopPinnedActor {
    /// `function`, isolated to this actor, made into a function of the actor alone — to be made once (a static
    /// constant) and called with no hop and no executor lookup from code running on the actor's loop.
    ///
    /// **The invariant that makes it safe:** every call of the result is made on `actor.loop`'s thread, checked
    /// before the call (``onLoop(_:)`` says why that thread is the actor's isolation). `EngineFenceTests` shows a call
    /// off the thread stopping the process at the caller's check.
    @inlinable
    @inline(__always)
    public static func loopEntry<Argument>(
        _ function: @escaping @Sendable (isolated Self, Argument) -> Void
    ) -> @Sendable (Self, Argument) -> Void {
        unsafeBitCast(function, to: (@Sendable (Self, Argument) -> Void).self)
    }

    /// `loopEntry(_:)` for a function of two arguments (a tuple of them would be allocated on every call).
    @inlinable
    @inline(__always)
    public static func loopEntry<First, Second>(
        _ function: @escaping @Sendable (isolated Self, First, Second) -> Void
    ) -> @Sendable (Self, First, Second) -> Void {
        unsafeBitCast(function, to: (@Sendable (Self, First, Second) -> Void).self)
    }

    /// `loopEntry(_:)` for a function that answers.
    @inlinable
    @inline(__always)
    public static func loopEntry<Argument, Result>(
        answering function: @escaping @Sendable (isolated Self, Argument) -> Result
    ) -> @Sendable (Self, Argument) -> Result {
        unsafeBitCast(function, to: (@Sendable (Self, Argument) -> Result).self)
    }
}

/// Where an object lives, for a cache-line prefetch before it is used (``prefetchCacheLines(at:lines:)``): read
/// without a retain — a retain would itself wait for the cold object. Never dereferenced; a prefetch of any address
/// never faults.
@inlinable
public func prefetchAddress(of object: AnyObject) -> UnsafeRawPointer {
    UnsafeRawPointer(bitPattern: UInt(bitPattern: ObjectIdentifier(object)))!
}

/// Where the elements of two parallel arrays start (a table's keys and its records, slot for slot), noted whenever
/// they move, so that the records and keys of one slot can be loaded ahead of a read — by someone who knows the slot
/// before the read comes, and who reading the arrays themselves would wait for the very lines it means to load.
///
/// **The invariant that makes it safe:** a noted address is only ever prefetched, never read: a prefetch never
/// faults, so an address gone stale (the arrays moved, and were not noted again) only wastes the loads. It leans on
/// one fact of the standard library's layout, that a contiguous array's elements follow a 32-byte header (the
/// object header, the count and the capacity, which a read's bounds check loads): were that to change, the loads
/// would miss and nothing would break. `FenceChecks` checks that the notes follow the arrays.
@frozen
public struct ParallelArrayAddresses<First, Second>: Sendable {
    @usableFromInline var first: UInt = 0
    @usableFromInline var second: UInt = 0

    @inlinable
    public init() {}

    /// The addresses noted, or 0 for none.
    @inlinable
    public var noted: [UInt] { [first, second] }

    /// Where the elements of `first` and `second` start now (0 where one has no contiguous storage).
    @inlinable
    public static func addresses(
        of first: some Sequence<First>,
        _ second: some Sequence<Second>
    ) -> [UInt] {
        let (first, second) = start(of: first, second)
        return [first, second]
    }

    /// Notes where the elements of `first` and `second` start now: call it whenever they grow or shrink.
    @inlinable
    public mutating func note(_ first: some Sequence<First>, _ second: some Sequence<Second>) {
        (self.first, self.second) = Self.start(of: first, second)
    }

    /// ``addresses(of:_:)`` without an array: a room notes its table on every join and leave.
    @inlinable
    static func start(of first: some Sequence<First>, _ second: some Sequence<Second>) -> (UInt, UInt) {
        (
            first.withContiguousStorageIfAvailable { UInt(bitPattern: $0.baseAddress) } ?? 0,
            second.withContiguousStorageIfAvailable { UInt(bitPattern: $0.baseAddress) } ?? 0
        )
    }

    /// Starts loading, without waiting for it, the elements at `slot` of both arrays and the headers a bounds check
    /// reads. Nothing when nothing is noted; a slot past the end loads lines nobody reads.
    @inlinable
    public func prefetch(slot: Int32) {
        guard slot >= 0, first != 0, second != 0 else { return }
        let header: UInt = 32
        Self.load(second &- header, bytes: 1)
        Self.load(second &+ UInt(slot) &* UInt(MemoryLayout<Second>.stride), bytes: MemoryLayout<Second>.size)
        Self.load(first &- header, bytes: 1)
        Self.load(first &+ UInt(slot) &* UInt(MemoryLayout<First>.stride), bytes: MemoryLayout<First>.size)
    }

    @inlinable
    static func load(_ address: UInt, bytes: Int) {
        guard let pointer = UnsafeRawPointer(bitPattern: address) else { return }
        prefetchCacheLines(at: pointer, bytes: bytes)
    }
}
