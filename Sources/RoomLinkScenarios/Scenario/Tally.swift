/// Counts by string keys when there are few of them (event types, states, reasons, codes: tens): a linear scan of
/// short strings, most frequent first, costs less than hashing every one — and a run counts every event.
struct Tally: Sendable {
    private var keys: [String] = []
    private var counts: [Int] = []

    /// Adds one to `key`.
    mutating func add(_ key: String) {
        if let index = keys.firstIndex(of: key) {
            counts[index] += 1
        } else {
            keys.append(key)
            counts.append(1)
        }
    }

    /// The counts by key.
    var dictionary: [String: Int] {
        Dictionary(uniqueKeysWithValues: zip(keys, counts))
    }
}
