internal import OrderedCollections
internal import RoomLinkRuntime

/// A table in insertion order — keys and values in two parallel arrays, slot for slot — whose slots can be loaded
/// ahead of a read by someone who knows the slot before the read comes (``prefetch(slot:)``): a room's members, whose
/// records a heartbeat reads at the slot the member's client was told.
///
/// The table itself is read directly (``dictionary``) and changed only through this type, which notes where its
/// arrays start after every change that can move them (an insertion, a removal, a reservation); a change of a value in
/// place (``update(at:_:)``) moves nothing.
///
/// **The invariant that makes it safe:** it keeps no pointer it reads. The noted addresses are
/// `ParallelArrayAddresses`, which are only ever prefetched; were a note to go stale (the table copied and then
/// changed, so that its arrays were copied too), the loads would be wasted and nothing would break. The test
/// `theNotedMemberTableFollowsTheTable` and the fence checks (`FenceChecks.parallelArrayAddresses`) hold the notes to
/// the arrays as they grow, shrink and are reserved.
struct PrefetchedTable<Key: Hashable, Value> {
    /// The table: read it here, change it through the methods below.
    private(set) var dictionary: OrderedDictionary<Key, Value> = [:]
    private var addresses = ParallelArrayAddresses<Key, Value>()

    init() {}

    // MARK: Reading

    @inline(__always) var values: OrderedDictionary<Key, Value>.Values { dictionary.values }
    @inline(__always) var keys: OrderedSet<Key> { dictionary.keys }
    @inline(__always) var elements: OrderedDictionary<Key, Value>.Elements { dictionary.elements }
    @inline(__always) var count: Int { dictionary.count }
    @inline(__always) var isEmpty: Bool { dictionary.isEmpty }
    /// How many values the table has room for before it grows.
    var capacity: Int { dictionary.values.elements.capacity }

    @inline(__always) subscript(key: Key) -> Value? { dictionary[key] }

    @inline(__always) func index(forKey key: Key) -> Int? { dictionary.index(forKey: key) }

    // MARK: Changing in place

    /// Changes the value at `index` in place: one access to the table however many fields `body` writes.
    @inline(__always)
    mutating func update<Result>(at index: Int, _ body: (inout Value) throws -> Result) rethrows -> Result {
        try body(&dictionary.values[index])
    }

    /// Changes the value of `key` in place; `nil` when the table has no such key.
    @inline(__always) @discardableResult
    mutating func update<Result>(forKey key: Key, _ body: (inout Value) throws -> Result) rethrows -> Result? {
        guard let index = dictionary.index(forKey: key) else { return nil }
        return try body(&dictionary.values[index])
    }

    // MARK: Changing the table's shape (each notes where its arrays are now)

    /// Sets the value of `key`, appending it when new; `nil` removes it.
    mutating func setValue(_ value: Value?, forKey key: Key) {
        dictionary[key] = value
        note()
    }

    /// Sets the value of `key`, inserting it at `index` when new; the value it replaced and the key's place.
    mutating func updateValue(
        _ value: Value,
        forKey key: Key,
        insertingAt index: Int
    ) -> (originalMember: Value?, index: Int) {
        defer { note() }
        return dictionary.updateValue(value, forKey: key, insertingAt: index)
    }

    @discardableResult
    mutating func removeValue(forKey key: Key) -> Value? {
        defer { note() }
        return dictionary.removeValue(forKey: key)
    }

    /// Makes room for `count` entries at once.
    mutating func reserveCapacity(_ count: Int) {
        dictionary.reserveCapacity(count)
        note()
    }

    // MARK: Loading ahead

    /// Starts loading, without waiting for it, the key and the value at `slot` and the headers a bounds check reads.
    /// Nothing when the table never held anything; a slot past the end loads lines nobody reads, and nothing faults.
    @inline(__always)
    func prefetch(slot: Int32) {
        addresses.prefetch(slot: slot)
    }

    /// Where the keys and values start, as noted and as they are (for tests: the notes follow the table).
    var notedAddresses: (noted: [UInt], actual: [UInt]) {
        (addresses.noted, ParallelArrayAddresses.addresses(of: dictionary.keys, dictionary.values))
    }

    private mutating func note() {
        addresses.note(dictionary.keys, dictionary.values)
    }
}
