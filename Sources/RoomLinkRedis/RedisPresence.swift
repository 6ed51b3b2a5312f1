public import RoomLinkEngine
public import RoomLinkLibevent
public import RoomLinkNetwork
import RoomLinkRuntime

/// Presence shared by several `roomlink serve` nodes in Redis: a `RoomCluster` on hiredis, whose Redis I/O runs on
/// the same libevent loops as the rooms.
///
/// Each loop of the node has two connections to Redis — one for commands, one subscribed to the channels of the
/// rooms on that loop — so a room's changes, its scripts' answers and the room itself share a thread. The layout
/// (`docs/redis.md`) follows Centrifugo's presence: per room a hash of members and a sorted set of lease expiry
/// times, both with a time to live, and changes published on a per-room channel; LiveKit's rule that one node holds a
/// participant's connection and the others only route to it.
///
/// - Heartbeats stay on the node that holds the connection. Redis holds one lease per node per room — it covers the
///   node's members of the room — renewed by one script every ``Configuration/leasePeriod``. A lease runs the
///   dialect's heartbeat timeout plus two periods (one for the refresh that the node's death stopped, one for a
///   refresh timer running late), so a node that dies leaves its lease to lapse no sooner than the timeout after
///   its members' last heartbeat; the next script to touch the room (another node's refresh, within a period) drops
///   them and tells every node.
/// - When Redis cannot be reached, the node answers new logins busy, keeps serving its connected clients from its
///   own state, and reconnects every ``Configuration/reconnectDelay``; once back, it restores its members' records
///   and reloads each room's membership (peers hear the differences).
public final class RedisPresence: RoomCluster, Sendable {
    /// How the node uses Redis.
    public struct Configuration: Sendable {
        public var endpoint: RedisEndpoint
        /// This node's name, unique in the cluster: letters, digits, `-`, `_` and `.`, up to 64.
        public var nodeID: String
        /// How often the node renews its lease on each room it holds members of (one script per room).
        public var leasePeriod: Duration
        /// How long the node waits before reconnecting to Redis.
        public var reconnectDelay: Duration
        /// How long a refused login is told to wait (`busy`) while Redis cannot be reached.
        public var retryAfter: Duration
        /// The prefix of every key and channel.
        public var keyPrefix: String

        public init(
            endpoint: RedisEndpoint,
            nodeID: String,
            leasePeriod: Duration = .seconds(2),
            reconnectDelay: Duration = .seconds(1),
            retryAfter: Duration = .seconds(2),
            keyPrefix: String = "roomlink"
        ) {
            self.endpoint = endpoint
            self.nodeID = nodeID
            self.leasePeriod = leasePeriod
            self.reconnectDelay = reconnectDelay
            self.retryAfter = retryAfter
            self.keyPrefix = keyPrefix
        }

        /// Checks the node ID and the periods.
        public func validate() throws(RedisPresenceError) {
            guard !nodeID.isEmpty, nodeID.utf8.count <= 64 else {
                throw .invalidNodeID(nodeID, reason: "it must have 1 to 64 characters")
            }
            guard nodeID.unicodeScalars.allSatisfy({ $0.isASCII && (Self.nodeCharacters.contains($0)) }) else {
                throw .invalidNodeID(nodeID, reason: "use letters, digits, '-', '_' and '.' only")
            }
            guard leasePeriod >= .milliseconds(100), leasePeriod <= .seconds(60) else {
                throw .invalidSetting("the lease period must be from 100 ms to 60 s, not \(leasePeriod)")
            }
            guard reconnectDelay > .zero, retryAfter > .zero else {
                throw .invalidSetting("the reconnect delay and the busy answer's wait must be positive")
            }
        }

        private static let nodeCharacters = Set(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.".unicodeScalars
        )
    }

    public let configuration: Configuration
    public var nodeID: String { configuration.nodeID }
    let group: LibeventLoopGroup
    private let shards: [PresenceShard]
    private let server = LockedBox<NodeReference?>(nil)

    /// The node's server, held weakly: the server holds its cluster.
    private struct NodeReference: @unchecked Sendable {
        // Safe: a `ClusterNode` is Sendable itself; the box only makes the weak reference storable.
        weak var node: (any ClusterNode)?
    }

    /// Creates the node's presence on `group`'s loops; it connects to Redis when its server starts it.
    ///
    /// - Throws: ``RedisPresenceError`` when the configuration is invalid.
    public init(group: LibeventLoopGroup, configuration: Configuration) throws(RedisPresenceError) {
        try configuration.validate()
        self.configuration = configuration
        self.group = group
        var shards: [PresenceShard] = []
        for (index, loop) in group.eventLoops.enumerated() {
            shards.append(PresenceShard(loop: loop, isFirst: index == 0, configuration: configuration))
        }
        self.shards = shards
    }

    /// The node this presence serves, once started (and while its server lives).
    var node: (any ClusterNode)? { server.withLock { $0?.node } }

    public func start(serving server: any ClusterNode) {
        self.server.withLock { $0 = NodeReference(node: server) }
        // Redis keeps real time; the loops may run scaled (`--time-scale`): the lease is the loops' time, in real
        // milliseconds, rounded up so that it never lapses early.
        let lease = server.timings.heartbeatTimeout + configuration.leasePeriod * 2
        func real(_ duration: Duration) -> Int64 {
            let scaled = (Double(duration.milliseconds) * group.configuration.timeScale).rounded(.up)
            return Int64(min(max(scaled, 1), 9.0e15))
        }
        let (leaseMilliseconds, nodeMilliseconds) = (real(lease), real(configuration.leasePeriod * 3))
        for shard in shards {
            shard.loop.runSoon { [self] in
                shard.start(presence: self, leaseMilliseconds: leaseMilliseconds, nodeMilliseconds: nodeMilliseconds)
            }
        }
    }

    /// Whether another live node holds this node's ID (its registration, `roomlink:node:ID`): no login is admitted
    /// until it is free. Known once the first loop reached Redis.
    var nodeIDTaken: Bool { shards[0].statistics.withLock { $0.nodeIDInUse } }

    /// Whether every loop's connections to Redis are up.
    public var isConnected: Bool {
        get async {
            var all = true
            for shard in shards {
                let up = await withCheckedContinuation { continuation in
                    shard.loop.runSoon { continuation.resume(returning: shard.isUp) }
                }
                all = all && up
            }
            return all
        }
    }

    /// Each loop's view of Redis, one line a loop: its connections, whether it admits logins, and each room it
    /// follows (subscription, logins waiting for it, claims unanswered). For a test that waited in vain to show.
    package var state: String {
        get async {
            var lines: [String] = []
            for (index, shard) in shards.enumerated() {
                lines.append(
                    "loop \(index): "
                        + (await withCheckedContinuation { continuation in
                            shard.loop.runSoon { continuation.resume(returning: shard.state) }
                        })
                )
            }
            return lines.joined(separator: "\n")
        }
    }

    /// What the node has done with Redis so far, over every loop.
    public var statistics: RedisPresenceStatistics {
        shards.reduce(into: RedisPresenceStatistics()) { $0.add($1.statistics.withLock { $0 }) }
    }

    /// When this node last renewed its lease on `roomID`'s members, on the real clock; `nil` if it holds none there.
    ///
    /// The instant is when the renewing script (a sync every lease period, or an admitted login) was sent, which is
    /// no later than Redis ran it: the lease lasts at least its length — the heartbeat timeout plus two lease
    /// periods — from then, so other nodes drop this node's members of the room no sooner than that. (A node whose
    /// loop stalls renews late, and may be dropped while it still runs, as one that stopped answering.)
    public func lastLeaseRenewal(roomID: String) -> ContinuousClock.Instant? {
        shards.compactMap { shard in shard.leaseRenewals.withLock { $0[roomID] } }.max()
    }

    public func admit(
        _ claim: ClusterClaim,
        to room: any ClusteredRoom,
        verdict: @escaping @Sendable (ClusterVerdict) -> Void
    ) {
        shard(of: room).admit(claim, room: room, verdict: verdict)
    }

    public func announce(_ announcement: ClusterAnnouncement, in room: any ClusteredRoom) {
        shard(of: room).announce(announcement, room: room)
    }

    public func release(_ room: any ClusteredRoom) {
        shard(of: room).release(room)
    }

    public func kickOut(roomID: String, userIDs: [String], reason: KickReason) {
        let shard = shard(ofRoom: roomID)
        shard.loop.runSoon { [self] in
            shard.publishCall(.kick, roomID: roomID, userIDs: userIDs, reason: reason.rawValue) {
                self.node?.kickOut(roomID: roomID, userIDs: userIDs, reason: reason)
            }
        }
    }

    public func requestReconnect(roomID: String, userIDs: [String]) {
        let shard = shard(ofRoom: roomID)
        shard.loop.runSoon { [self] in
            shard.publishCall(.reconnect, roomID: roomID, userIDs: userIDs, reason: "") {
                self.node?.requestReconnect(roomID: roomID, userIDs: userIDs)
            }
        }
    }

    public func expireToken(userID: String, inRooms roomIDs: [String]?) {
        let shard = shards[0]
        shard.loop.runSoon { [self] in
            shard.broadcastExpiry(userID: userID, roomIDs: roomIDs) {
                self.node?.expireToken(userID: userID, inRooms: roomIDs)
            }
        }
    }

    /// Closes the connections to Redis (the node's leases then lapse as a dead node's would, unless the
    /// server said goodbye to its clients first, which releases them).
    public func shutdown() async {
        for shard in shards {
            await withCheckedContinuation { continuation in
                shard.loop.runSoon {
                    shard.stop()
                    continuation.resume()
                }
            }
        }
    }

    private func shard(of room: any ClusteredRoom) -> PresenceShard {
        shard(ofLoop: room.loop)
    }

    private func shard(ofRoom roomID: String) -> PresenceShard {
        shard(ofLoop: group.loop(for: roomID))
    }

    private func shard(ofLoop loop: any RuntimeLoop) -> PresenceShard {
        shards.first { $0.loop === (loop as AnyObject) } ?? shards[0]
    }
}

/// Counts of what a node did with Redis.
public struct RedisPresenceStatistics: Sendable, Equatable {
    /// Scripts and commands sent.
    public var commands = 0
    /// Logins admitted, refused by the cluster's rules, and answered busy because Redis could not be reached.
    public var admitted = 0
    public var refused = 0
    public var unavailable = 0
    /// Changes other nodes made that reached this node's rooms.
    public var changesApplied = 0
    /// Times a room reloaded its membership (after a gap in its changes, or Redis coming back).
    public var resyncs = 0
    /// Times a loop lost its connection to Redis.
    public var disconnects = 0
    /// Messages on a room's channel that were not RoomLink's events (ignored).
    public var malformedEvents = 0
    /// Whether another live node holds this node's ID (`roomlink:node:ID`): the node admits no one meanwhile.
    public var nodeIDInUse = false
    /// Whether this node holds its ID's registration.
    public var nodeIDHeld = false

    public init() {}

    mutating func add(_ other: Self) {
        commands += other.commands
        admitted += other.admitted
        refused += other.refused
        unavailable += other.unavailable
        changesApplied += other.changesApplied
        resyncs += other.resyncs
        disconnects += other.disconnects
        malformedEvents += other.malformedEvents
        nodeIDInUse = nodeIDInUse || other.nodeIDInUse
        nodeIDHeld = nodeIDHeld || other.nodeIDHeld
    }
}

extension RedisPresence: NodePresence {
    /// Waits, at most `limit` on the real clock, until every loop reached Redis and the node's ID is settled — held
    /// by this node, or found in use by another live one.
    public func awaitFirstConnections(within limit: Duration) async -> NodePresenceReadiness {
        let deadline = ContinuousClock.now.advanced(by: limit)
        var reachable = await isConnected
        while !reachable || !(statistics.nodeIDHeld || statistics.nodeIDInUse), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(50))
            reachable = await isConnected
        }
        if statistics.nodeIDInUse { return .nodeIDInUse }
        return reachable ? .reached : .notReachedYet
    }

    /// What the node did with Redis: scripts and commands, logins admitted, refused and answered busy, changes from
    /// other nodes, and connection losses.
    public var summary: String {
        let redis = statistics
        return "Redis — \(redis.commands) scripts and commands, \(redis.admitted) logins admitted, "
            + "\(redis.refused) refused by the cluster, \(redis.unavailable) answered busy while it was away, "
            + "\(redis.changesApplied) changes from other nodes, \(redis.disconnects) connection losses"
    }
}
