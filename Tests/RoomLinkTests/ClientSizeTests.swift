@_spi(Reflection) import Swift
import RoomLink
import RoomLinkRuntime
import Testing

/// A client's fields end by byte 344, so that it takes the allocator's 352-byte blocks: a million-client run keeps a
/// million, and one word more takes the next size, 16 bytes more each. (Read from the type's field offsets: what the
/// allocator reports of one block depends on which freed block it happened to reuse.)
@Suite struct ClientSizeTests {
    @Test func aClientsFieldsEndWithinItsAllocatorBlock() {
        var end = 0
        var fields = 0
        let walked = _forEachField(of: ZegoClient.self, options: Self.classType) { _, offset, type, _ in
            func size<T>(_: T.Type) -> Int { MemoryLayout<T>.size }
            end = max(end, offset + _openExistential(type, do: size))
            fields += 1
            return true
        }
        #expect(walked)
        #expect(fields >= 10, "the reflection saw the client's fields")
        #expect(end <= 344)
    }

    /// `_EachFieldOptions.classType`, built here: the library's static is a `var`.
    private static var classType: _EachFieldOptions { _EachFieldOptions(rawValue: 1 << 0) }
}
