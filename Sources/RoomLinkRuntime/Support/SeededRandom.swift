/// A seeded pseudo-random generator (xoshiro256**, seeded through SplitMix64).
///
/// The same seed gives the same sequence on every machine and in every run, which is what makes virtual-time
/// scenarios reproducible. Derive independent streams with ``init(seed:stream:)`` instead of sharing one
/// generator across actors whose order of use could change.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: (UInt64, UInt64, UInt64, UInt64)

    /// Creates a generator for `seed`, on the independent stream `stream`.
    public init(seed: UInt64, stream: UInt64 = 0) {
        var mix = seed ^ (stream &* 0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03
        func splitMix() -> UInt64 {
            mix &+= 0x9E37_79B9_7F4A_7C15
            var z = mix
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        state = (splitMix(), splitMix(), splitMix(), splitMix())
    }

    public mutating func next() -> UInt64 {
        let result = rotate(state.1 &* 5, 7) &* 9
        let t = state.1 << 17
        state.2 ^= state.0
        state.3 ^= state.1
        state.1 ^= state.2
        state.0 ^= state.3
        state.2 ^= t
        state.3 = rotate(state.3, 45)
        return result
    }

    private func rotate(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }
}
