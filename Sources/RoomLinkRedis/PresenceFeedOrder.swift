/// The order of one room's presence changes on one node, as a value: which changes to apply, which to hold, and
/// when the room's membership must be loaded again. Redis numbers a room's changes; the feed applies them one after
/// another from a snapshot's number on. It holds what comes before it has a snapshot, drops what the snapshot
/// already covers, and asks for a reload when a number is skipped (the subscription dropped a message).
///
/// `PresenceShard` (the class hiredis drives) tells it what arrived and carries out what it answers; tests drive it
/// alone, with no Redis.
struct PresenceFeedOrder {
    /// What the shard does next.
    enum Action: Equatable {
        /// Apply this change: it is the next one.
        case apply(PresenceEvent)
        /// Load the room's membership again: a change was missed. Held changes wait for the snapshot.
        case reload
    }

    /// Whether the feed has a snapshot and every change after it.
    private(set) var synced = false
    /// The number of the last change applied (or the snapshot's).
    private(set) var applied: UInt64 = 0
    /// Changes that came while the feed was out of sync, or after a gap: looked at again after the next snapshot.
    private(set) var held: [PresenceEvent] = []

    /// A change arrived on the room's channel: applied if it is the next, held while out of sync, dropped if a
    /// snapshot or an earlier change already covered it.
    mutating func received(_ event: PresenceEvent) -> [Action] {
        guard synced else {
            held.append(event)
            return []
        }
        return step(event).map { [$0] } ?? []
    }

    /// A snapshot as of change `sequence` was applied: the held changes after it follow, in order, up to a gap
    /// (which holds the rest and asks for a reload).
    mutating func loaded(snapshotAt sequence: UInt64) -> [Action] {
        applied = sequence
        synced = true
        var waiting = held.sorted { $0.sequence < $1.sequence }[...]
        held = []
        var actions: [Action] = []
        while let event = waiting.popFirst() {
            guard let action = step(event) else { continue }
            actions.append(action)
            if action == .reload {
                held.append(contentsOf: waiting)
                break
            }
        }
        return actions
    }

    /// The feed is out of sync (a reload began): what arrives is held until the next snapshot.
    mutating func reloading() {
        synced = false
    }

    /// The connection to Redis dropped: out of sync, and what was held is gone with it (the next snapshot covers
    /// it).
    mutating func disconnected() {
        synced = false
        held = []
    }

    /// One change, in sync: nothing for one already covered, a reload (holding it) for one after a gap.
    private mutating func step(_ event: PresenceEvent) -> Action? {
        guard event.sequence > applied else { return nil }
        guard event.sequence == applied + 1 else {
            held.append(event)
            synced = false
            return .reload
        }
        applied = event.sequence
        return .apply(event)
    }
}
