/// A hash of a name that is the same in every run and process (Swift's `Hasher` is seeded per process).
package enum StableHash {
    /// FNV-1a of the UTF-8 bytes.
    package static func fnv1a(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return hash
    }
}
