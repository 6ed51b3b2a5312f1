/// What the oracles and the load statistics keep per connection, keyed by its (user, room) pair — or per user.
///
/// A population's names (`u<i>` in `room-<j>`, ``Scenario/Population``) pack into one word, so that a million
/// users' entries cost eight bytes of key each — not two strings (32 bytes), nor a joined one, which allocated on
/// every transition. Any other pair keeps its names, in a table of its own. A user alone is the pair of the user and
/// the empty room name: a table keeps either pairs or users alone, not both.
struct UserRoomTable<Value> {
    private var packed: [UInt64: Value] = [:]
    private var named: [Names: Value] = [:]

    private struct Names: Hashable {
        var user: String
        var room: String
    }

    init() {}

    /// The value kept for `user` in `room`, if any.
    subscript(user: String, room: String) -> Value? {
        get {
            if let key = Self.pack(user: user, room: room) { return packed[key] }
            return named[Names(user: user, room: room)]
        }
        set {
            if let key = Self.pack(user: user, room: room) {
                packed[key] = newValue
            } else {
                named[Names(user: user, room: room)] = newValue
            }
        }
    }

    /// Keeps `value` for `user` in `room`, and returns the value it replaces.
    @discardableResult
    mutating func updateValue(_ value: Value, user: String, room: String) -> Value? {
        if let key = Self.pack(user: user, room: room) { return packed.updateValue(value, forKey: key) }
        return named.updateValue(value, forKey: Names(user: user, room: room))
    }

    /// Forgets what was kept for `user` in `room`, and returns it.
    @discardableResult
    mutating func removeValue(user: String, room: String) -> Value? {
        if let key = Self.pack(user: user, room: room) { return packed.removeValue(forKey: key) }
        return named.removeValue(forKey: Names(user: user, room: room))
    }

    /// The value kept for `user` alone, if any.
    subscript(user user: String) -> Value? {
        get { self[user, Self.noRoom] }
        set { self[user, Self.noRoom] = newValue }
    }

    /// Forgets what was kept for `user` alone, and returns it.
    @discardableResult
    mutating func removeValue(user: String) -> Value? {
        removeValue(user: user, room: Self.noRoom)
    }

    /// The room of a user alone: a name no room has (an empty one), which packs to a number no room has.
    private static var noRoom: String { "" }

    /// Makes room for `count` population pairs.
    mutating func reserveCapacity(_ count: Int) {
        packed.reserveCapacity(count)
    }

    /// How many pairs have a value.
    var count: Int { packed.count + named.count }

    /// A population pair as one word: the user's index in the high 32 bits, the room's in the low ones.
    private static func pack(user: String, room: String) -> UInt64? {
        guard let user = index(of: user, after: "u") else { return nil }
        // A room index has at most 9 digits: below 2^32 − 1, which stands for no room.
        guard let room = room.isEmpty ? 0xFFFF_FFFF : index(of: room, after: "room-") else { return nil }
        return user << 32 | room
    }

    /// The number `name` gives after `prefix`, in the one spelling the population writes (decimal digits, no sign,
    /// no leading zero), when it has at most 9 digits (so fits 32 bits: the population's limit is 100,000,000);
    /// `nil` for any other name, which then keeps its text.
    private static func index(of name: String, after prefix: StaticString) -> UInt64? {
        var name = name
        return name.withUTF8 { bytes -> UInt64? in
            let start = prefix.utf8CodeUnitCount
            let digits = bytes.count - start
            guard digits >= 1, digits <= 9,
                bytes.prefix(start).elementsEqual(UnsafeBufferPointer(start: prefix.utf8Start, count: start)),
                digits == 1 || bytes[start] != UInt8(ascii: "0")
            else { return nil }
            var value: UInt64 = 0
            for byte in bytes[start...] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + UInt64(byte - UInt8(ascii: "0"))
            }
            return value
        }
    }
}

extension UserRoomTable: Sendable where Value: Sendable {}
