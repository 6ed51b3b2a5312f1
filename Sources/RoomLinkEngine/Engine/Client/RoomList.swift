/// A client's rooms in join order, the first kept inline.
///
/// Almost every client is in one room. As an array, that one room was an allocation of its own beside the client —
/// 32 bytes of header and the allocator's rounding — and a second cold cache line on every heartbeat of a million
/// clients; here it lives in the client's own storage, and only a second room (ZEGO's multi-room mode) starts an
/// array.
public struct RoomList: RandomAccessCollection, MutableCollection, Sendable {
    /// The first room; `nil` only when the list is empty.
    private var head: RoomConnection?
    /// The rooms after the first.
    private var tail: [RoomConnection] = []

    /// An empty list.
    public init() {}

    public var startIndex: Int { 0 }
    public var endIndex: Int { head == nil ? 0 : 1 + tail.count }

    public subscript(position: Int) -> RoomConnection {
        // Borrowed, not copied: `rooms[i].phase` on the heartbeat's path must not copy (and retain) a whole room.
        _read {
            if position == 0 {
                yield head!
            } else {
                yield tail[position - 1]
            }
        }
        _modify {
            if position == 0 {
                yield &head!
            } else {
                yield &tail[position - 1]
            }
        }
    }

    /// Adds `room` after the others.
    mutating func append(_ room: RoomConnection) {
        if head == nil {
            head = room
        } else {
            tail.append(room)
        }
    }

    /// Removes and returns the room at `index`; the rooms after it move up one place.
    mutating func remove(at index: Int) -> RoomConnection {
        guard index == 0 else { return tail.remove(at: index - 1) }
        let first = head!
        head = tail.isEmpty ? nil : tail.removeFirst()
        return first
    }
}
