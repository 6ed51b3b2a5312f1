/// A client's rooms in join order, the first kept inline.
///
/// Almost every client is in one room. As an array, that one room was an allocation of its own beside the client —
/// 32 bytes of header and the allocator's rounding — and a second allocation to read on every heartbeat; here it lives
/// in the client's own storage, and only a second room (ZEGO's multi-room mode) starts an array.
public struct RoomList: RandomAccessCollection, MutableCollection, Sendable {
    /// The first room, when ``tail`` is not `nil`; a vacant stand-in otherwise. Not an optional: a field read through
    /// `head!` copied the whole room (152 bytes, and retains) where a plain stored value is read in place.
    private var head = RoomConnection.vacant
    /// The rooms after the first; `nil` when the list is empty.
    private var tail: [RoomConnection]?

    /// An empty list.
    public init() {}

    public var startIndex: Int { 0 }
    public var endIndex: Int { tail.map { 1 + $0.count } ?? 0 }

    // A plain getter, inlined, where a read coroutine was called out of line and handed back a room the caller then
    // copied whole (152 bytes, and the retains of its strings and channel) to read one field — several times on every
    // message a client received. Inlined, reading one field of the getter's result can load that field alone — but
    // the optimiser does not always see through it (a client's answers still copied the room whole: BENCHMARKS.md,
    // issue 31's eighteenth part), so the hot paths read through `readRoom` and `withRoom`.
    public subscript(position: Int) -> RoomConnection {
        @inline(__always) get {
            if position == 0, tail != nil { return head }
            return tail![position - 1]
        }
        @inline(__always) _modify {
            if position == 0, tail != nil {
                yield &head
            } else {
                yield &tail![position - 1]
            }
        }
    }

    /// Calls `body` with the room at `position`, in place: what every message and heartbeat of a client reads and
    /// writes goes through here, where reading a field through the subscript's getter could copy the whole room.
    @inline(__always)
    mutating func withRoom<Result>(at position: Int, _ body: (inout RoomConnection) throws -> Result) rethrows -> Result
    {
        if position == 0, tail != nil { return try body(&head) }
        return try body(&tail![position - 1])
    }

    /// Calls `body` with the room at `position`, borrowed in place: what a non-mutating read of several fields goes
    /// through. A room read through the subscript's getter into a local, or handed to one of its methods, was a copy
    /// of the whole room (an outlined value-witness copy, with the retains of its strings, peers and channel) — on
    /// every login a client sent and every answer it took.
    @inline(__always)
    func readRoom<Result>(at position: Int, _ body: (borrowing RoomConnection) throws -> Result) rethrows -> Result {
        if position == 0, tail != nil { return try body(head) }
        return try body(tail![position - 1])
    }

    /// The rooms' IDs as they are now, in order: what a loop that may remove rooms goes by. One room's without an
    /// allocation, and each read in place (`map(\.roomID)` allocated an array, and its key path copied every room
    /// whole through the type's value witnesses — half a million clients at once when a storm takes their link).
    var roomIDs: RoomIDs {
        RoomIDs(first: tail == nil ? nil : head.roomID, rest: tail.map { $0.map { $0.roomID } } ?? [])
    }

    /// The IDs ``roomIDs`` lists.
    struct RoomIDs: Sequence, IteratorProtocol {
        fileprivate var first: String?
        fileprivate var rest: [String]
        private var position = 0

        fileprivate init(first: String?, rest: [String]) {
            self.first = first
            self.rest = rest
        }

        mutating func next() -> String? {
            if let id = first {
                first = nil
                return id
            }
            guard position < rest.count else { return nil }
            defer { position += 1 }
            return rest[position]
        }
    }

    /// The index of the room named `roomID`, if the list has it.
    func index(ofRoom roomID: String) -> Int? {
        guard tail != nil else { return nil }
        if head.roomID == roomID { return 0 }
        return tail?.firstIndex { $0.roomID == roomID }.map { $0 + 1 }
    }

    /// Adds `room` after the others.
    mutating func append(_ room: RoomConnection) {
        if tail == nil {
            head = room
            tail = []
        } else {
            tail!.append(room)
        }
    }

    /// Removes and returns the room at `index`; the rooms after it move up one place.
    mutating func remove(at index: Int) -> RoomConnection {
        guard index == 0 else { return tail!.remove(at: index - 1) }
        precondition(tail != nil, "room index out of range")
        var first = RoomConnection.vacant
        swap(&first, &head)
        if tail!.isEmpty {
            tail = nil
        } else {
            head = tail!.removeFirst()
        }
        return first
    }
}

extension RoomConnection {
    /// What an empty ``RoomList`` holds in place of a first room: never read.
    static let vacant = RoomConnection(
        roomID: "",
        options: JoinOptions(),
        session: SessionID(rawValue: 0),
        now: .zero,
        retry: RetryPolicy.zegoDefault.makeIterator(random: SeededRandom(seed: 0))
    )
}
