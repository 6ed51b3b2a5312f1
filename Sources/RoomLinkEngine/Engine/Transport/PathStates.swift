import Synchronization

/// The state of a fault-injecting transport's paths: each client's link that is not up, and the rooms cut off.
/// Shared by the simulated network and the TCP client transport, which differ only in what a fault does.
///
/// Reading is the hot path (every message asks): while every link is up and no room is cut off — the common case —
/// a read is one atomic load and takes no lock.
package final class PathStates: Sendable {
    private let links = LockedBox<[ObjectIdentifier: LinkState]>([:])
    /// How many links are not up.
    private let linksNotUp = Atomic<Int>(0)
    private let partitioned = LockedBox<Set<String>>([])
    private let partitionCount = Atomic<Int>(0)

    package init() {}

    /// The link of the client `key` names.
    package func link(of key: ObjectIdentifier) -> LinkState {
        guard linksNotUp.load(ordering: .acquiring) > 0 else { return .up }
        return links.withLock { $0[key] ?? .up }
    }

    /// Sets the link of the client `key` names; `false` when it already had that state.
    package func setLink(_ state: LinkState, for key: ObjectIdentifier) -> Bool {
        links.withLock { links -> Bool in
            guard (links[key] ?? .up) != state else { return false }
            links[key] = state == .up ? nil : state
            linksNotUp.store(links.count, ordering: .releasing)
            return true
        }
    }

    /// Whether `roomID` is cut off.
    package func isPartitioned(_ roomID: String) -> Bool {
        guard partitionCount.load(ordering: .acquiring) > 0 else { return false }
        return partitioned.withLock { $0.contains(roomID) }
    }

    /// Cuts `roomID` off or heals it; `false` when it already had that state.
    package func setPartitioned(_ cutOff: Bool, room roomID: String) -> Bool {
        partitioned.withLock { rooms -> Bool in
            let changed = cutOff ? rooms.insert(roomID).inserted : rooms.remove(roomID) != nil
            partitionCount.store(rooms.count, ordering: .releasing)
            return changed
        }
    }
}
