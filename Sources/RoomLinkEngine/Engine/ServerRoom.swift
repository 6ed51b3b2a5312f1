@_spi(RoomLinkInternals) import RoomLinkRuntime

/// The server side of one room: an actor pinned to a loop of the server's group, driving a ``ServerRoomState``.
///
/// Messages from clients arrive on its loop (its ``ServerTransport`` delivers them there, with the channel each came
/// on) and are handled at once, except logins, which are answered after the server's `loginProcessing` time. Its
/// timers (heartbeat deadlines, token deadlines, user-update batches) fire on the same loop and call it with no hop.
///
/// On a server whose capacity is modelled (``ServerPolicy``), each message goes to the room's ``ServerNode`` first,
/// which says when a worker will have served it — the room handles it then — or that it is refused as busy or shed.
public actor ServerRoom: RoomEndpoint, ClusteredRoom, LoopPinnedActor {
    public nonisolated let roomID: String
    public nonisolated let roomHash: UInt64
    public nonisolated let loop: any RuntimeLoop
    private let server: RoomServer.Shared
    /// Unchecked at run time (the static checks still hold): every message accesses it, and the room applies what
    /// it decides only after each access has ended.
    @exclusivity(unchecked) private var state: ServerRoomState
    /// The node whose workers serve this room, when capacity is modelled.
    private let node: LockedBox<ServerNode>?
    /// When the login being processed for each session is done: a connection's messages take effect in the order
    /// it sent them, so a logout sent right after a login is handled at that instant, after the login (timers of one
    /// deadline fire in the order they were armed) — not before it, which would leave a member nobody is behind until
    /// its heartbeat timeout.
    private var loginDone: [SessionID: RuntimeInstant] = [:]
    /// Where the room's logins wait out the server's processing time when its loop keeps them in a batch
    /// (``BatchingLoop``); `nil` on any other loop, where each takes a timer. Asked for at the first login,
    /// on the loop's thread (a loop hands out its batches there).
    private var loginBatch: (any LoginBatch)?
    private var askedForLoginBatch = false
    /// With verified tokens (``VerifiedTokens``): when each user's token expires, as its last login or renewal here
    /// showed. A warning timer armed for another expiry than the one noted finds it renewed, and does nothing.
    private var tokenExpiries: [String: RuntimeInstant] = [:]

    init(roomID: String, loop: any RuntimeLoop, shared server: RoomServer.Shared) {
        self.roomID = roomID
        self.roomHash = StableHash.fnv1a(roomID)
        self.loop = loop
        self.server = server
        self.node = server.nodes?.node(of: roomID)
        self.state = ServerRoomState(
            roomID: roomID,
            timings: server.timings,
            clustered: server.cluster != nil,
            epoch: server.epoch,
            modelsCapacity: node != nil,
            reportsMembership: server.membershipObserver != nil
        )
        if let size = server.expectedRoomSize { state.reserveMembers(size) }
    }

    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    /// The identity of ``loop``, read without a retain of the loop: what an in-process network compares to route a
    /// message.
    package nonisolated var loopIdentity: ObjectIdentifier { ObjectIdentifier(loop) }

    /// The user IDs of the members, in the order they joined.
    public var memberIDs: [String] { state.memberIDs }

    /// The room's current life on this server (``ServerRoomState/roomSessionID``).
    public var roomSessionID: String { state.roomSessionID }

    /// The current member with `userID`, if any.
    public func member(_ userID: String) -> ServerRoomState.Member? { state.member(userID) }

    /// When `userID`'s membership ends unless it renews its token (after an expiry, until an accepted renewal);
    /// `nil` for a member whose token stands, or no member.
    public func tokenDeadline(of userID: String) -> RuntimeInstant? { state.member(userID)?.tokenDeadline }

    public nonisolated func deliver(_ message: ClientMessage, on channel: any ClientChannel) {
        precondition(loop.isInServiceThread, "a ServerRoom was called off its loop's thread")
        Self.receiveOnLoop(self, message, channel)
    }

    /// `receive`, callable from the room's loop with no hop: made once, as a dialect's `EnginePath` is. Safe by
    /// `LoopPinnedActor.loopEntry(_:)`'s invariant: `deliver` calls it only after checking it runs on the room's
    /// loop's thread.
    /// (Through `onLoop(call:with:)`, the pair of arguments cost an allocation on every message.)
    private static let receiveOnLoop: @Sendable (ServerRoom, ClientMessage, any ClientChannel) -> Void = {
        let receive: @Sendable (isolated ServerRoom, ClientMessage, any ClientChannel) -> Void = {
            $0.receive($1, on: $2)
        }
        return loopEntry(receive)
    }()

    /// Starts loading, without waiting for it, what a heartbeat of the member the room last found at `slot`
    /// (``ClientChannel/memberHint``) will read of the room's tables: for a transport that knows a heartbeat's member
    /// before it delivers the heartbeat (an in-process one, ``InProcessTransport``). Changes nothing. Call on the
    /// room's loop.
    package nonisolated func prefetchMember(atSlot slot: Int32) {
        precondition(loop.isInServiceThread, "a ServerRoom was called off its loop's thread")
        Self.prefetchMemberOnLoop(self, slot)
    }

    /// The state's `prefetchMember(at:)`, callable from the room's loop with no hop, as ``receiveOnLoop`` is.
    private static let prefetchMemberOnLoop: @Sendable (ServerRoom, Int32) -> Void = {
        let prefetch: @Sendable (isolated ServerRoom, Int32) -> Void = { $0.state.prefetchMember(at: $1) }
        return loopEntry(prefetch)
    }()

    public nonisolated func connectionClosed(userID: String, session: SessionID, on channel: any ClientChannel) {
        onLoop { room in
            // An edge of the connection, which the server's network stack notices, not a worker — but after a login
            // of the session still being processed, which it follows (as a logout does): taken first, it would find
            // no member, and the member the login then adds would be kept with nothing to time it out.
            if let done = room.loginDone[session] {
                room.at(done) { $0.closed(userID: userID, session: session, on: channel) }
            } else {
                room.closed(userID: userID, session: session, on: channel)
            }
        }
    }

    private func closed(userID: String, session: SessionID, on channel: any ClientChannel) {
        if let arm = state.connectionClosed(userID: userID, session: session, channel: channel, now: loop.now) {
            apply([arm])
        }
    }

    public nonisolated func dataResumed(userID: String, session: SessionID, on channel: any ClientChannel) {
        onLoop { room in
            // An edge of the connection too, noticed without a worker.
            let (reply, arm) = room.state.dataResumed(
                userID: userID,
                session: session,
                channel: channel,
                now: room.loop.now
            )
            if let reply { channel.send(reply, from: room) }
            if let arm { room.apply([arm]) }
        }
    }

    public nonisolated func withMemberChannels(_ body: @escaping @Sendable ([any ClientChannel]) -> Void) {
        loop.runSoon { [self] in onLoop { room in body(room.state.memberChannels) } }
    }

    private func receive(_ message: ClientMessage, on channel: any ClientChannel) {
        let now = loop.now
        switch message {
        case .logout(_, let session), .renewToken(_, let session, _), .setHidden(_, let session, _):
            if let done = loginDone[session] {
                at(done) { room in room.handle(message, on: channel, arrivedAt: now) }
                return
            }
        default:
            break
        }
        guard let node else {
            if case .login(let request) = message {
                let done = now.advanced(by: state.timings.loginProcessing)
                loginDone[request.session] = max(loginDone[request.session] ?? done, done)
                let pending = PendingLogin(room: self, request: request, channel: channel, done: done)
                if !askedForLoginBatch {
                    askedForLoginBatch = true
                    loginBatch = (loop as? any BatchingLoop)?.loginBatch(after: server.timings.loginProcessing)
                }
                if let loginBatch, loginBatch.add(pending) { return }
                _ = try? loop.schedule(at: done, handler: PendingLoginTimer(pending))
            } else {
                handle(message, on: channel, arrivedAt: now)
            }
            return
        }
        let kind: ServerNode.Kind
        var answerBy: RuntimeInstant?
        var answerTrip = Duration.zero
        switch message {
        case .login(let request):
            kind = .login
            answerBy = request.answerBy
            // The answer's way back takes about as long as the request's way here.
            answerTrip = request.sentAt.map { $0.duration(to: now) } ?? .zero
        case .heartbeat: kind = .heartbeat
        case .logout, .renewToken, .setHidden: kind = .other
        case .connectionResumed:
            // An edge of a connection, which the server's network stack notices, not a worker.
            handle(message, on: channel, arrivedAt: now)
            return
        }
        switch node.withLock({ $0.arrive(kind, at: now, answerBy: answerBy, answerTrip: answerTrip) }) {
        case .serve(let done, let waited) where done <= now || (kind != .login && waited == .zero):
            // A cheap message that found a worker free is handled on arrival: its cost (microseconds) still holds
            // the worker, but a timer per heartbeat to move its answer that much later would cost the run more
            // than the model is worth. Logins, and every message that queued, are handled when served.
            handle(message, on: channel, arrivedAt: now)
        case .serve(let done, _):
            guard case .heartbeat(_, let session) = message else {
                if case .login(let request) = message {
                    loginDone[request.session] = max(loginDone[request.session] ?? done, done)
                    at(done) { room in
                        room.handle(message, on: channel, arrivedAt: now)
                        room.loginProcessed(request.session, at: done)
                    }
                    return
                }
                at(done) { room in room.handle(message, on: channel, arrivedAt: now) }
                return
            }
            state.heartbeatQueued(session: session)
            at(done) { room in
                room.state.heartbeatServed(session: session)
                room.handle(message, on: channel, arrivedAt: now)
            }
        case .busy(let retryAfter):
            guard case .login(let request) = message else { return }
            let answer = ServerMessage.busy(session: request.session, attempt: request.attempt, retryAfter: retryAfter)
            channel.send(answer, from: self)
        case .shed:
            return
        }
    }

    private func login(_ request: LoginRequest, on channel: any ClientChannel) {
        let (valid, expiry) = server.checkLogin(request.token, for: request.userID, roomID: roomID, now: loop.now)
        if let expiry { noteTokenExpiry(expiry, of: request.userID) }
        state.loginArrived(session: request.session)
        guard valid, let cluster = server.cluster else {
            apply(state.login(request, from: channel, tokenValid: valid, now: loop.now))
            return
        }
        let claim = ClusterClaim(
            roomID: roomID,
            userID: request.userID,
            session: request.session,
            kind: request.kind,
            hidden: request.hidden,
            maxMemberCount: request.maxMemberCount
        )
        cluster.admit(claim, to: self) { [self] verdict in
            onLoop(call: Self.admittedOnLoop, with: (request, channel, verdict))
        }
    }

    private static let admittedOnLoop:
        @Sendable (isolated ServerRoom, (LoginRequest, any ClientChannel, ClusterVerdict)) -> Void = {
            $0.admitted($1.0, on: $1.1, verdict: $1.2)
        }

    /// The cluster's answer to a login: the room lets it in, or answers as the cluster says.
    private func admitted(_ request: LoginRequest, on channel: any ClientChannel, verdict: ClusterVerdict) {
        apply(state.admitted(request, verdict: verdict, from: channel, now: loop.now))
    }

    /// A change another node of the room's cluster made to the room's members, in the cluster's order. Called on the
    /// room's loop.
    public nonisolated func clusterChanged(_ change: ClusterChange) {
        onLoop(call: Self.clusterChangedOnLoop, with: change)
    }

    private static let clusterChangedOnLoop: @Sendable (isolated ServerRoom, ClusterChange) -> Void = { room, change in
        room.apply(room.state.clusterChanged(change, now: room.loop.now))
    }

    /// The room's own members (not the cluster's other nodes'), in the order they joined.
    public var localMembers: [(userID: String, session: SessionID, hidden: Bool)] {
        state.localMembers.map { ($0.userID, $0.session, $0.hidden) }
    }

    /// ``localMembers``, from the room's loop without a hop (what its cluster reads as it syncs).
    public nonisolated func localMembersOnLoop() -> [(userID: String, session: SessionID, hidden: Bool)] {
        onLoop { $0.localMembers }
    }

    /// The members other nodes of the room's cluster hold, in the order they joined.
    public var remoteMembers: [ClusterMember] {
        state.remoteMembers
    }

    /// Whether the room holds members of its own (in a cluster, beside the other nodes').
    public var hasLocalMembers: Bool { state.hasLocalMembers }

    /// A login waiting out the server's processing time, in its loop's batch of logins (``LoginBatch``) or in a
    /// timer's handler (``PendingLoginTimer``).
    package struct PendingLogin: Sendable {
        package let room: ServerRoom
        /// When it is due: the clock may have moved past it when it fires (a real loop's timer runs late), and
        /// `loginDone` keeps deadlines.
        let done: RuntimeInstant
        let channel: any ClientChannel
        let request: LoginRequest

        init(room: ServerRoom, request: LoginRequest, channel: any ClientChannel, done: RuntimeInstant) {
            self.room = room
            self.done = done
            self.channel = channel
            self.request = request
        }

        /// Processes the login, on the room's loop.
        package func process() {
            room.onLoop(call: ServerRoom.processLoginOnLoop, with: self)
        }
    }

    /// A waiting login as a timer's handler: the handler and the request in one object. A closure for it took three
    /// allocations (its context, the hop onto the room, the timer's box around it).
    private final class PendingLoginTimer: TimerHandler {
        let pending: PendingLogin

        init(_ pending: PendingLogin) {
            self.pending = pending
        }

        func timerFired(_ timer: TimerHandle) {
            pending.process()
        }
    }

    /// A waiting login's processing, as a function value made once (``LoopPinnedActor/onLoop(call:with:)``).
    private static let processLoginOnLoop: @Sendable (isolated ServerRoom, PendingLogin) -> Void = { room, pending in
        room.login(pending.request, on: pending.channel)
        room.loginProcessed(pending.request.session, at: pending.done)
    }

    /// The login of `session` due at `time` was processed; a later one of the session may still be pending.
    private func loginProcessed(_ session: SessionID, at time: RuntimeInstant) {
        if let done = loginDone[session], done <= time { loginDone[session] = nil }
    }

    /// Handles `message`, which arrived at `arrivedAt`: now, or — capacity modelled — when a worker has served it.
    /// (Inlined: without a capacity this is every heartbeat's path, as it was before nodes existed.)
    @inline(__always)
    private func handle(_ message: ClientMessage, on channel: any ClientChannel, arrivedAt: RuntimeInstant) {
        let now = loop.now
        switch message {
        case .login(let request):
            login(request, on: channel)
        case .heartbeat(let userID, let session):
            let hint = channel.memberHint
            let (reply, slot, arm) = state.heartbeat(userID: userID, session: session, slot: hint, now: now)
            // Written only when it moved: a store to every answered client's line, each heartbeat, was a line made
            // dirty to write back — at ten million clients the memory bus is the limit.
            if slot >= 0, slot != hint { channel.setMemberHint(slot) }
            if state.isLate(reply, session: session, arrivedAt: arrivedAt) { node?.withLock { $0.lateHeartbeat() } }
            channel.send(reply, from: self)
            if let arm { apply([arm]) }
        case .logout(let userID, let session):
            apply(state.logout(userID: userID, session: session, now: now))
        case .renewToken(let userID, let session, let token):
            let (valid, expiry) = server.checkRenewal(token, for: userID, roomID: roomID, now: now)
            guard valid else { return }
            if let expiry {
                guard state.member(userID)?.session == session else { return }
                state.tokenRenewed(userID: userID, session: session)
                noteTokenExpiry(expiry, of: userID)
            } else {
                state.tokenRenewed(userID: userID, session: session)
            }
        case .connectionResumed(let userID, let session):
            let (reply, _, arm) = state.heartbeat(userID: userID, session: session, now: now)
            if case .heartbeatAck = reply {
                state.rebind(userID: userID, session: session, to: channel)
            } else {
                channel.send(reply, from: self)
            }
            if let arm { apply([arm]) }
        case .setHidden(let userID, let session, let hidden):
            apply(state.setHidden(userID: userID, session: session, hidden: hidden, now: now))
        }
    }

    /// Kicks `userID` out on behalf of the business server (its client is told `reason` and does not reconnect;
    /// the other members see it leave). Does nothing when `userID` is not a member.
    public func kick(_ userID: String, reason: KickReason) {
        apply(state.kick(userID: userID, reason: reason, now: loop.now))
    }

    /// Asks `userID` to reconnect now, as a server node going away does.
    public func requestReconnect(_ userID: String) {
        apply(state.requestReconnect(userID: userID))
    }

    /// The token of `userID` expired: its member, if it is the room's own, is warned and kicked out after the
    /// renewal grace unless it renews.
    public func tokenExpired(_ userID: String) {
        apply(state.tokenExpired(userID: userID, now: loop.now))
    }

    /// Notes that the token of `userID` expires at `expiry`, and arms its warning: the renewal grace before it, or
    /// at once when less is left.
    private func noteTokenExpiry(_ expiry: RuntimeInstant, of userID: String) {
        tokenExpiries[userID] = expiry
        let warning = max(loop.now, expiry.advanced(by: .zero - server.timings.tokenRenewalGrace))
        at(warning) { room in room.tokenExpiryNear(userID, expiry) }
    }

    /// A verified token's warning is due: the member is told the time left and removed at the expiry unless it
    /// renews — if it is still a member, and its token is still the one the warning was armed for.
    private func tokenExpiryNear(_ userID: String, _ expiry: RuntimeInstant) {
        guard tokenExpiries[userID] == expiry else { return }
        guard state.member(userID) != nil else {
            tokenExpiries[userID] = nil
            return
        }
        apply(state.tokenExpiring(userID: userID, at: expiry, now: loop.now))
    }

    private func apply(_ effects: [ServerRoomState.Effect]) {
        for effect in effects {
            switch effect {
            case .announce(let announcement):
                server.cluster?.announce(announcement, in: self)
            case .release:
                server.cluster?.release(self)
            case .membership(let change):
                server.membershipObserver?.membershipChanged(
                    change,
                    inRoom: roomID,
                    roomSessionID: state.roomSessionID,
                    at: loop.now
                )
            case .countFalseDepartures(let count):
                let now = loop.now
                node?.withLock { node in
                    for _ in 0..<count { node.falseDeparture(at: now) }
                }
            case .send(let message, let channel):
                channel.send(message, from: self)
            case .armDeadline(let deadline):
                at(deadline) { room in room.deadlinePassed() }
            case .armTokenDeadline(let userID, let deadline):
                at(deadline) { room in room.apply(room.state.tokenDeadlinePassed(userID: userID, now: room.loop.now)) }
            case .armFlush(let deadline):
                at(deadline) { room in room.apply(room.state.flushUpdates(now: room.loop.now)) }
            }
        }
    }

    /// The room's deadline timer fired: members silent for the whole timeout go.
    private func deadlinePassed() {
        apply(state.deadlinePassed(now: loop.now))
    }

    /// Runs `body` on this room at `deadline`. A timer that cannot be armed (the loop shut down) is dropped: the
    /// run is over.
    private func at(_ deadline: RuntimeInstant, _ body: @escaping @Sendable (isolated ServerRoom) -> Void) {
        _ = try? loop.schedule(at: deadline) { [self] in onLoop { body($0) } }
    }
}
