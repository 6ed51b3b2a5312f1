import RoomLinkRuntime
import Testing

/// ``PackedOptional`` gives back what it was given, the extremes included, in the integer's own word.
@Suite struct PackedOptionalTests {
    @Test func everyValueButTheLargestComesBack() {
        for value: Int64? in [nil, 0, 1, -1, .min, .max - 1, 1_700_000_000_000_000_000] {
            var packed = PackedOptional<Int64>(value)
            #expect(packed.value == value)
            packed.value = nil
            #expect(packed.value == nil)
            packed.value = value
            #expect(packed.value == value)
        }
        for value: UInt64? in [nil, 0, 1, .max - 1] {
            #expect(PackedOptional<UInt64>(value).value == value)
        }
    }

    @Test func itTakesOneWordAndNilIsTheDefault() {
        #expect(MemoryLayout<PackedOptional<UInt64>>.size == MemoryLayout<UInt64>.size)
        #expect(MemoryLayout<UInt64?>.size > MemoryLayout<UInt64>.size)
        #expect(PackedOptional<Int64>().value == nil)
        #expect(PackedOptional<Int64>(nil) == PackedOptional<Int64>())
        #expect(PackedOptional<Int64>(0) != PackedOptional<Int64>())
    }
}
