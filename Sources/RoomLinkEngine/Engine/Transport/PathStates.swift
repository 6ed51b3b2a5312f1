import Synchronization

/// The state of a fault-injecting transport's paths: each client's link that is not up, and the rooms cut off.
/// Shared by the simulated network and the TCP client transport, which differ only in what a fault does.
///
/// Reading is the hot path (every message asks): while every link is up and no room is cut off — the common case —
/// a read is one atomic load and takes no lock; while some link is not up, a client of the engine's
/// (``InProcessClient``, which keeps its own state) is read in place, and only others take the lock.
package final class PathStates: Sendable {
    private let links = LockedBox<[ObjectIdentifier: LinkState]>([:])
    /// How many links are not up.
    private let linksNotUp = Atomic<Int>(0)
    private let partitioned = LockedBox<Set<String>>([])
    private let partitionCount = Atomic<Int>(0)

    package init() {}

    /// The link of the client `key` names, in the table.
    package func link(of key: ObjectIdentifier) -> LinkState {
        guard linksNotUp.load(ordering: .acquiring) > 0 else { return .up }
        return links.withLock { $0[key] ?? .up }
    }

    /// Sets the link of the client `key` names, in the table; `false` when it already had that state.
    package func setLink(_ state: LinkState, for key: ObjectIdentifier) -> Bool {
        links.withLock { links -> Bool in
            let old = links[key] ?? .up
            guard old != state else { return false }
            links[key] = state == .up ? nil : state
            countChange(from: old, to: state)
            return true
        }
    }

    /// The link of `client`, kept in the client (``InProcessClient/keptLinkState``). Use either these two methods
    /// for a transport's clients or the two that take a key, not both, for one client.
    package func link(of client: any InProcessClient) -> LinkState {
        guard linksNotUp.load(ordering: .acquiring) > 0 else { return .up }
        return client.keptLinkState
    }

    /// Sets the link of `client`, in the client; `false` when it already had that state.
    package func setLink(_ state: LinkState, for client: any InProcessClient) -> Bool {
        let old = client.exchangeKeptLinkState(state)
        guard old != state else { return false }
        countChange(from: old, to: state)
        return true
    }

    /// Counts a link leaving `up` or coming back to it. After the state is stored, so that a reader that sees the
    /// count sees the state.
    private func countChange(from old: LinkState, to new: LinkState) {
        if old == .up {
            linksNotUp.wrappingAdd(1, ordering: .releasing)
        } else if new == .up {
            linksNotUp.wrappingSubtract(1, ordering: .releasing)
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
