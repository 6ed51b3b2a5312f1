@_spi(Reflection) import Swift
import Testing

@testable import RoomLink
@testable import RoomLinkEngine

/// The bytes a simulation's lane loads of a delivery's other end (``LaneFootprint``) still cover the fields the
/// deliveries read, and a client still fits its allocator block: read from the types' field offsets, so that moving
/// a field past them fails here.
@Suite struct ClientFootprintTests {
    /// Where each stored field of `type` ends, by name.
    static func fieldEnds(of type: AnyClass) -> [String: Int] {
        var ends: [String: Int] = [:]
        _ = _forEachField(of: type, options: _EachFieldOptions(rawValue: 1 << 0)) { name, offset, field, _ in
            func size<T>(_: T.Type) -> Int { MemoryLayout<T>.size }
            ends[String(cString: name)] = offset + _openExistential(field, do: size)
            return true
        }
        return ends
    }

    /// A client's fields end by byte 344, so that it takes the allocator's 352-byte blocks (a million-client run
    /// keeps a million; a word more takes the next size, 16 bytes more each) — and the fields a room answering it
    /// reads end within what the lane loads of it.
    @Test func aClientStaysWithinItsBlockAndAnsweringItReadsItsFirstBytes() throws {
        let ends = Self.fieldEnds(of: ZegoClient.self)
        #expect(ends.count >= 10, "the reflection saw the client's fields: \(ends)")
        #expect(ends.values.max() ?? .max <= 344)
        for field in ["endpointID", "userID", "loop"] {
            #expect(try #require(ends[field]) <= LaneFootprint.clientAnswered, "\(field)")
        }
        // The hint is an `Atomic<Int32>`, whose layout the reflection reports without a size: four bytes.
        let hintEnd = try #require(ends["hint"])
        #expect(hintEnd + 4 <= LaneFootprint.clientAnswered)
        // So is the link state a network keeps in the client (an `Atomic<UInt8>`), which a room's answer reads while
        // any link is not up.
        let linkEnd = try #require(ends["link"])
        #expect(linkEnd + 1 <= LaneFootprint.clientAnswered)
    }

    @Test func aHeartbeatSentToARoomReadsItsFirstBytes() throws {
        let ends = Self.fieldEnds(of: ServerRoom.self)
        #expect(ends.count >= 5, "the reflection saw the room's fields: \(ends)")
        for field in ["roomID", "roomHash", "loop"] {
            #expect(try #require(ends[field]) <= LaneFootprint.roomHeader, "\(field)")
        }
    }
}
