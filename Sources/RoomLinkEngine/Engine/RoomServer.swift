@_spi(RoomLinkInternals) import RoomLinkRuntime

/// The server side of every room: rooms as actors spread over a loop group, the authentication table, and the
/// business server's admin calls (kick, token expiry).
///
/// A room is created on first use and placed on `group.loop(for: roomID)`, so a room and the clients the load
/// generator places by room share a loop and talk without crossing threads.
public final class RoomServer: RoomDirectory, ClusterNode {
    public let group: any RuntimeLoopGroup
    /// What the rooms share with the server. The rooms hold it, not the server, so a room whose timer fires after
    /// its server is gone still finds everything it needs (and no cycle keeps either alive).
    let shared: Shared
    private let rooms = LockedBox<[String: ServerRoom]>([:])

    public var timings: ServerTimings { shared.timings }

    /// The part of a server its rooms use: timings, the nodes, the token table.
    final class Shared: Sendable {
        let timings: ServerTimings
        /// The nodes, when their capacity is modelled.
        let nodes: ServerNodes?
        /// The cluster this server is a node of, if any.
        let cluster: (any RoomCluster)?
        /// Where its rooms' lives start counting (``ServerRoomState/init(roomID:timings:clustered:epoch:modelsCapacity:reportsMembership:)``).
        let epoch: UInt64
        /// Who hears its rooms' members join and leave, if anyone.
        let membershipObserver: (any RoomMembershipObserver)?
        /// How many members each room makes room for when it is made, if the server was told.
        let expectedRoomSize: Int?
        private let tokens: LockedBox<TokenTable>
        /// The vendor's token checks, when the server verifies signed tokens rather than a table.
        let verified: VerifiedTokens?
        private struct TokenTable {
            /// The valid tokens of each user ID; `nil` when the server checks no tokens.
            var auth: AuthTable?
            /// Tokens that expired, by user ID ("" for a login without a token).
            var expired: [String: Set<String>] = [:]
            /// The token each user last logged in or renewed with, when it is not the one an expiry assumes without
            /// an entry (``assumedCurrent(_:)``): a load test's million tokenless logins keep no entry each.
            var current: [String: String] = [:]

            /// The token an expiry of `userID` expires when the user has no entry: its first listed token, or none.
            func assumedCurrent(_ userID: String) -> String { auth?.tokens[userID]?.first ?? "" }

            /// `token` becomes the current token of `userID`.
            mutating func setCurrent(_ token: String, for userID: String) {
                if token == assumedCurrent(userID) {
                    if !current.isEmpty { current[userID] = nil }
                } else {
                    current[userID] = token
                }
            }
        }

        init(
            timings: ServerTimings,
            auth: AuthTable?,
            verified: VerifiedTokens?,
            policy: ServerPolicy,
            cluster: (any RoomCluster)?,
            epoch: UInt64,
            membershipObserver: (any RoomMembershipObserver)?,
            expectedRoomSize: Int?
        ) {
            self.timings = timings
            self.expectedRoomSize = expectedRoomSize
            self.cluster = cluster
            self.epoch = epoch
            self.membershipObserver = membershipObserver
            self.nodes = policy.isModelled ? ServerNodes(policy: policy, loginProcessing: timings.loginProcessing) : nil
            self.tokens = LockedBox(TokenTable(auth: auth))
            self.verified = verified
        }

        /// Whether `token` lets `userID` log in to `roomID` at `now` and, for a verified token, until when. A token
        /// the admin API expired stays refused whichever way tokens are checked.
        func checkLogin(
            _ token: String?,
            for userID: String,
            roomID: String,
            now: RuntimeInstant
        ) -> (valid: Bool, expiry: RuntimeInstant?) {
            guard let verified else { return (admitsLogin(token, for: userID), nil) }
            let expired = tokens.withLock { $0.expired[userID]?.contains(token ?? "") ?? false }
            guard !expired else { return (false, nil) }
            return check(token, for: userID, roomID: roomID, now: now, with: verified)
        }

        /// Whether a renewal with `token` is accepted and, for a verified token, until when it holds.
        func checkRenewal(
            _ token: String,
            for userID: String,
            roomID: String,
            now: RuntimeInstant
        ) -> (valid: Bool, expiry: RuntimeInstant?) {
            guard let verified else { return (renewToken(token, for: userID), nil) }
            guard !token.isEmpty else { return (false, nil) }
            return check(token, for: userID, roomID: roomID, now: now, with: verified)
        }

        private func check(
            _ token: String?,
            for userID: String,
            roomID: String,
            now: RuntimeInstant,
            with verified: VerifiedTokens
        ) -> (valid: Bool, expiry: RuntimeInstant?) {
            let unixTime = verified.unixTime(at: now)
            switch verified.verifier.verify(token, userID: userID, roomID: roomID, unixTime: unixTime) {
            case .accepted(let expiresAt):
                guard expiresAt > unixTime else { return (false, nil) }
                tokens.withLock { $0.setCurrent(token ?? "", for: userID) }
                return (true, verified.instant(atUnixTime: expiresAt))
            case .refused:
                return (false, nil)
            }
        }

        /// Marks the current token of `userID` expired: the one it last logged in or renewed with.
        func expire(_ userID: String) {
            tokens.withLock { table in
                let current = table.current[userID] ?? table.assumedCurrent(userID)
                table.expired[userID, default: []].insert(current)
            }
        }

        /// Whether `token` lets `userID` log in: it has not expired, and the authentication table, if there is one,
        /// lists it for the user. A valid token becomes the user's current one.
        func admitsLogin(_ token: String?, for userID: String) -> Bool {
            tokens.withLock { table in
                if table.expired[userID]?.contains(token ?? "") ?? false { return false }
                if let auth = table.auth, !auth.lists(token, for: userID) { return false }
                table.setCurrent(token ?? "", for: userID)
                return true
            }
        }

        /// Whether a renewal with `token` is accepted: the token is not empty, has not expired, and the
        /// authentication table, if there is one, lists it for the user. An accepted token becomes the user's
        /// current one; a refused renewal changes nothing (the expiry it answered stays due).
        func renewToken(_ token: String, for userID: String) -> Bool {
            tokens.withLock { table in
                guard !token.isEmpty, !(table.expired[userID]?.contains(token) ?? false) else { return false }
                if let auth = table.auth, !auth.lists(token, for: userID) { return false }
                table.setCurrent(token, for: userID)
                return true
            }
        }
    }

    /// Creates a server.
    ///
    /// - Parameters:
    ///   - group: Where the rooms run.
    ///   - transport: How clients reach the rooms; the server asks it to route clients' messages to its rooms
    ///     (``ServerTransport/serve(_:)``), and a `SimulatedNetwork` keeps it alive for that. The server keeps no
    ///     reference to it: its rooms answer on the channels their clients' messages came on
    ///     (``ClientChannel/send(_:from:)``). (A weak one would give the transport a side table, which sends every
    ///     retain and release of it down the runtime's slow path — an in-process network's, twice a message.)
    ///   - timings: The dialect's server timings.
    ///   - auth: The valid tokens of each user ID. When present, a login or a token renewal whose token it does not
    ///     list for the user is refused.
    ///   - tokens: Signed tokens checked as a vendor's cloud checks them (``TokenVerifier``), in place of `auth`: a
    ///     login or renewal whose token does not verify for the user and the room is refused, and a member is warned
    ///     the renewal grace before its token's expiry and removed at it unless it renews.
    ///   - policy: The nodes' capacity and admission control (contract §9); unlimited by default.
    ///   - cluster: The cluster this server is one node of (``RoomCluster``), if any: rooms then share their members
    ///     with the other nodes, and the business server's calls reach the node that holds the users.
    ///   - epoch: Where the count of its rooms' lives starts, so that a room's `room_session_id` is not one another
    ///     server (an earlier run of this one) gave: 0, the default, for reproducible virtual-time runs; a server
    ///     process picks a random one (RoomLinkNetwork's `NetworkServer` does). In a cluster the lives are the
    ///     cluster's.
    ///   - membershipObserver: Who hears each room's own members join and leave (webhooks), if anyone.
    ///   - expectedRoomSize: How many members a room will hold, when that is known (a load test's rooms): each room
    ///     makes room for that many when it is made, where its tables would otherwise grow by doubling (a room of a
    ///     hundred keeping space for 128). Memory only: it changes nothing a room does.
    public init(
        group: any RuntimeLoopGroup,
        transport: any ServerTransport,
        timings: ServerTimings = .zego,
        auth: AuthTable? = nil,
        tokens: VerifiedTokens? = nil,
        policy: ServerPolicy = .unlimited,
        cluster: (any RoomCluster)? = nil,
        epoch: UInt64 = 0,
        membershipObserver: (any RoomMembershipObserver)? = nil,
        expectedRoomSize: Int? = nil
    ) {
        self.group = group
        self.shared = Shared(
            timings: timings,
            auth: auth,
            verified: tokens,
            policy: policy,
            cluster: cluster,
            epoch: epoch,
            membershipObserver: membershipObserver,
            expectedRoomSize: expectedRoomSize
        )
        transport.serve(self)
        cluster?.start(serving: self)
    }

    /// The cluster this server is a node of, if any.
    public var cluster: (any RoomCluster)? { shared.cluster }

    public func room(_ roomID: String) -> any RoomEndpoint {
        serverRoom(roomID)
    }

    /// The room called `roomID`, created on first use.
    public func serverRoom(_ roomID: String) -> ServerRoom {
        rooms.withLock { rooms in
            if let room = rooms[roomID] { return room }
            let room = ServerRoom(roomID: roomID, loop: group.loop(for: roomID), shared: shared)
            rooms[roomID] = room
            return room
        }
    }

    /// The server's nodes, when their capacity is modelled (``ServerPolicy/isModelled``): their statistics.
    public var nodes: ServerNodes? { shared.nodes }

    /// The rooms created so far.
    public var roomCount: Int { rooms.withLock { $0.count } }

    /// The room called `roomID` if it exists (unlike ``serverRoom(_:)``, which creates it).
    public func existingRoom(_ roomID: String) -> ServerRoom? {
        rooms.withLock { $0[roomID] }
    }

    /// The IDs of the rooms created so far, sorted.
    public var roomIDs: [String] { rooms.withLock { $0.keys.sorted() } }

    /// Kicks users out of a room (the business server's kick API); their clients are told why and do not reconnect,
    /// and the room's other members see them leave.
    ///
    /// On this server: a server that is a node of a cluster holds only its own clients — the cluster's own
    /// `kickOut` reaches every node.
    public func kickOut(roomID: String, userIDs: [String]) {
        kickOut(roomID: roomID, userIDs: userIDs, reason: .admin)
    }

    /// Kicks users out of a room, if this server has it, for `reason` (what a cluster asks of each node).
    public func kickOut(roomID: String, userIDs: [String], reason: KickReason) {
        guard let room = existingRoom(roomID) else { return }
        onLoop(of: room) { room in for userID in userIDs { room.kick(userID, reason: reason) } }
    }

    /// Asks users of a room to reconnect now, as a server node going away does (LiveKit's `LeaveRequest` with a
    /// reconnect action): a LiveKit client reconnects in full, with a new session; ZEGO and Agora clients resume. On
    /// this server (in a cluster, the cluster's own call reaches every node).
    public func requestReconnect(roomID: String, userIDs: [String]) {
        guard let room = existingRoom(roomID) else { return }
        onLoop(of: room) { room in for userID in userIDs { room.requestReconnect(userID) } }
    }

    /// Expires the current token of `userID`: later logins with it are refused, and the user's members in `roomIDs`
    /// (every room when `nil`) are warned and kicked out after the renewal grace unless they renew. On this server (in
    /// a cluster, the cluster's own call reaches every node).
    public func expireToken(userID: String, inRooms roomIDs: [String]? = nil) {
        shared.expire(userID)
        let targets = (roomIDs ?? self.roomIDs).compactMap(existingRoom)
        for room in targets { onLoop(of: room) { $0.tokenExpired(userID) } }
    }

    private func onLoop(of room: ServerRoom, _ body: @escaping @Sendable (isolated ServerRoom) -> Void) {
        room.loop.runSoon { room.assumeIsolated { body($0) } }
    }
}
