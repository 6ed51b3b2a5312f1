import RoomLinkEngine
@_spi(RoomLinkInternals) import RoomLinkLibevent
import RoomLinkRuntime

/// One loop's part of a node's ``RedisPresence``: its two connections to Redis (commands, and the subscription to
/// its rooms' channels), and a feed per room it follows, which puts the room's changes in order before the room
/// sees them.
///
/// A room's feed is *synced* once it has the room's membership as of some change (a snapshot, which a login's
/// script returns with its answer when the feed needs one) and every change after it; a change that skips a number
/// (the subscription dropped) makes it load a snapshot again.
final class PresenceShard: @unchecked Sendable {
    // Safe: everything here but `statistics` (locked) is read and written on `loop`'s thread only — the presence
    // reaches a shard through `loop.runSoon`, rooms call it from their own isolated code on this loop, and hiredis
    // and the lease timer call back on it.
    let loop: LibeventLoop
    let isFirst: Bool
    let configuration: RedisPresence.Configuration
    let statistics = LockedBox(RedisPresenceStatistics())
    /// When each followed room's lease was last renewed (the renewing script's send time): read from any thread.
    let leaseRenewals = LockedBox<[String: ContinuousClock.Instant]>([:])
    private weak var presence: RedisPresence?
    private var leaseMilliseconds = "0"
    /// How long the node's ID stays registered without a refresh: three lease periods.
    private var nodeMilliseconds = "0"
    private var command: RedisConnection?
    private var subscriber: RedisConnection?
    private var commandUp = false
    private var subscriberUp = false
    private var stopped = false
    private var reconnectPending = false
    private var feeds: [String: Feed] = [:]
    private var feedsByChannel: [String: Feed] = [:]
    /// Channels unsubscribed whose confirmation has not come yet (a room followed again waits for it).
    private var unsubscribing: Set<String> = []
    private var scriptHashes: [PresenceScript: String] = [:]
    private var leaseTimer: TimerHandle?
    /// The first loop registers the node's ID: whether it holds it, and whether another live node does.
    private var ownsNodeID = false
    private(set) var nodeIDTaken = false
    /// This node's mark on its ID's key, so that it knows its own registration from another node's.
    private let nodeToken = String(UInt64.random(in: 1...UInt64.max), radix: 16)

    var isUp: Bool { commandUp && subscriberUp }
    /// Whether logins can be admitted: Redis is reached, and no other live node uses this node's ID.
    private var admits: Bool { isUp && !nodeIDTaken }
    private var nodeKey: String { "\(configuration.keyPrefix):node:\(nodeID)" }
    private var nodeID: String { configuration.nodeID }
    private var clusterChannel: String { "\(configuration.keyPrefix):cluster" }

    /// A room this loop follows.
    final class Feed {
        let room: any ClusteredRoom
        let keys: PresenceKeys
        enum Subscription { case none, subscribing, subscribed }
        var subscription = Subscription.none
        /// Which of the room's changes to apply, hold or reload for.
        var order = PresenceFeedOrder()
        /// Logins waiting for the subscription.
        var waiting: [() -> Void] = []
        /// Logins sent and not answered: they count as the node's members for the lease script.
        var claims: [ClusterClaim] = []
        /// Lease periods in a row the room had no members of its own.
        var idlePeriods = 0
        /// Refreshing syncs since the last one that reconciled.
        var refreshes = 0
        /// Whether the connection to Redis dropped since the feed was last synced (Redis may have restarted empty,
        /// and the other nodes may not have restored their members yet).
        var reconnected = false

        init(room: any ClusteredRoom, keys: PresenceKeys) {
            self.room = room
            self.keys = keys
        }
    }

    init(loop: LibeventLoop, isFirst: Bool, configuration: RedisPresence.Configuration) {
        self.loop = loop
        self.isFirst = isFirst
        self.configuration = configuration
    }

    // MARK: - Connections

    func start(presence: RedisPresence, leaseMilliseconds: Int64, nodeMilliseconds: Int64) {
        self.presence = presence
        self.leaseMilliseconds = String(leaseMilliseconds)
        self.nodeMilliseconds = String(nodeMilliseconds)
        connect()
        leaseTimer = try? loop.schedulePeriodic(
            every: configuration.leasePeriod,
            handler: ClosureTimerHandler { [self] in refreshLeases() }
        )
    }

    func stop() {
        stopped = true
        if let leaseTimer { _ = loop.cancel(leaseTimer) }
        leaseTimer = nil
        if ownsNodeID, let command {
            // The ID is free at once for a node that replaces this one (sent before the connection closes).
            command.send(["EVAL", Self.releaseNodeScript, "1", nodeKey, nodeToken])
        }
        disconnect()
    }

    /// This loop's view of Redis (``RedisPresence/state``); read on the loop.
    var state: String {
        let rooms = feeds.values.sorted { $0.room.roomID < $1.room.roomID }.map { feed in
            "\(feed.room.roomID) \(feed.subscription) synced=\(feed.order.synced) waiting=\(feed.waiting.count) "
                + "claims=\(feed.claims.count)"
        }
        return "command \(command == nil ? "none" : commandUp ? "up" : "connecting"), "
            + "subscriber \(subscriber == nil ? "none" : subscriberUp ? "up" : "connecting"), "
            + "reconnect pending \(reconnectPending), node ID taken \(nodeIDTaken), scripts \(scriptHashes.count), "
            + "unsubscribing \(unsubscribing.sorted()), rooms [\(rooms.joined(separator: "; "))]"
    }

    // MARK: - The node's ID

    /// Drops the ID's key if it is still this node's.
    private static let releaseNodeScript =
        "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
    /// Extends the ID's key if it is this node's, takes it if it is free; 1 when the node holds it, 0 when another does.
    private static let keepNodeScript = """
        local held = redis.call('GET', KEYS[1])
        if held and held ~= ARGV[1] then return 0 end
        redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
        return 1
        """

    /// Registers the node's ID with a short lock (`SET NX PX`, three lease periods, refreshed every period), as
    /// LiveKit registers its nodes: two live nodes with one ID would take each other's members for their own.
    private func registerNodeID() {
        guard let command else { return }
        command.send(["SET", nodeKey, nodeToken, "NX", "PX", nodeMilliseconds]) { [weak self] reply in
            guard let self, let reply else { return }
            if reply.text == "OK" {
                self.holdNodeID(true)
            } else {
                self.keepNodeID()
            }
        }
    }

    /// Refreshes the ID's key (every lease period), or takes it once free.
    private func keepNodeID() {
        guard isFirst, isUp, let command else { return }
        command.send(["EVAL", Self.keepNodeScript, "1", nodeKey, nodeToken, nodeMilliseconds]) { [weak self] reply in
            guard let self, let held = reply?.integer else { return }
            self.holdNodeID(held == 1)
        }
    }

    private func holdNodeID(_ held: Bool) {
        ownsNodeID = held
        nodeIDTaken = !held
        statistics.withLock {
            $0.nodeIDInUse = !held
            $0.nodeIDHeld = held
        }
    }

    private func connect() {
        guard !stopped, command == nil else { return }
        let command = RedisConnection(loop: loop, endpoint: configuration.endpoint)
        let subscriber = RedisConnection(loop: loop, endpoint: configuration.endpoint)
        command.onConnect = { [weak self] in
            self?.commandUp = true
            self?.connected()
        }
        subscriber.onConnect = { [weak self] in
            self?.subscriberUp = true
            self?.connected()
        }
        command.onDisconnect = { [weak self] reason in self?.lost(reason) }
        subscriber.onDisconnect = { [weak self] reason in self?.lost(reason) }
        subscriber.onMessage = { [weak self] channel, payload in self?.received(payload, on: channel) }
        subscriber.onSubscribed = { [weak self] channel in self?.subscribed(channel) }
        subscriber.onUnsubscribed = { [weak self] channel in self?.unsubscribed(channel) }
        self.command = command
        self.subscriber = subscriber
        if !command.connect() || !subscriber.connect() { lost("cannot start a connection") }
    }

    private func connected() {
        guard isUp, let command, let subscriber else { return }
        for script in PresenceScript.allCases {
            command.send(["SCRIPT", "LOAD", script.source]) { [weak self] reply in
                if let sha = reply?.text { self?.scriptHashes[script] = sha }
            }
        }
        if isFirst {
            subscriber.subscribe(clusterChannel)
            registerNodeID()
        }
        for feed in feeds.values {
            feed.subscription = .subscribing
            subscriber.subscribe(feed.keys.channel)
        }
    }

    /// A connection failed or dropped: both go, every room is out of sync, and the loop reconnects after a while.
    private func lost(_ reason: String) {
        guard command != nil || subscriber != nil else { return }
        statistics.withLock { $0.disconnects += 1 }
        disconnect()
        for feed in feeds.values {
            feed.subscription = .none
            feed.order.disconnected()
            feed.reconnected = true
            let waiting = feed.waiting
            feed.waiting = []
            for login in waiting { login() }  // answered busy: the connection is down
        }
        unsubscribing = []
        guard !stopped, !reconnectPending else { return }
        reconnectPending = true
        _ = try? loop.schedule(after: configuration.reconnectDelay) { [self] in
            reconnectPending = false
            connect()
        }
    }

    private func disconnect() {
        commandUp = false
        subscriberUp = false
        let connections = [command, subscriber]
        command = nil
        subscriber = nil
        scriptHashes = [:]
        for connection in connections {
            connection?.onDisconnect = nil
            connection?.close()
        }
    }

    // MARK: - Logins and changes

    func admit(_ claim: ClusterClaim, room: any ClusteredRoom, verdict: @escaping @Sendable (ClusterVerdict) -> Void) {
        guard admits, !(presence?.nodeIDTaken ?? false) else {
            statistics.withLock { $0.unavailable += 1 }
            return verdict(.unavailable(retryAfter: configuration.retryAfter))
        }
        let feed = follow(room)
        let send = { [self] in sendClaim(claim, feed: feed, verdict: verdict) }
        if feed.subscription == .subscribed { send() } else { feed.waiting.append(send) }
    }

    private func sendClaim(
        _ claim: ClusterClaim,
        feed: Feed,
        verdict: @escaping @Sendable (ClusterVerdict) -> Void
    ) {
        guard isUp else {
            statistics.withLock { $0.unavailable += 1 }
            return verdict(.unavailable(retryAfter: configuration.retryAfter))
        }
        feed.claims.append(claim)
        let snapshot = !feed.order.synced
        let arguments = [
            claim.userID, String(claim.session.rawValue, radix: 16), nodeID, claim.hidden ? "1" : "0",
            claim.kind.rawValue, claim.maxMemberCount.map { String($0) } ?? "", snapshot ? "1" : "0",
        ]
        let sentAt = ContinuousClock.now
        run(.claim, feed.keys, arguments) { [self] reply in
            if let index = feed.claims.firstIndex(of: claim) { feed.claims.remove(at: index) }
            let answer = reply?.elements ?? []
            switch answer.first?.text {
            case "ok":
                guard answer.count >= 3, let sequence = answer[1].integer, let life = answer[2].integer else {
                    fallthrough
                }
                noteLeaseRenewal(of: feed.room.roomID, sentAt: sentAt)
                if snapshot, !feed.order.synced {
                    applySnapshot(Array(answer[3...]), sequence: UInt64(sequence), to: feed)
                }
                statistics.withLock { $0.admitted += 1 }
                verdict(.admitted(life: UInt64(max(life, 0)), sequence: UInt64(sequence)))
            case "kicked":
                statistics.withLock { $0.refused += 1 }
                verdict(.kicked(answer.count > 1 ? KickReason(rawValue: answer[1].text ?? "") ?? .admin : .admin))
            case "unknown":
                statistics.withLock { $0.refused += 1 }
                verdict(.sessionUnknown)
            case "cap":
                statistics.withLock { $0.refused += 1 }
                verdict(.memberCapReached)
            default:
                // Redis failed the script, or the connection dropped: the login may try again.
                statistics.withLock { $0.unavailable += 1 }
                verdict(.unavailable(retryAfter: configuration.retryAfter))
            }
        }
    }

    func announce(_ announcement: ClusterAnnouncement, room: any ClusteredRoom) {
        // Without Redis the change stays local; the next sync drops the member's record (it is no longer the
        // node's), and a hidden member's new visibility waits for its next login.
        guard isUp else { return }
        let keys = feeds[room.roomID]?.keys ?? PresenceKeys(prefix: configuration.keyPrefix, roomID: room.roomID)
        switch announcement {
        case .left(let userID, let session, let reason, let kicked):
            run(.release, keys, [userID, String(session.rawValue, radix: 16), reason.rawValue, kicked?.rawValue ?? ""])
        case .hiddenChanged(let userID, let session, let hidden):
            run(.hide, keys, [userID, String(session.rawValue, radix: 16), hidden ? "1" : "0"])
        }
    }

    func release(_ room: any ClusteredRoom) {
        // The lease timer unsubscribes a room idle for two periods: a room emptied and refilled at once keeps its
        // subscription and its order.
        feeds[room.roomID]?.idlePeriods = 0
    }

    /// Publishes a business server's call on a room's channel, for whichever node holds the users; `fallback` acts
    /// on this node alone when Redis cannot be reached.
    func publishCall(
        _ kind: PresenceEvent.Kind,
        roomID: String,
        userIDs: [String],
        reason: String,
        fallback: @escaping () -> Void
    ) {
        guard isUp, let command else { return fallback() }
        let channel = PresenceKeys(prefix: configuration.keyPrefix, roomID: roomID).channel
        for userID in userIDs {
            let event = PresenceEvent(
                kind: kind,
                sequence: 0,
                userID: userID,
                session: SessionID(rawValue: 0),
                node: nodeID,
                hidden: false,
                reason: reason
            )
            statistics.withLock { $0.commands += 1 }
            command.send(["PUBLISH", channel, event.encoded])
        }
    }

    /// Tells every node that `userID`'s token expired; `fallback` acts on this node alone when Redis cannot be reached.
    func broadcastExpiry(userID: String, roomIDs: [String]?, fallback: @escaping () -> Void) {
        guard isUp, let command else { return fallback() }
        let fields = ["expire", userID, roomIDs == nil ? "all" : "some"] + (roomIDs ?? [])
        statistics.withLock { $0.commands += 1 }
        command.send(["PUBLISH", clusterChannel, PresenceEvent.encode(fields)]) { reply in
            if reply == nil { fallback() }
        }
    }

    // MARK: - Feeds

    private func follow(_ room: any ClusteredRoom) -> Feed {
        if let feed = feeds[room.roomID] {
            feed.idlePeriods = 0
            return feed
        }
        let feed = Feed(room: room, keys: PresenceKeys(prefix: configuration.keyPrefix, roomID: room.roomID))
        feeds[room.roomID] = feed
        feedsByChannel[feed.keys.channel] = feed
        feed.subscription = .subscribing
        // A channel still being unsubscribed is subscribed again once that is confirmed (hiredis forgets a channel's
        // handler when the unsubscription's answer comes).
        if !unsubscribing.contains(feed.keys.channel) { subscriber?.subscribe(feed.keys.channel) }
        return feed
    }

    private func subscribed(_ channel: String) {
        guard let feed = feedsByChannel[channel] else { return }
        feed.subscription = .subscribed
        // Back after Redis was away: the room's members of its own are restored and its view reloaded.
        if !feed.order.synced, !feed.room.localMembersOnLoop().isEmpty { resync(feed) }
        let waiting = feed.waiting
        feed.waiting = []
        for login in waiting { login() }
    }

    private func unsubscribed(_ channel: String) {
        unsubscribing.remove(channel)
        if let feed = feedsByChannel[channel], feed.subscription == .subscribing { subscriber?.subscribe(channel) }
    }

    private func received(_ payload: String, on channel: String) {
        if channel == clusterChannel { return receivedBroadcast(payload) }
        guard let feed = feedsByChannel[channel] else { return }
        guard let event = PresenceEvent(parsing: payload) else {
            statistics.withLock { $0.malformedEvents += 1 }
            return
        }
        switch event.kind {
        case .kick:
            presence?.node?.kickOut(
                roomID: feed.room.roomID,
                userIDs: [event.userID],
                reason: KickReason(rawValue: event.reason) ?? .admin
            )
        case .reconnect:
            presence?.node?.requestReconnect(roomID: feed.room.roomID, userIDs: [event.userID])
        case .join, .leave, .hide:
            carryOut(feed.order.received(event), for: feed)
        }
    }

    private func receivedBroadcast(_ payload: String) {
        guard let fields = PresenceEvent.fields(payload), fields.count >= 3, fields[0] == "expire" else {
            statistics.withLock { $0.malformedEvents += 1 }
            return
        }
        let roomIDs = fields[2] == "all" ? nil : Array(fields[3...])
        presence?.node?.expireToken(userID: fields[1], inRooms: roomIDs)
    }

    /// Carries out what the feed's order answered: applies its next changes, or reloads after a missed one.
    private func carryOut(_ actions: [PresenceFeedOrder.Action], for feed: Feed) {
        for action in actions {
            switch action {
            case .apply(let event):
                // The node's own changes are its rooms' already.
                guard event.node != nodeID, let change = event.change else { continue }
                statistics.withLock { $0.changesApplied += 1 }
                feed.room.clusterChanged(change)
            case .reload:
                resync(feed)
            }
        }
    }

    private func applySnapshot(_ listing: [RedisReply], sequence: UInt64, to feed: Feed) {
        var members: [ClusterMember] = []
        var index = 0
        while index + 3 < listing.count {
            if let userID = listing[index].text, let sessionText = listing[index + 1].text,
                let session = UInt64(sessionText, radix: 16), let node = listing[index + 2].text, node != nodeID
            {
                members.append(
                    ClusterMember(
                        userID: userID,
                        session: SessionID(rawValue: session),
                        node: node,
                        hidden: listing[index + 3].text == "1"
                    )
                )
            }
            index += 4
        }
        feed.room.clusterChanged(.snapshot(members, sequence: sequence, restarted: feed.reconnected))
        feed.reconnected = false
        carryOut(feed.order.loaded(snapshotAt: sequence), for: feed)
    }

    /// Reloads the room's membership, restoring the node's own members' records first.
    private func resync(_ feed: Feed) {
        guard feed.subscription == .subscribed else { return }
        feed.order.reloading()
        statistics.withLock { $0.resyncs += 1 }
        sync(feed, snapshot: true)
    }

    // MARK: - Leases

    /// Every lease period: refreshes the leases of the members of each room the loop follows (one script per room),
    /// and stops following rooms idle for two periods.
    private func refreshLeases() {
        guard isUp else { return }
        keepNodeID()
        for feed in Array(feeds.values) {
            let hasMembers = !feed.room.localMembersOnLoop().isEmpty
            if !hasMembers, feed.claims.isEmpty, feed.waiting.isEmpty {
                feed.idlePeriods += 1
                if feed.idlePeriods >= 2 { unfollow(feed) }
                continue
            }
            feed.idlePeriods = 0
            if feed.subscription == .subscribed { sync(feed, snapshot: !feed.order.synced) }
        }
    }

    private func sync(_ feed: Feed, snapshot: Bool) {
        // Most syncs only refresh the node's leases. One in `reconcileEvery`, and every snapshot (after a dropped
        // connection), also drops records Redis holds for this node that it no longer has: a release lost with its
        // connection, or one Redis failed.
        let reconcile = snapshot || feed.refreshes >= Self.reconcileEvery - 1
        feed.refreshes = reconcile ? 0 : feed.refreshes + 1
        var arguments = [nodeID, snapshot ? "1" : reconcile ? "r" : "0"]
        for member in feed.room.localMembersOnLoop() {
            arguments += [member.userID, String(member.session.rawValue, radix: 16), member.hidden ? "1" : "0"]
        }
        for claim in feed.claims {
            arguments += [claim.userID, String(claim.session.rawValue, radix: 16), claim.hidden ? "1" : "0"]
        }
        let sentAt = ContinuousClock.now
        run(.sync, feed.keys, arguments) { [self] reply in
            if reply?.elements != nil { noteLeaseRenewal(of: feed.room.roomID, sentAt: sentAt) }
            guard snapshot, !feed.order.synced, feed.subscription == .subscribed else { return }
            guard let answer = reply?.elements, answer.count >= 2, let sequence = answer[0].integer else { return }
            applySnapshot(Array(answer[2...]), sequence: UInt64(max(sequence, 0)), to: feed)
        }
    }

    /// A script that renews the node's lease on `roomID` (a sync, an admitted claim) succeeded. It was sent at
    /// `sentAt`, no later than Redis ran it, so the lease lasts at least its length from then.
    private func noteLeaseRenewal(of roomID: String, sentAt: ContinuousClock.Instant) {
        leaseRenewals.withLock { $0[roomID] = max($0[roomID] ?? sentAt, sentAt) }
    }

    /// How often a room's sync reconciles the node's records (reads the whole room), in syncs.
    static let reconcileEvery = 10

    private func unfollow(_ feed: Feed) {
        let channel = feed.keys.channel
        feeds[feed.room.roomID] = nil
        leaseRenewals.withLock { $0[feed.room.roomID] = nil }
        feedsByChannel[channel] = nil
        guard feed.subscription != .none, let subscriber else { return }
        unsubscribing.insert(channel)
        subscriber.unsubscribe(channel)
    }

    // MARK: - Scripts

    /// Runs a presence script on the room's keys: by its hash once Redis has it, by its source otherwise (and again
    /// by its source when Redis lost it, as a restarted Redis has).
    private func run(
        _ script: PresenceScript,
        _ keys: PresenceKeys,
        _ arguments: [String],
        reply: ((RedisReply?) -> Void)? = nil
    ) {
        guard let command else {
            reply?(nil)
            return
        }
        statistics.withLock { $0.commands += 1 }
        let tail =
            [String(keys.all.count)] + keys.all + [keys.channel, leaseMilliseconds, leaseMilliseconds] + arguments
        guard let sha = scriptHashes[script] else {
            return command.send(["EVAL", script.source] + tail, reply: reply)
        }
        command.send(["EVALSHA", sha] + tail) { [weak self] answer in
            guard case .error(let message) = answer, message.hasPrefix("NOSCRIPT"), let self, let command = self.command
            else { return reply?(answer) ?? () }
            self.scriptHashes[script] = nil
            command.send(["EVAL", script.source] + tail, reply: reply)
        }
    }
}

extension Duration {
    /// The duration in whole milliseconds.
    var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}
