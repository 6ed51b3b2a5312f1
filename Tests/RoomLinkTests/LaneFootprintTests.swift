@_spi(Reflection) import Swift
import Testing

@testable import RoomLink
@testable import RoomLinkEngine

/// The bytes a simulation's lane loads ahead of each delivery (``LaneFootprint``) still cover the fields the
/// deliveries read: read from the types' field offsets, so that moving a field past them fails here.
@Suite struct LaneFootprintTests {
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

    @Test func aClientsFieldsEndWithinWhatItsDeliveriesLoad() throws {
        let ends = Self.fieldEnds(of: ZegoClient.self)
        #expect(ends.count >= 10, "the reflection saw the client's fields: \(ends)")
        #expect(ends.values.max() ?? .max <= LaneFootprint.client)
        for field in ["endpointID", "userID", "loop"] {
            #expect(try #require(ends[field]) <= LaneFootprint.clientAnswered, "\(field)")
        }
        // The hint is an `Atomic<Int32>`, whose layout the reflection reports without a size: four bytes.
        let hintEnd = try #require(ends["hint"])
        #expect(hintEnd + 4 <= LaneFootprint.clientAnswered)
    }

    @Test func aRoomsFieldsEndWithinWhatItsDeliveriesLoad() throws {
        let ends = Self.fieldEnds(of: ServerRoom.self)
        #expect(ends.count >= 5, "the reflection saw the room's fields: \(ends)")
        #expect(ends.values.max() ?? .max <= LaneFootprint.room)
        for field in ["roomID", "roomHash", "loop"] {
            #expect(try #require(ends[field]) <= LaneFootprint.roomHeader, "\(field)")
        }
    }
}
