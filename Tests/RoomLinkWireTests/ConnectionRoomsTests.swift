import Testing

@testable import RoomLinkWire

/// The rooms of one connection: one inline, the rest in a dictionary — a map like any other from outside.
struct ConnectionRoomsTests {
    private func contents(_ rooms: ConnectionRooms<Int>) -> [String: Int] {
        var all: [String: Int] = [:]
        for (key, value) in rooms {
            #expect(all[key] == nil, "\(key) listed twice")
            all[key] = value
        }
        return all
    }

    @Test func actsAsAMapWhateverTheNumberOfRooms() {
        var rooms = ConnectionRooms<Int>()
        var model: [String: Int] = [:]
        #expect(rooms.count == 0 && contents(rooms).isEmpty)
        // Adds, replaces and removes in an order that moves the inline room out and back.
        let steps: [(String, Int?)] = [
            ("a", 1), ("a", 2), ("b", 3), ("c", 4), ("a", nil), ("b", 5), ("d", 6), ("c", nil), ("missing", nil),
            ("b", nil), ("d", nil), ("e", 7), ("e", 8),
        ]
        for (key, value) in steps {
            rooms[key] = value
            model[key] = value
            #expect(contents(rooms) == model, "after \(key) = \(value.map(String.init) ?? "nil")")
            #expect(rooms.count == model.count)
            for name in ["a", "b", "c", "d", "e", "missing"] { #expect(rooms[name] == model[name]) }
        }
        rooms.removeAll()
        #expect(rooms.count == 0 && contents(rooms).isEmpty && rooms["e"] == nil)
    }

    @Test func aValueInsideChangesInPlace() {
        var rooms = ConnectionRooms<Int>()
        rooms["a"] = 1
        rooms["b"] = 10
        rooms["a"]? += 1
        rooms["b"]? += 1
        rooms["c"]? += 1
        #expect(contents(rooms) == ["a": 2, "b": 11])
    }
}
