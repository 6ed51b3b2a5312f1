public import DequeModule

/// A FIFO kept in fixed-size chunks of about 32 KiB: it grows a chunk at a time and never copies what it holds.
///
/// A simulation's lanes hold every message in flight and every heartbeat of a million clients. In a `Deque` they
/// were one ring buffer that grew by half again when full — a copy of the whole queue while both buffers lived, up
/// to a third of it never used — and a ring that wrapped over its whole capacity, so that all of it stayed resident
/// however few items were left. In chunks, the memory follows the items: a chunk is handed back as its last item
/// leaves (one is kept spare, so that a queue that keeps emptying and filling one chunk does not allocate each time),
/// and each chunk is small enough for the allocator to reuse for anything else.
///
/// Items leave only from the front; they may be read in place from the front, in order (``scan(while:)``), or at any
/// place behind it (``peek(at:_:)``). Not copyable: it owns its chunks.
@_spi(RoomLinkInternals) public struct ChunkedQueue<Element>: ~Copyable {
    /// The chunks, oldest first, each of ``chunkCapacity`` places: the first holds items from `head`, the last up to
    /// `tail`, those between are full.
    @usableFromInline var chunks = Deque<UnsafeMutablePointer<Element>>()
    /// The first item's place in the first chunk.
    @usableFromInline var head = 0
    /// The next free place in the last chunk (``chunkCapacity`` when it is full).
    @usableFromInline var tail = 0
    @usableFromInline var held = 0
    /// An emptied chunk kept for the next one the queue needs.
    @usableFromInline var spare: UnsafeMutablePointer<Element>?

    /// Places in a chunk: 32 KiB of items, and at least 16. Small enough that the allocator keeps chunks in its own
    /// heap (a mapping of its own, above 128 KiB here, would cost two system calls a chunk) and a half-used last chunk
    /// wastes little; large enough that a chunk is allocated once per thousand or so small items.
    @inlinable
    static var chunkCapacity: Int { max(16, 32_768 / max(1, MemoryLayout<Element>.stride)) }

    /// An empty queue.
    @inlinable
    @_spi(RoomLinkInternals) public init() {}

    deinit {
        var index = chunks.startIndex
        while index < chunks.endIndex {
            let from = index == chunks.startIndex ? head : 0
            let to = index == chunks.endIndex - 1 ? tail : Self.chunkCapacity
            (chunks[index] + from).deinitialize(count: to - from)
            chunks[index].deallocate()
            index += 1
        }
        spare?.deallocate()
    }

    /// How many items the queue holds.
    @inlinable
    @_spi(RoomLinkInternals) public var count: Int { held }

    @inlinable
    @_spi(RoomLinkInternals) public var isEmpty: Bool { held == 0 }

    /// What `body` reads of the item `offset` places behind the first (the first itself by default), read in place
    /// through its address; `nil` when there is no such item.
    ///
    /// An address, not a `borrowing` value: handed an item, the caller copied it whole — the retains of everything
    /// it holds — to read one field.
    @inlinable
    @_spi(RoomLinkInternals) public func peek<Result>(
        at offset: Int = 0,
        _ body: (UnsafePointer<Element>) throws -> Result
    ) rethrows -> Result? {
        guard offset >= 0, offset < held else { return nil }
        let place = head + offset
        let capacity = Self.chunkCapacity
        return try body(chunks[chunks.startIndex + place / capacity] + place % capacity)
    }

    /// Adds `element` at the back.
    @inlinable
    @_spi(RoomLinkInternals) public mutating func append(_ element: consuming Element) {
        if chunks.isEmpty || tail == Self.chunkCapacity {
            if chunks.isEmpty { head = 0 }
            chunks.append(takeChunk())
            tail = 0
        }
        (chunks[chunks.endIndex - 1] + tail).initialize(to: element)
        tail += 1
        held += 1
    }

    /// Removes and returns the first item; the queue must not be empty.
    @inlinable
    @_spi(RoomLinkInternals) public mutating func removeFirst() -> Element {
        precondition(held > 0, "removeFirst() on an empty ChunkedQueue")
        let element = (chunks[chunks.startIndex] + head).move()
        head += 1
        held -= 1
        if held == 0 {
            // Emptied: its one chunk starts over in place.
            head = 0
            tail = 0
            while chunks.count > 1 { giveBack(chunks.removeFirst()) }
        } else if head == Self.chunkCapacity {
            giveBack(chunks.removeFirst())
            head = 0
        }
        return element
    }

    /// Calls `body` with the address of each item from the front, in order, until it returns `false` or the items run
    /// out (an address, for the reason ``peek(at:_:)`` gives).
    @inlinable
    @_spi(RoomLinkInternals) public func scan(while body: (UnsafePointer<Element>) throws -> Bool) rethrows {
        var index = chunks.startIndex
        while index < chunks.endIndex {
            let chunk = chunks[index]
            var place = index == chunks.startIndex ? head : 0
            let end = index == chunks.endIndex - 1 ? tail : Self.chunkCapacity
            while place < end {
                guard try body(chunk + place) else { return }
                place += 1
            }
            index += 1
        }
    }

    @inlinable
    mutating func takeChunk() -> UnsafeMutablePointer<Element> {
        if let chunk = spare {
            spare = nil
            return chunk
        }
        return .allocate(capacity: Self.chunkCapacity)
    }

    /// Keeps an emptied chunk spare, or frees it when one is.
    @inlinable
    mutating func giveBack(_ chunk: UnsafeMutablePointer<Element>) {
        if spare == nil {
            spare = chunk
        } else {
            chunk.deallocate()
        }
    }
}
