internal import OrderedCollections

/// The server side of one room as a plain value: members, their heartbeat deadlines, pending user updates, kicks.
///
/// ``ServerRoom`` (an actor) drives it: it feeds in what arrives and what time it is, and carries out the
/// ``Effect``s that come back (send a message, arm a timer). Keeping the decisions here lets tests drive a room
/// without a network or a clock.
///
/// Rules (contract §2, dialect-neutral):
/// - A member is kept while heard from: a heartbeat, or its connection closing, restarts its heartbeat timeout; when
///   the timeout passes in silence the member is removed and the others are told `delete`. The room keeps one
///   deadline timer, not one per member, armed for the deadline of the member heard longest ago, so a room of a
///   hundred members wakes about once a minute instead of a hundred times per timeout. Being heard only numbers the
///   member (its place in the order members were heard); the timer, when it fires, reads that order from a list of
///   the members heard before it was made, made again from the members when its entries are all used up.
/// - A login with the user ID of a member from another session replaces it: the older session is kicked
///   (``KickReason/duplicateLogin``) and the others see nothing, since the user never left.
/// - A reconnection of a session the room still holds resumes it silently; of one it dropped, re-adds it. A
///   resumption (LiveKit's quick reconnection) of a session it dropped is answered `sessionUnknown` instead.
/// - With ``ServerTimings/duplicateLoginVisible`` (LiveKit), a login replacing a member from another session is a
///   departure and a new arrival to peers. With ``ServerTimings/continuousData`` (Agora), a member's timeout runs
///   only from the moment its data stopped.
/// - A hidden member (an Agora audience member) is never announced; becoming hidden is a departure
///   (``DepartureReason/becomeAudience``), becoming visible an arrival.
/// - Joins and leaves reach the members that asked for user-status notification `userUpdateDelay` after the change,
///   in order, batched per kind; a member never hears of changes made before it joined (its first list has them).
/// - The first member of an empty room sets its member cap.
/// - A kicked session stays kicked: if the kick never reached its client (its network was down), the client's next
///   heartbeat or reconnection is answered with the kick again, not let back in.
///
/// In a cluster (``RoomCluster``) the room also holds *remote* members, the other nodes' (``Member/node``): peers
/// see them as any other member, but the room never sends to them, queues no deadline for them and takes no
/// heartbeat for them; they come and go with the cluster's changes (``clusterChanged(_:now:)``). What the room
/// changes of its own members it announces (``Effect/announce(_:)``), and logins the cluster has admitted skip the
/// checks the cluster made (``login(_:from:tokenValid:admitted:now:)``).
public struct ServerRoomState {
    /// A member of the room, as ``member(_:)`` and ``localMembers`` read it.
    public struct Member {
        public let userID: String
        let record: Record

        public var session: SessionID { record.session }
        /// The channel the member logged in on: where its messages go.
        public var channel: any ClientChannel { record.channel }
        /// When the server last heard from the member.
        public var lastHeard: RuntimeInstant { record.lastHeard }
        /// The node that holds the member, in a cluster; `nil` for this node's own members.
        public var node: String? { record.node }
        /// When the member's token expires unless renewed; `nil` when it is not expiring.
        public var tokenDeadline: RuntimeInstant? { record.tokenDeadline }
        public var userStatusNotify: Bool { record.userStatusNotify }
        /// Whether peers cannot see the member.
        public var hidden: Bool { record.hidden }
    }

    /// A member as the room keeps it, under its user ID (the table's key, not kept twice).
    ///
    /// Its fields are declared widest first, the one-byte ones together last, so that a member stays small (a room
    /// of a hundred keeps a hundred; in a cluster spread over nodes, every node keeps every room's):
    /// `ServerRoomStateTests` holds its size.
    struct Record {
        public var session: SessionID
        /// The channel the member logged in on: where its messages go.
        public var channel: any ClientChannel
        /// When the server last heard from the member.
        public var lastHeard: RuntimeInstant
        /// The node that holds the member, in a cluster; `nil` for this node's own members.
        public var node: String?
        /// The number of changes the room had made when the member joined.
        var joinedAtChange: UInt64
        /// The cluster's sequence number of the member's latest change (0 outside a cluster): older changes of the
        /// same user, arriving late, are ignored.
        var clusterSequence: UInt64 = 0
        /// When the member's token expires unless renewed; `nil` when it is not expiring.
        public var tokenDeadline: RuntimeInstant?
        public var userStatusNotify: Bool
        /// Whether peers cannot see the member.
        public var hidden: Bool
        /// A remote member the cluster lost track of (its store restarted): it times out as a silent member of the
        /// room's own would, unless its node restores it first.
        var orphaned = false
        /// The member's connection closed and nothing was heard since: its timeout runs from that close, and a
        /// second close (a client that changes networks while its link is down) does not move it.
        var connectionClosed = false
        /// The member's place in the order members were heard (counted from the room's first), if its deadline runs.
        var queued: UInt64? {
            get { queuedPlace.value }
            set { queuedPlace.value = newValue }
        }
        /// ``queued`` in one word (a position never reaches 2^64 − 1).
        fileprivate var queuedPlace = PackedOptional<UInt64>()
    }

    /// What the room's actor must do.
    public enum Effect {
        case send(ServerMessage, to: any ClientChannel)
        /// Call ``ServerRoomState/deadlinePassed(now:)`` at the given time.
        case armDeadline(at: RuntimeInstant)
        /// Call ``ServerRoomState/tokenDeadlinePassed(userID:now:)`` at the given time.
        case armTokenDeadline(userID: String, at: RuntimeInstant)
        /// Call ``ServerRoomState/flushUpdates(now:)`` at the given time.
        case armFlush(at: RuntimeInstant)
        /// Tell the cluster's other nodes (in a cluster only).
        case announce(ClusterAnnouncement)
        /// Stop following the room in the cluster: its last member of its own is gone (in a cluster only).
        case release
        /// A member of the room's own joined or left (when the room reports its membership, ``reportsMembership``).
        case membership(MembershipChange)
        /// Count members dropped for silence while a heartbeat of theirs waited for a worker — dropped by the server's
        /// own delay, false departures (capacity modelled only, ``ServerRoomState/init(roomID:timings:clustered:epoch:modelsCapacity:reportsMembership:)``).
        case countFalseDepartures(Int)
    }

    /// A member in the order members were heard, as the deadline timer reads it: where it was (its ``Record/queued``
    /// then) and its user ID. The entry is the member's deadline while the member is still queued at that place.
    private struct HeardEntry {
        let position: UInt64
        let userID: String
    }

    private struct PendingChange {
        var change: PresenceChange
        var reason: DepartureReason?
        var userID: String
        var sequence: UInt64
    }

    public let roomID: String
    public let timings: ServerTimings
    /// Whether the room is one node's part of a cluster's room: it announces its own members' changes.
    public let clustered: Bool
    /// Whether the room says when a member of its own joins or leaves (``Effect/membership(_:)``): for a server with
    /// a ``RoomMembershipObserver`` (webhooks), so that other servers' rooms build no such effects.
    public let reportsMembership: Bool
    /// Members by user ID, in the order they joined (so every run sends in the same order).
    private var members = PrefetchedTable<String, Record>()
    /// The member cap set by the first member of the room's current life.
    public private(set) var maxMemberCount: Int?
    /// Identifies the room's current life (from its first member to its last); changes when it empties and refills.
    public private(set) var roomSessionID: String
    private var lives: UInt64 = 0
    private var changeCount: UInt64 = 0
    /// The members whose deadlines ran when the deadline timer last read them, in the order they were heard (from
    /// `heardNext` on; entries before it are used up). An entry whose member was heard since, or left, is skipped.
    ///
    /// Why a list the timer makes, not a queue each heartbeat joins: a heartbeat then writes its member's record
    /// alone. The queue it joined was three more cache misses a heartbeat — the entry it superseded, the queue's tail
    /// and its front — the most of a room's time with ten million clients in no cache (BENCHMARKS.md, issue 31's
    /// thirteenth part). A member heard after the list was made is heard later than everyone on it, so while the list
    /// holds a current entry, its first one is the member heard longest ago — the queue's front.
    private var heard: [HeardEntry] = []
    private var heardNext = 0
    /// How many times the room's members were heard: the next member heard takes this place.
    private var heardCount: UInt64 = 0
    /// Whether the room's deadline timer is armed.
    private var deadlineArmed = false
    private var pending: [PendingChange] = []
    /// Sessions the room kicked out, and why (kept so that a client the kick never reached hears it again).
    private var kickedSessions: [SessionID: KickReason] = [:]
    /// Whether the server models its capacity (workers serve each message after a delay).
    public let modelsCapacity: Bool
    /// Capacity modelled: when each session the room dropped for silence was dropped (a heartbeat that arrived
    /// before then but is served after was processed too late), and the heartbeats of each session waiting for a
    /// worker (a member dropped while one waits was dropped by the server's own delay).
    private var droppedAt: [SessionID: RuntimeInstant] = [:]
    private var queuedHeartbeats: [SessionID: Int] = [:]

    /// The bytes an entry of the deadline timer's list takes (for tests: it stays packed).
    static var heardEntryStride: Int { MemoryLayout<HeardEntry>.stride }

    /// How many entries the deadline timer's list holds, used-up ones included (for tests: it stays within one per
    /// member).
    var queuedDeadlineCount: Int { heard.count }

    /// Where the member table's user IDs and records start, as noted for ``prefetchMember(at:)`` and as they are (for
    /// tests: the notes follow the table as it grows and shrinks).
    var memberTableAddresses: (noted: [UInt], actual: [UInt]) { members.notedAddresses }

    /// How many members the room has room for before its tables grow (for tests of ``reserveMembers(_:)``).
    var memberCapacity: Int { members.capacity }

    /// The user IDs of the members, in the order they joined.
    public var memberIDs: [String] { Array(members.keys) }

    /// The channels of the room's own members (not the cluster's other nodes'), in the order they joined.
    var memberChannels: [any ClientChannel] {
        // By index, reading the two fields it needs: `filter` then `map` copied each member's whole record — its
        // channel and node name retained and released — twice per fan-out.
        var channels: [any ClientChannel] = []
        channels.reserveCapacity(members.count)
        for index in members.values.indices where members.values[index].node == nil {
            channels.append(members.values[index].channel)
        }
        return channels
    }

    /// Whether the room holds members of its own (in a cluster, beside the other nodes').
    public var hasLocalMembers: Bool { members.values.contains { $0.node == nil } }

    /// The members the cluster's other nodes hold, in the order they joined.
    public var remoteMembers: [ClusterMember] {
        members.elements.compactMap { userID, member in
            member.node.map {
                ClusterMember(userID: userID, session: member.session, node: $0, hidden: member.hidden)
            }
        }
    }

    /// The room's own members, in the order they joined.
    public var localMembers: [Member] {
        // One copy of each record (the `Member`'s), not three (`filter`'s pair, then `map`'s): a node reads this for
        // every room it holds at each lease renewal.
        var local: [Member] = []
        local.reserveCapacity(members.count)
        for index in members.values.indices where members.values[index].node == nil {
            local.append(Member(userID: members.keys[index], record: members.values[index]))
        }
        return local
    }

    /// The member with `userID`, if any.
    public func member(_ userID: String) -> Member? { members[userID].map { Member(userID: userID, record: $0) } }

    /// Creates a room with no members.
    ///
    /// - Parameters:
    ///   - roomID: The room's ID.
    ///   - timings: The dialect's server timings.
    ///   - clustered: Whether the room is one node's part of a cluster's room.
    ///   - epoch: Where the count of the room's lives starts: the same room of two servers with different epochs
    ///     never has the same ``roomSessionID`` (a server restarted is a new epoch). 0, the default, keeps
    ///     virtual-time runs reproducible; in a cluster the lives are the cluster's.
    ///   - modelsCapacity: Whether the server's workers serve each message after a delay (``ServerPolicy``): the room
    ///     then tells late heartbeats (``isLate(_:session:arrivedAt:)``) and false departures
    ///     (``Effect/countFalseDepartures(_:)``) apart.
    ///   - reportsMembership: Whether it says when a member of its own joins or leaves (``Effect/membership(_:)``).
    public init(
        roomID: String,
        timings: ServerTimings,
        clustered: Bool = false,
        epoch: UInt64 = 0,
        modelsCapacity: Bool = false,
        reportsMembership: Bool = false
    ) {
        self.roomID = roomID
        self.timings = timings
        self.clustered = clustered
        self.reportsMembership = reportsMembership
        self.modelsCapacity = modelsCapacity
        self.lives = epoch
        self.roomSessionID = Self.sessionID(roomID, life: epoch)
    }

    /// Makes room for `count` members at once, for a room whose size is known (a load test's): its tables otherwise
    /// grow by doubling, and a room of a hundred keeps space for 128. Memory only.
    public mutating func reserveMembers(_ count: Int) {
        members.reserveCapacity(count)
    }

    /// Starts loading, without waiting for it, what ``heartbeat(userID:session:slot:now:)`` reads of the member at
    /// `slot`: the record and the user ID, and the counts of both tables (their bounds checks). A slot past the end
    /// loads lines nobody reads, and nothing faults. (Mutating though it writes nothing: called on a room's stored
    /// state, a non-mutating method was given a copy of the whole state, every table in it retained.)
    mutating func prefetchMember(at slot: Int32) {
        members.prefetch(slot: slot)
    }

    /// Handles a login whose token the server has already checked (`tokenValid`). In a cluster, `admitted` is the
    /// cluster's verdict (``ClusterVerdict/admitted(life:sequence:)``): it checked the kicked sessions, the resumed
    /// session and the member cap across nodes, so the room does not check them again.
    public mutating func login(
        _ request: LoginRequest,
        from channel: any ClientChannel,
        tokenValid: Bool,
        admitted: (life: UInt64, sequence: UInt64)? = nil,
        now: RuntimeInstant
    ) -> [Effect] {
        // Into a local first: a call on `self` reads `self` before its arguments run, and they change it.
        let effects = loginEffects(request, from: channel, tokenValid: tokenValid, admitted: admitted, now: now)
        return releasing(effects)
    }

    private mutating func loginEffects(
        _ request: LoginRequest,
        from channel: any ClientChannel,
        tokenValid: Bool,
        admitted: (life: UInt64, sequence: UInt64)?,
        now: RuntimeInstant
    ) -> [Effect] {
        if let admitted {
            return clusterLogin(request, from: channel, life: admitted.life, sequence: admitted.sequence, now: now)
        }
        // A kicked session stays kicked, whichever attempt of it comes next: a join's retry too (on a slow network
        // two devices of one user each retry while the other's login kicks them, and a retry let back in would be
        // a member whose client was told it is out).
        if let reason = kickedSessions[request.session] {
            return [.send(.kicked(session: request.session, reason: reason), to: channel)]
        }
        guard tokenValid else {
            return [
                .send(
                    .loginRejected(session: request.session, attempt: request.attempt, reason: .tokenInvalid),
                    to: channel
                )
            ]
        }
        if request.kind == .resume, members[request.userID]?.session != request.session {
            return [.send(.sessionUnknown(session: request.session), to: channel)]
        }
        if let cap = maxMemberCount, !members.isEmpty, members.count >= cap, members[request.userID] == nil {
            return [
                .send(
                    .loginRejected(session: request.session, attempt: request.attempt, reason: .memberCapReached),
                    to: channel
                )
            ]
        }
        return enter(request, from: channel, sequence: 0, now: now)
    }

    /// A login the cluster admitted: the room's life is the cluster's.
    private mutating func clusterLogin(
        _ request: LoginRequest,
        from channel: any ClientChannel,
        life: UInt64,
        sequence: UInt64,
        now: RuntimeInstant
    ) -> [Effect] {
        lives = life
        roomSessionID = Self.sessionID(roomID, life: life)
        return enter(request, from: channel, sequence: sequence, now: now)
    }

    /// Makes an admitted login the user's membership, replacing an older session, and answers it.
    private mutating func enter(
        _ request: LoginRequest,
        from channel: any ClientChannel,
        sequence: UInt64,
        now: RuntimeInstant
    ) -> [Effect] {
        var effects: [Effect] = []
        // The user's place is looked up once and kept: each lookup hashes the user's name again, and a login made
        // five of them.
        var place = members.index(forKey: request.userID)
        if let found = place, members.values[found].session != request.session, timings.duplicateLoginVisible {
            let existing = members.values[found]
            // A new participant with the same identity: the old one leaves (its client, if it still listens, is
            // told — by its own node when it is another's), and the new one joins below.
            if existing.node == nil {
                kickedSessions[existing.session] = .duplicateLogin
                effects.append(.send(.kicked(session: existing.session, reason: .duplicateLogin), to: existing.channel))
            }
            effects += remove(
                request.userID,
                reason: .dropped,
                kicked: existing.node == nil ? .duplicateLogin : nil,
                announce: false,
                now: now
            )
            place = members.index(forKey: request.userID)
        }
        if let place {
            // The record changed in place, reading only what decides: a copy of it (and the copy written back)
            // retained its channel and node, and a storm's comeback logs millions of members in again while the
            // room still holds them.
            let existingSession = members.values[place].session
            let wasRemote = members.values[place].node != nil
            if existingSession != request.session, !wasRemote {
                // The newer login wins; the user stays present, so peers hear nothing.
                kickedSessions[existingSession] = .duplicateLogin
                effects.append(
                    .send(.kicked(session: existingSession, reason: .duplicateLogin), to: members.values[place].channel)
                )
            }
            let changesHidden = members.values[place].hidden != request.hidden
            members.update(at: place) { record in
                record.session = request.session
                record.channel = channel
                record.node = nil
                record.clusterSequence = sequence
                record.userStatusNotify = request.userStatusNotify
                if existingSession != request.session { record.tokenDeadline = nil }
                if changesHidden { record.hidden = request.hidden }
            }
            if changesHidden {
                effects += recordChange(
                    request.hidden ? .delete : .add,
                    reason: .becomeAudience,
                    of: request.userID,
                    now: now
                )
            }
            if let arm = heard(memberAt: place, at: now) { effects.append(arm) }
            if reportsMembership, existingSession != request.session || wasRemote {
                // A new session of the user (or one another node held) is a new participant of this node's.
                if !wasRemote {
                    effects.append(
                        .membership(
                            .left(
                                userID: request.userID,
                                session: existingSession,
                                reason: .dropped,
                                kicked: .duplicateLogin
                            )
                        )
                    )
                }
                effects.append(
                    .membership(.joined(userID: request.userID, session: request.session, audience: request.hidden))
                )
            } else if reportsMembership, changesHidden {
                effects.append(
                    .membership(
                        .roleChanged(userID: request.userID, session: request.session, audience: request.hidden)
                    )
                )
            }
        } else {
            if members.isEmpty, !clustered {
                lives += 1
                roomSessionID = Self.sessionID(roomID, life: lives)
                maxMemberCount = request.maxMemberCount
            }
            let record = Record(
                session: request.session,
                channel: channel,
                lastHeard: now,
                joinedAtChange: changeCount + 1,
                clusterSequence: sequence,
                tokenDeadline: nil,
                userStatusNotify: request.userStatusNotify,
                hidden: request.hidden
            )
            let (_, place) = members.updateValue(record, forKey: request.userID, insertingAt: members.count)
            if let arm = heard(memberAt: place, at: now) { effects.append(arm) }
            if reportsMembership {
                effects.append(
                    .membership(.joined(userID: request.userID, session: request.session, audience: request.hidden))
                )
            }
            if !request.hidden { effects += recordChange(.add, of: request.userID, now: now) }
        }
        let present =
            request.userStatusNotify
            ? members.elements.filter { $0.key != request.userID && !$0.value.hidden }.map(\.key) : []
        effects.append(
            .send(
                .loginAccepted(
                    session: request.session,
                    attempt: request.attempt,
                    roomSessionID: roomSessionID,
                    present: present
                ),
                to: channel
            )
        )
        return effects
    }

    /// Handles a heartbeat: refreshes the member and returns the answer for the sender — an acknowledgement, or
    /// word that the session is gone — where the member sits now (the next heartbeat's `slot`, −1 when it is not a
    /// member) and, rarely, the room's deadline timer to arm. (The hottest path of a run: one lookup, no
    /// allocation.) `slot` is where the member sat at its last heartbeat (−1 when unknown): a hint that spares a
    /// lookup by user ID, checked before it is trusted.
    public mutating func heartbeat(
        userID: String,
        session: SessionID,
        slot: Int32 = -1,
        now: RuntimeInstant
    ) -> (reply: ServerMessage, slot: Int32, arm: Effect?) {
        let index: Int
        // The hint first (no hashing); a member that moved (an earlier one left) is looked up by user ID.
        if slot >= 0, Int(slot) < members.count, members.values[Int(slot)].session == session,
            members.keys[Int(slot)] == userID, members.values[Int(slot)].node == nil
        {
            index = Int(slot)
        } else if let found = members.index(forKey: userID), members.values[found].session == session,
            members.values[found].node == nil
        {
            index = found
        } else {
            if let reason = kickedSessions[session] { return (.kicked(session: session, reason: reason), -1, nil) }
            return (.sessionUnknown(session: session), -1, nil)
        }
        members.update(at: index) {
            $0.lastHeard = now
            $0.connectionClosed = false
        }
        // A member whose data flows is heard all the time: no deadline until its data stops.
        return (.heartbeatAck(session: session), Int32(index), queueOrUnqueue(memberAt: index, heardAt: now))
    }

    /// The member's messages go to `channel` from now on, if `session` is its session: its data flows again over
    /// a connection it did not log in on (a socket transport's new connection after a short outage).
    public mutating func rebind(userID: String, session: SessionID, to channel: any ClientChannel) {
        guard let index = members.index(forKey: userID), members.values[index].session == session,
            members.values[index].node == nil, members.values[index].channel !== channel
        else { return }
        members.update(at: index) { $0.channel = channel }
    }

    /// The member's connection `channel` closed (or, with continuous data, its data stopped): its timeout runs from
    /// now, and it stays a member meanwhile. A channel that no longer carries the member (it logged in or resumed on
    /// a newer one since) changes nothing: its close is late news of a connection the client gave up.
    public mutating func connectionClosed(
        userID: String,
        session: SessionID,
        channel: any ClientChannel,
        now: RuntimeInstant
    ) -> Effect? {
        guard let index = members.index(forKey: userID), members.values[index].session == session,
            members.values[index].node == nil, !members.values[index].connectionClosed,
            members.values[index].channel === channel
        else { return nil }
        members.update(at: index) {
            $0.lastHeard = now
            $0.connectionClosed = true
        }
        return queue(memberAt: index, heardAt: now)
    }

    /// The member's data flows again on `channel` after its transport said it stopped (continuous data): the member
    /// is heard — if `channel` still carries it. Returns the answer for `channel` when the room does not hold the
    /// session (word that it is gone, as for a heartbeat), and the deadline timer to arm, if any.
    public mutating func dataResumed(
        userID: String,
        session: SessionID,
        channel: any ClientChannel,
        now: RuntimeInstant
    ) -> (reply: ServerMessage?, arm: Effect?) {
        guard let index = members.index(forKey: userID), members.values[index].session == session,
            members.values[index].node == nil
        else {
            if let reason = kickedSessions[session] { return (.kicked(session: session, reason: reason), nil) }
            return (.sessionUnknown(session: session), nil)
        }
        // Data a client wrote before it gave a connection up, delivered late: the member is on a newer one.
        guard members.values[index].channel === channel else { return (nil, nil) }
        return (nil, heard(memberAt: index, at: now))
    }

    /// The member leaves.
    public mutating func logout(userID: String, session: SessionID, now: RuntimeInstant) -> [Effect] {
        guard let member = members[userID], member.session == session, member.node == nil else { return [] }
        let effects = remove(userID, reason: .quit, now: now)
        return releasing(effects)
    }

    /// The member becomes hidden from its peers, or visible again.
    public mutating func setHidden(userID: String, session: SessionID, hidden: Bool, now: RuntimeInstant) -> [Effect] {
        guard let index = members.index(forKey: userID), members.values[index].session == session,
            members.values[index].node == nil, members.values[index].hidden != hidden
        else { return [] }
        members.update(at: index) { $0.hidden = hidden }
        var announced: [Effect] =
            clustered ? [.announce(.hiddenChanged(userID: userID, session: session, hidden: hidden))] : []
        if reportsMembership {
            announced.append(.membership(.roleChanged(userID: userID, session: session, audience: hidden)))
        }
        return announced + recordChange(hidden ? .delete : .add, reason: .becomeAudience, of: userID, now: now)
    }

    /// The room's deadline timer fired: removes every member silent for the whole timeout, and re-arms the timer
    /// for the next member due, if any.
    ///
    /// With capacity modelled, the room notes when each went, and counts those with a heartbeat still waiting for a
    /// worker (``Effect/countFalseDepartures(_:)``, first).
    public mutating func deadlinePassed(now: RuntimeInstant) -> [Effect] {
        deadlineArmed = false
        var effects: [Effect] = []
        var falseDepartures = 0
        while heardNext < heard.count || refillHeard() {
            let front = heard[heardNext]
            heardNext += 1
            // Heard again since the list was made, or gone.
            guard let index = currentMember(front.userID, queuedAt: front.position) else { continue }
            let due = members.values[index].lastHeard.advanced(by: timings.heartbeatTimeout)
            guard now >= due else {
                heardNext -= 1  // still the member heard longest ago
                deadlineArmed = true
                effects.append(.armDeadline(at: due))
                break
            }
            if modelsCapacity {
                let session = members.values[index].session
                droppedAt[session] = now
                if queuedHeartbeats[session] != nil { falseDepartures += 1 }
            }
            effects += remove(front.userID, reason: .dropped, now: now)
        }
        if falseDepartures > 0 { effects.insert(.countFalseDepartures(falseDepartures), at: 0) }
        return releasing(effects)
    }

    // MARK: - Capacity (modelled)

    /// A heartbeat of `session` waits for a worker.
    public mutating func heartbeatQueued(session: SessionID) {
        queuedHeartbeats[session, default: 0] += 1
    }

    /// A heartbeat of `session` that waited is being served.
    public mutating func heartbeatServed(session: SessionID) {
        queuedHeartbeats[session] = queuedHeartbeats[session].flatMap { $0 > 1 ? $0 - 1 : nil }
    }

    /// A login of `session` arrived: the session is not one the room dropped any more.
    public mutating func loginArrived(session: SessionID) {
        if modelsCapacity { droppedAt[session] = nil }
    }

    /// Whether `reply`, the answer to a heartbeat of `session` that arrived at `arrivedAt` and is served now, came too
    /// late: the room dropped the member after the heartbeat arrived (capacity modelled only).
    public func isLate(_ reply: ServerMessage, session: SessionID, arrivedAt: RuntimeInstant) -> Bool {
        guard modelsCapacity, case .sessionUnknown = reply, let dropped = droppedAt[session] else { return false }
        return dropped >= arrivedAt
    }

    // MARK: - Cluster

    /// The cluster's answer to a login (``ClusterVerdict``): the room lets it in, or answers as the cluster says — and,
    /// left with no member of its own, stops following the room (``Effect/release``).
    public mutating func admitted(
        _ request: LoginRequest,
        verdict: ClusterVerdict,
        from channel: any ClientChannel,
        now: RuntimeInstant
    ) -> [Effect] {
        let session = request.session
        let answer: ServerMessage
        switch verdict {
        case .admitted(let life, let sequence):
            return login(request, from: channel, tokenValid: true, admitted: (life, sequence), now: now)
        case .kicked(let reason): answer = .kicked(session: session, reason: reason)
        case .sessionUnknown: answer = .sessionUnknown(session: session)
        case .memberCapReached:
            answer = .loginRejected(session: session, attempt: request.attempt, reason: .memberCapReached)
        case .unavailable(let retryAfter):
            answer = .busy(session: session, attempt: request.attempt, retryAfter: retryAfter)
        }
        return hasLocalMembers ? [.send(answer, to: channel)] : [.send(answer, to: channel), .release]
    }

    /// `effects`, and then ``Effect/release`` when, in a cluster, they took the room's last member of its own away:
    /// they announce a departure — or, `orAnySend`, send anything (a member another node replaced is told so). Call
    /// it with effects already made (a call on `self` reads `self` before its arguments run).
    private func releasing(_ effects: [Effect], orAnySend: Bool = false) -> [Effect] {
        guard clustered, !effects.isEmpty else { return effects }
        let departs = effects.contains {
            switch $0 {
            case .announce(.left): true
            case .send: orAnySend
            default: false
            }
        }
        guard departs, !hasLocalMembers else { return effects }
        return effects + [.release]
    }

    /// The business server kicks `userID` out.
    public mutating func kick(userID: String, reason: KickReason, now: RuntimeInstant) -> [Effect] {
        guard let member = members[userID], member.node == nil else { return [] }
        kickedSessions[member.session] = reason
        let effects =
            [.send(.kicked(session: member.session, reason: reason), to: member.channel)]
            + remove(userID, reason: .dropped, kicked: reason, now: now)
        return releasing(effects)
    }

    /// The server asks `userID` to reconnect (it keeps the member until the reconnection replaces it, or times it
    /// out).
    public func requestReconnect(userID: String) -> [Effect] {
        guard let member = members[userID], member.node == nil else { return [] }
        return [.send(.reconnectRequested(session: member.session), to: member.channel)]
    }

    /// The token of `userID` expired: warn the member and kick it after the grace period unless it renews.
    public mutating func tokenExpired(userID: String, now: RuntimeInstant) -> [Effect] {
        tokenExpiring(userID: userID, at: now.advanced(by: timings.tokenRenewalGrace), now: now)
    }

    /// The token of `userID` expires at `deadline` (a verified token's own expiry): warn the member of the time
    /// left and kick it then unless it renews.
    public mutating func tokenExpiring(userID: String, at deadline: RuntimeInstant, now: RuntimeInstant) -> [Effect] {
        guard let member = members[userID], member.node == nil, member.tokenDeadline == nil else { return [] }
        members.update(forKey: userID) { $0.tokenDeadline = deadline }
        return [
            .send(.tokenWillExpire(session: member.session, remaining: now.duration(to: deadline)), to: member.channel),
            .armTokenDeadline(userID: userID, at: deadline),
        ]
    }

    /// The member renewed its token with one the server accepted.
    public mutating func tokenRenewed(userID: String, session: SessionID) {
        guard members[userID]?.session == session else { return }
        members.update(forKey: userID) { $0.tokenDeadline = nil }
    }

    /// A token-deadline timer fired: kicks the member if it did not renew.
    public mutating func tokenDeadlinePassed(userID: String, now: RuntimeInstant) -> [Effect] {
        guard let deadline = members[userID]?.tokenDeadline, now >= deadline else { return [] }
        return kick(userID: userID, reason: .tokenExpired, now: now)
    }

    /// Applies a change another node of the cluster made (or the cluster's whole membership of the room): the
    /// room's own members hear of it as of any peer's, after the dialect's delay.
    ///
    /// The room's own members stay the room's to decide: a change naming one of them with its current session is
    /// ignored (the cluster's record of a member of this node can lag, never lead). A login elsewhere with the
    /// user ID of one of them replaces it: it is kicked (``KickReason/duplicateLogin``), as a second login on this
    /// node would be. A change older than the user's latest one known here is ignored.
    ///
    /// A change that took the room's last member of its own (replaced from elsewhere) ends with ``Effect/release``.
    public mutating func clusterChanged(_ change: ClusterChange, now: RuntimeInstant) -> [Effect] {
        let effects = clusterEffects(change, now: now)
        return releasing(effects, orAnySend: true)
    }

    private mutating func clusterEffects(_ change: ClusterChange, now: RuntimeInstant) -> [Effect] {
        switch change {
        case .joined(let joined, let sequence):
            return remoteJoined(joined, sequence: sequence, now: now)
        case .left(let userID, let session, let reason, let sequence):
            guard let member = members[userID], member.node != nil, member.session == session,
                member.clusterSequence < sequence
            else { return [] }
            return remove(userID, reason: reason, announce: false, now: now)
        case .hiddenChanged(let userID, let session, let hidden, let sequence):
            guard let index = members.index(forKey: userID), members.values[index].node != nil,
                members.values[index].session == session, members.values[index].clusterSequence < sequence,
                members.values[index].hidden != hidden
            else { return [] }
            members.update(at: index) {
                $0.hidden = hidden
                $0.clusterSequence = sequence
            }
            return recordChange(hidden ? .delete : .add, reason: .becomeAudience, of: userID, now: now)
        case .snapshot(let listed, let sequence, let restarted):
            var effects: [Effect] = []
            if restarted {
                // A store that restarted numbers its changes from 1 again.
                for index in members.values.indices { members.update(at: index) { $0.clusterSequence = 0 } }
            }
            let byUser = Dictionary(listed.map { ($0.userID, $0) }, uniquingKeysWith: { _, last in last })
            for (userID, member) in members.elements where member.node != nil && byUser[userID] == nil {
                if restarted {
                    // Its node may not have restored it yet: it gets a heartbeat timeout to come back.
                    guard !member.orphaned, let index = members.index(forKey: userID) else { continue }
                    members.update(at: index) {
                        $0.orphaned = true
                        $0.lastHeard = now
                    }
                    if let arm = queue(memberAt: index, heardAt: now) { effects.append(arm) }
                } else {
                    // It left while the room was not listening.
                    effects += remove(userID, reason: .dropped, announce: false, now: now)
                }
            }
            for member in listed {
                effects += remoteJoined(member, sequence: sequence, now: now)
            }
            return effects
        }
    }

    private mutating func remoteJoined(_ joined: ClusterMember, sequence: UInt64, now: RuntimeInstant) -> [Effect] {
        var effects: [Effect] = []
        if let existing = members[joined.userID] {
            // The room's own member with this very session stays its own: the cluster's record of it is old.
            guard existing.clusterSequence < sequence, existing.node != nil || existing.session != joined.session
            else { return [] }
            if existing.session == joined.session {
                // The same session on another node (or another node's listing of it): it moved, peers hear nothing.
                var member = existing
                member.queued = nil
                member.orphaned = false
                member.node = joined.node
                member.clusterSequence = sequence
                members.setValue(member, forKey: joined.userID)
                return remoteHidden(joined.userID, hidden: joined.hidden, now: now)
            }
            if existing.node == nil {
                kickedSessions[existing.session] = .duplicateLogin
                effects.append(.send(.kicked(session: existing.session, reason: .duplicateLogin), to: existing.channel))
            }
            if timings.duplicateLoginVisible {
                effects += remove(joined.userID, reason: .dropped, announce: false, now: now)
            } else {
                var member = existing
                member.queued = nil
                member.orphaned = false
                member.session = joined.session
                member.node = joined.node
                member.channel = RemoteMemberChannel.shared
                member.tokenDeadline = nil
                member.clusterSequence = sequence
                members.setValue(member, forKey: joined.userID)
                return effects + remoteHidden(joined.userID, hidden: joined.hidden, now: now)
            }
        }
        let record = Record(
            session: joined.session,
            channel: RemoteMemberChannel.shared,
            lastHeard: now,
            node: joined.node,
            joinedAtChange: changeCount + 1,
            clusterSequence: sequence,
            tokenDeadline: nil,
            userStatusNotify: false,
            hidden: joined.hidden
        )
        members.setValue(record, forKey: joined.userID)
        if !joined.hidden { effects += recordChange(.add, of: joined.userID, now: now) }
        return effects
    }

    /// A remote member's visibility as the cluster lists it.
    private mutating func remoteHidden(_ userID: String, hidden: Bool, now: RuntimeInstant) -> [Effect] {
        guard let index = members.index(forKey: userID), members.values[index].hidden != hidden else { return [] }
        members.update(at: index) { $0.hidden = hidden }
        return recordChange(hidden ? .delete : .add, reason: .becomeAudience, of: userID, now: now)
    }

    /// Sends the user updates that are due, in order, each run of one kind as one update.
    public mutating func flushUpdates(now: RuntimeInstant) -> [Effect] {
        guard !pending.isEmpty else { return [] }
        let changes = pending
        pending.removeAll()
        var effects: [Effect] = []
        // By index, reading only the fields it needs: iterating `members.elements` copied every listener's whole
        // record (its channel and node name retained and released) for each change a room announced.
        for index in members.values.indices
        where members.values[index].userStatusNotify && members.values[index].node == nil {
            let listenerID = members.keys[index]
            let joinedAtChange = members.values[index].joinedAtChange
            var batch: (change: PresenceChange, reason: DepartureReason?, users: [String])?
            for change in changes where change.sequence >= joinedAtChange && change.userID != listenerID {
                if let current = batch, current.change != change.change || current.reason != change.reason {
                    effects.append(
                        .send(
                            .userUpdate(current.change, users: current.users, reason: current.reason),
                            to: members.values[index].channel
                        )
                    )
                    batch = nil
                }
                batch = (change.change, change.reason, (batch?.users ?? []) + [change.userID])
            }
            if let batch {
                effects.append(
                    .send(
                        .userUpdate(batch.change, users: batch.users, reason: batch.reason),
                        to: members.values[index].channel
                    )
                )
            }
        }
        return effects
    }

    /// Removes `userID`; in a cluster, a member of the room's own is announced gone unless `announce` is false (a
    /// login replaced it, which the cluster knows already).
    private mutating func remove(
        _ userID: String,
        reason: DepartureReason,
        kicked: KickReason? = nil,
        announce: Bool = true,
        now: RuntimeInstant
    ) -> [Effect] {
        guard let member = members.removeValue(forKey: userID) else { return [] }
        var announced: [Effect] =
            clustered && announce && member.node == nil
            ? [.announce(.left(userID: userID, session: member.session, reason: reason, kicked: kicked))] : []
        if reportsMembership, member.node == nil {
            announced.append(
                .membership(.left(userID: userID, session: member.session, reason: reason, kicked: kicked))
            )
        }
        guard !member.hidden else { return announced }
        return announced + recordChange(.delete, reason: reason, of: userID, now: now)
    }

    private mutating func recordChange(
        _ change: PresenceChange,
        reason: DepartureReason? = nil,
        of userID: String,
        now: RuntimeInstant
    ) -> [Effect] {
        changeCount += 1
        let reason = change == .delete ? reason : nil
        pending.append(PendingChange(change: change, reason: reason, userID: userID, sequence: changeCount))
        return pending.count == 1 ? [.armFlush(at: now.advanced(by: timings.userUpdateDelay))] : []
    }

    /// Records that the member at `index` was heard at `now`; returns the deadline timer to arm if none is.
    private mutating func heard(memberAt index: Int, at now: RuntimeInstant) -> Effect? {
        members.update(at: index) {
            $0.lastHeard = now
            $0.connectionClosed = false
        }
        return queueOrUnqueue(memberAt: index, heardAt: now)
    }

    /// Queues the deadline of the member at `index`, heard at `now` — or, when data flows
    /// (``ServerTimings/continuousData``), takes the member out of the queue: it has no deadline until its data stops.
    private mutating func queueOrUnqueue(memberAt index: Int, heardAt now: RuntimeInstant) -> Effect? {
        guard timings.continuousData else { return queue(memberAt: index, heardAt: now) }
        members.update(at: index) { $0.queued = nil }
        return nil
    }

    /// Queues the deadline of the member at `index` (its `lastHeard` is already `now`): it takes the next place in
    /// the order members were heard, which makes any entry of it on the timer's list stale.
    private mutating func queue(memberAt index: Int, heardAt now: RuntimeInstant) -> Effect? {
        members.update(at: index) { $0.queued = heardCount }
        heardCount &+= 1
        guard !deadlineArmed else { return nil }
        deadlineArmed = true
        return .armDeadline(at: now.advanced(by: timings.heartbeatTimeout))
    }

    /// Makes the deadline timer's list again, from the members whose deadlines run, in the order they were heard;
    /// returns whether it holds any. Called when every entry of the last list is used up.
    private mutating func refillHeard() -> Bool {
        heard.removeAll(keepingCapacity: true)
        heardNext = 0
        for index in members.values.indices {
            // What `currentMember` takes, so that every entry of a new list is current.
            guard let position = members.values[index].queued,
                members.values[index].node == nil || members.values[index].orphaned
            else { continue }
            heard.append(HeardEntry(position: position, userID: members.keys[index]))
        }
        heard.sort { $0.position < $1.position }
        return !heard.isEmpty
    }

    /// The index of `userID`'s record if the entry queued at `position` is its latest — not superseded by a later
    /// one, and the member still here, its deadline kept by this node — else `nil`.
    private func currentMember(_ userID: String, queuedAt position: UInt64) -> Int? {
        guard let index = members.index(forKey: userID), members.values[index].queued == position,
            members.values[index].node == nil || members.values[index].orphaned
        else { return nil }
        return index
    }

    private static func sessionID(_ roomID: String, life: UInt64) -> String {
        String(StableHash.fnv1a("\(roomID)#\(life)") >> 12)
    }
}
