internal import Foundation

/// What the timeline does in one world: whom and which rooms an entry acts on, and each action carried out.
extension ScenarioWorld {
    /// The rooms a remote server was asked to hold: the population's.
    var remoteRoomCount: Int { population?.rooms ?? 0 }

    /// Whether this world's shard runs the room `roomID` (population rooms are `room-<index>`; any other room
    /// belongs to shard 0).
    func owns(room roomID: String) -> Bool {
        guard shards > 1 else { return true }
        guard roomID.hasPrefix("room-"), let index = Int(roomID.dropFirst(5)) else { return shard == 0 }
        return ScenarioRunner.shard(ofRoom: index, server: server?.nodes?.policy ?? .unlimited, shards: shards)
            == shard
    }

    /// The participants an entry acts on, in order, each with its offset from the entry's time.
    func targets(of entry: Scenario.Entry, index: Int) -> Targets {
        switch entry.target {
        case .user(let id):
            return Targets(picked: named[id].map { [UInt32($0)] } ?? [], step: .zero)
        case .population(let fraction, let over, let offset):
            let picked = Self.share(fraction, offset: offset, of: shuffled)
            return Targets(picked: picked, step: picked.isEmpty ? .zero : over / picked.count)
        case .room, .populationRooms:
            return Targets(picked: [], step: .zero)
        }
    }

    /// The participants of one entry, spread `step` apart: a slice of the population's order, not a copy (a million
    /// users' entry would otherwise be 16 MB of pairs).
    struct Targets: RandomAccessCollection {
        let picked: ArraySlice<UInt32>
        let step: Duration

        var startIndex: Int { 0 }
        var endIndex: Int { picked.count }

        subscript(position: Int) -> (participant: Int, offset: Duration) {
            (Int(picked[picked.startIndex + position]), step * position)
        }
    }

    /// The rooms a `partition` or `heal` entry acts on (none for an entry that acts on users).
    func rooms(of entry: Scenario.Entry) -> [String] {
        switch entry.target {
        case .user, .population: return []
        case .room(let roomID): return [roomID]
        case .populationRooms(let fraction, let offset):
            // Population user `i` is in `room-<i mod rooms>` (``Scenario/Population/room(ofUser:)``).
            return Self.share(fraction, offset: offset, of: shuffledRooms).map { "room-\($0)" }
        }
    }

    /// Cuts off or heals `roomID` at the entry's time, on the room's loop; a partition with a length heals after
    /// the room's own draw (stream: the entry's index and the room's position in it).
    func schedule(
        _ entry: Scenario.Entry,
        index: Int,
        room roomID: String,
        position: Int,
        origin: RuntimeInstant
    ) throws -> RuntimeInstant? {
        let room = server?.serverRoom(roomID)
        let loop = room?.loop ?? group.loop(for: roomID)
        let (network, statistics) = (network, statistics)
        let cutOff = entry.action == .partition
        let deadline = origin.advanced(by: entry.at)
        _ = try loop.schedule(at: deadline) {
            network.setPartitioned(cutOff, room: roomID)
            // A remote server's members are its own: the statistics hear of outages its clients see.
            guard cutOff, let statistics, let room else { return }
            // Every member's connection to the room goes now.
            let now = room.loop.now
            for user in room.assumeIsolated({ $0.memberIDs }) { statistics.outageBegan(user: user, at: now) }
        }
        guard cutOff, let length = entry.length else { return deadline }
        var random = SeededRandom(
            seed: seed,
            stream: UInt64(index) &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(position) &+ 0x5EED
        )
        let healed = deadline.advanced(by: length.draw(using: &random))
        guard healed < origin.advanced(by: end) else { return nil }
        _ = try loop.schedule(at: healed) { network.setPartitioned(false, room: roomID) }
        return healed
    }

    /// When the network of `participant`, cut by `entry` (number `index`) at `deadline`, comes back: after its own
    /// draw of the entry's length; `nil` for an entry without a length, or one that lasts past the run's end.
    func comesBack(
        after entry: Scenario.Entry,
        index: Int,
        participant: Int,
        at deadline: RuntimeInstant,
        origin: RuntimeInstant
    ) -> RuntimeInstant? {
        guard let length = entry.length else { return nil }
        let draw = Scenario.outageDraw(length, entry: index, participant: participant, seed: seed)
        let back = deadline.advanced(by: draw)
        return back < origin.advanced(by: end) ? back : nil
    }

    /// A participant's network coming back (see ``comesBack(after:index:participant:at:origin:)``): a small object, where
    /// a closure and its handler were two.
    final class ComesBack: TimerHandler {
        let world: ScenarioWorld
        let participant: Int

        init(_ world: ScenarioWorld, _ participant: Int) {
            self.world = world
            self.participant = participant
        }

        // Specialised for each dialect, as `TimelineCursor`'s handler is, for the same reason.
        @_specialize(where Dialect == Zego)
        @_specialize(where Dialect == Agora)
        @_specialize(where Dialect == LiveKit)
        func timerFired(_ timer: TimerHandle) {
            guard let client = world.clients[participant] else { return }
            let world = world
            let participant = participant
            client.assumeIsolated { world.perform(.networkUp, by: participant, client: $0) }
        }
    }

    /// The `fraction` of `order` that starts `offset` into it.
    private static func share<Index>(_ fraction: Double, offset: Double, of order: [Index]) -> ArraySlice<Index> {
        let start = min(order.count, Int((Double(order.count) * offset).rounded()))
        let count = min(order.count - start, Int((Double(order.count) * fraction).rounded()))
        return order[start..<(start + count)]
    }

    /// Carries out `action` for participant `index`, on its client's loop.
    func perform(_ action: Scenario.Action, by index: Int, client: isolated RoomClient<Dialect>) {
        switch action {
        case .login(let room, let token):
            // A population user's room and options derive from its index; a named user's are in the scenario.
            let populationIndex = index - namedOptions.count
            var options =
                populationIndex < 0
                ? namedOptions[index] : JoinOptions(notifiesPeers: population?.userStatusNotify ?? false)
            if let token { options.token = token }
            guard let room = room ?? (populationIndex < 0 ? nil : population?.room(ofUser: populationIndex))
            else { return }
            Dialect.apply(.join(room: room, options: options), on: client)
        case .logout(let room):
            Dialect.apply(.leave(room: room), on: client)
        case .switchRoom(let from, let to):
            Dialect.apply(.switchRoom(from: from, to: to), on: client)
        case .networkDown:
            statistics?.outageBegan(user: client.userID, at: client.loop.now)
            network.setLink(.down, for: client)
        case .networkUp:
            network.setLink(.up, for: client)
        case .blackhole:
            statistics?.outageBegan(user: client.userID, at: client.loop.now)
            network.setLink(.blackhole, for: client)
        case .networkChange:
            client.networkChanged()
        case .kick(let room):
            // A population entry without a room kicks each user out of its own room.
            guard let room = room ?? population?.room(ofUser: index - namedOptions.count) else { return }
            administration.kickOut(roomID: room, userIDs: [client.userID])
        case .requestReconnect(let room):
            administration.requestReconnect(roomID: room, userIDs: [client.userID])
        case .expireToken:
            administration.expireToken(userID: client.userID, inRooms: client.roomIDs)
        case .renewToken(let token):
            Dialect.apply(.renewToken(token), on: client)
        case .vendor(let call):
            Dialect.apply(.vendor(call), on: client)
        case .partition, .heal:
            return  // acts on rooms (see `schedule(_:index:room:position:origin:)`)
        }
    }
}
