/// A hash of a name that is the same in every run and process (Swift's `Hasher` is seeded per process).
package enum StableHash {
    /// FNV-1a of the UTF-8 bytes.
    package static func fnv1a(_ text: String) -> UInt64 {
        fnv1a(continuing: 0xcbf2_9ce4_8422_2325, text)
    }

    /// FNV-1a of the UTF-8 bytes of `text`, continuing `hash`, the FNV-1a of some text before it: `fnv1a(a + b)`
    /// is `fnv1a(continuing: fnv1a(a), b)`.
    package static func fnv1a(continuing hash: UInt64, _ text: String) -> UInt64 {
        var hash = hash
        for byte in text.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return hash
    }
}
