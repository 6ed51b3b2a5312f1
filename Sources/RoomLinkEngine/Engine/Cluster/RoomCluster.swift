/// Where several server nodes keep what their rooms share, so that they act as one server: which users are members
/// of each room and on which node, the order of their joins and leaves, and the business server's calls (kicks,
/// token expiry) wherever they arrive. `roomlink serve --redis` adopts it with Redis (`RoomLinkRedis`).
///
/// A node's rooms hold their own members (the clients connected to that node) exactly as a single server does —
/// heartbeats, deadlines and kicks stay local, so a heartbeat costs no round trip — and see the other nodes'
/// members as *remote* members: present to their peers, never sent to. The cluster carries the rest:
///
/// - a login is admitted by the cluster first (``admit(_:to:verdict:)``), which decides across nodes what a single
///   server decides alone: a kicked session stays kicked, a resumption needs its session, the member cap holds;
/// - what a room changes of its own members (a member leaving, timing out, being kicked, hiding) is announced
///   (``announce(_:in:)``); the changes other nodes made reach the room in one order through
///   ``ClusteredRoom/clusterChanged(_:)``;
/// - the business server's calls are the cluster's own (it is the ``RoomAdministration`` of a clustered server:
///   ``kickOut(roomID:userIDs:reason:)`` and the others), which hands each to the nodes holding the users
///   (``ClusterNode``).
///
/// The cluster sees rooms and nodes through protocols only (``ClusteredRoom``, ``ClusterNode``): a node's server
/// never calls the cluster back for what the cluster asked of it.
///
/// Every call is made on the room's loop (or, for the business server's calls, anywhere) and returns at once; what
/// comes back comes back on the room's loop.
public protocol RoomCluster: RoomAdministration {
    /// This node's name among the cluster's nodes.
    var nodeID: String { get }
    /// Starts serving `node`'s rooms: the cluster calls them with the other nodes' changes, and the node with the
    /// business server's calls for the users it holds. Called once, by `RoomServer`'s initializer.
    func start(serving node: any ClusterNode)
    /// Asks the cluster to admit a login to `room`; `verdict` is called on the room's loop (immediately when the
    /// cluster cannot be reached: ``ClusterVerdict/unavailable(retryAfter:)``).
    func admit(_ claim: ClusterClaim, to room: any ClusteredRoom, verdict: @escaping @Sendable (ClusterVerdict) -> Void)
    /// Tells the other nodes of a change `room` made to one of its own members.
    func announce(_ announcement: ClusterAnnouncement, in room: any ClusteredRoom)
    /// The room has no members of its own any more: the node stops following it.
    func release(_ room: any ClusteredRoom)
    /// Kicks users out of a room on whichever node holds them.
    func kickOut(roomID: String, userIDs: [String], reason: KickReason)
}

extension RoomCluster {
    /// Kicks users out of a room on whichever node holds them, for the business server (`admin`).
    public func kickOut(roomID: String, userIDs: [String]) {
        kickOut(roomID: roomID, userIDs: userIDs, reason: .admin)
    }
}

/// A room as its cluster sees it: a room of one node, on that node's loop.
public protocol ClusteredRoom: AnyObject, Sendable {
    var roomID: String { get }
    /// The loop the room runs on: the cluster calls it there.
    var loop: any RuntimeLoop { get }
    /// A change another node of the room's cluster made to the room's members, in the cluster's order. Called on the
    /// room's loop.
    func clusterChanged(_ change: ClusterChange)
    /// The room's own members (not the other nodes'), in the order they joined. Call it on the room's loop.
    func localMembersOnLoop() -> [(userID: String, session: SessionID, hidden: Bool)]
}

/// A server node as its cluster sees it: what the business server's calls do to the users this node holds, and the
/// timings its leases follow.
public protocol ClusterNode: AnyObject, Sendable {
    /// The node's rooms' timings (a member's lease outlives its heartbeat timeout).
    var timings: ServerTimings { get }
    /// Kicks users out of a room, if this node holds them.
    func kickOut(roomID: String, userIDs: [String], reason: KickReason)
    /// Asks users of a room to reconnect, if this node holds them.
    func requestReconnect(roomID: String, userIDs: [String])
    /// Expires the current token of `userID` on this node: later logins with it are refused, and its members in
    /// `roomIDs` (every room the node has when `nil`) are warned and kicked out after the renewal grace.
    func expireToken(userID: String, inRooms roomIDs: [String]?)
}

/// A login a room asks its cluster to admit.
public struct ClusterClaim: Sendable, Hashable {
    public var roomID: String
    public var userID: String
    public var session: SessionID
    public var kind: LoginRequest.Kind
    public var hidden: Bool
    /// The member cap the login asks for, which holds if it is the room's first member.
    public var maxMemberCount: Int?

    public init(
        roomID: String,
        userID: String,
        session: SessionID,
        kind: LoginRequest.Kind,
        hidden: Bool,
        maxMemberCount: Int?
    ) {
        self.roomID = roomID
        self.userID = userID
        self.session = session
        self.kind = kind
        self.hidden = hidden
        self.maxMemberCount = maxMemberCount
    }
}

/// What a cluster answers a login.
public enum ClusterVerdict: Sendable, Hashable {
    /// The login is the user's membership now, the `sequence`-th change of the room's members; `life` counts the
    /// room's lives (from a first member to a last) across the cluster.
    case admitted(life: UInt64, sequence: UInt64)
    /// The session was kicked out earlier (on any node): the kick is its answer again.
    case kicked(KickReason)
    /// A resumption of a session the room no longer has.
    case sessionUnknown
    /// The room is at its member cap.
    case memberCapReached
    /// The cluster cannot be reached: the node is too busy to admit anyone (the dialect's busy answer).
    case unavailable(retryAfter: Duration)
}

/// A change a room made to one of its own members, for the other nodes.
public enum ClusterAnnouncement: Sendable, Hashable {
    /// The member left: it logged out, timed out, or was kicked (`kicked` says why, and the cluster remembers so
    /// that the session is refused on every node).
    case left(userID: String, session: SessionID, reason: DepartureReason, kicked: KickReason?)
    /// The member became hidden from its peers, or visible again.
    case hiddenChanged(userID: String, session: SessionID, hidden: Bool)
}

/// A member held by another node, as the cluster lists it.
public struct ClusterMember: Sendable, Hashable {
    public var userID: String
    public var session: SessionID
    public var node: String
    public var hidden: Bool

    public init(userID: String, session: SessionID, node: String, hidden: Bool) {
        self.userID = userID
        self.session = session
        self.node = node
        self.hidden = hidden
    }
}

/// A change another node made to a room's members, or the room's whole membership, in the cluster's order.
public enum ClusterChange: Sendable, Hashable {
    /// The user joined on `node` (a login there); an older session of the same user elsewhere is replaced.
    case joined(ClusterMember, sequence: UInt64)
    /// The user's session left.
    case left(userID: String, session: SessionID, reason: DepartureReason, sequence: UInt64)
    /// The user's session became hidden, or visible.
    case hiddenChanged(userID: String, session: SessionID, hidden: Bool, sequence: UInt64)
    /// Every member the cluster holds for the room, as of its `sequence`-th change: the room's view of the other
    /// nodes is brought to it (peers hear the differences). A remote member it does not list left meanwhile — or,
    /// when the cluster's store was `restarted` (emptied), may still be on its way back: its node restores it, and
    /// the room keeps it for a heartbeat timeout, as if its network were lost, before it drops it.
    case snapshot([ClusterMember], sequence: UInt64, restarted: Bool)
}
