import RoomLinkRuntime

/// How a client transport given several servers — the nodes of one cluster (`roomlink serve --redis`) — picks the
/// node a client's new connection goes to. Either way a client whose connection fails or drops moves on to the next
/// node in the list, and every node still serves any room: routing decides only what each node has to keep.
///
/// - ``byClient`` spreads the clients themselves: a room of a hundred members has members on every node, so every
///   node keeps the whole room — its own members and the other nodes' (as remote members, to list them to its own
///   and tell them of their joins and leaves). A node's memory per connection grows with the number of nodes.
/// - ``byRoom`` sends every client of a room to one node, as LiveKit routes a room to the node that hosts it: a node
///   keeps only the members it serves, and its memory per connection stays that of a single server whatever the
///   number of nodes. Redis then carries a room's changes to one subscriber instead of every node. When a node goes,
///   its rooms' clients all move to the same next node, and the rooms stay whole there.
public enum ServerRouting: String, Sendable, Hashable, CaseIterable {
    /// By the client's ID (the default).
    case byClient = "client"
    /// By the room a connection opens for. A RoomLink-protocol connection carries every room of its client: it goes
    /// where the room it opened for goes, and the client's later rooms ride on it (those rooms are then split over
    /// nodes, which the cluster handles as with ``byClient``). A LiveKit connection carries one room.
    case byRoom = "room"

    /// The index, among `count` servers, of the one a connection of the client whose ID hashes to `clientHash` goes
    /// to when it opens for `room`.
    ///
    /// - Parameters:
    ///   - clientHash: The client's stable hash (`ClientEndpoint.endpointHash`).
    ///   - room: The room the connection opens for.
    ///   - count: How many servers there are (at least one).
    /// - Returns: An index in `0..<count`, the same for every process and run.
    public func server(clientHash: UInt64, room: String, count: Int) -> Int {
        let spread =
            switch self {
            case .byClient: clientHash
            // Mixed (Fibonacci hashing): FNV-1a's low bits alone spread names that differ in their last character
            // poorly over a few servers.
            case .byRoom: (StableHash.fnv1a(room) &* 0x9E37_79B9_7F4A_7C15) >> 32
            }
        return Int(spread % UInt64(max(count, 1)))
    }
}
