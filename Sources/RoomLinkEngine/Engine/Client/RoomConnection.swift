/// One room of a client as a plain value: its phase, its session, its join or reconnection episode, and the peers
/// it knows. ``RoomClientState`` holds one per room and drives it; tests can drive it alone. It speaks in
/// ``RoomTransition``s, which the client's dialect turns into vendor callbacks.
///
/// Phases: `joining` (a first join: attempts until the login timeout), `joined`, `reconnecting` (attempts until the
/// retry timeout or the policy's last attempt). A room that gives up, is refused, kicked or left is removed by its
/// client.
public struct RoomConnection: Sendable {
    /// Where the room's connection is.
    public enum Phase: Sendable, Hashable {
        case joining, joined, reconnecting
    }

    /// What to do after an attempt failed.
    public enum NextAttempt: Sendable, Equatable {
        /// Try again after this delay.
        case retry(after: Duration)
        /// The policy allows no attempt before the episode's deadline: wait for it.
        case awaitDeadline
        /// The policy's attempts are used up: give up now.
        case giveUp
    }

    // The layout packs a million clients' rooms, 144 bytes each (it was 192): the one-byte fields fill the five bytes
    // `options` leaves before the next word (a field starts at its predecessor's size, not its stride), then the
    // words, and last the optional instant, whose tag's word holds the timer's kind, the token step and the attempt.
    public let roomID: String
    public internal(set) var options: JoinOptions
    public internal(set) var phase: Phase
    /// How the current reconnection episode reconnects (dialects with reconnect modes).
    public internal(set) var mode: ReconnectMode = .quick
    /// Whether the next attempt must start a new session (the server could not resume this one).
    var fullOnNext = false
    /// Whether the ``RoomTransition/stillLost`` notice of the current reconnection episode is armed.
    public internal(set) var noticeArmed = false
    /// Whether a login request is waiting for its answer.
    var attemptInFlight = false
    public internal(set) var session: SessionID
    /// When the current join or reconnection episode began.
    public internal(set) var episodeStart: RuntimeInstant
    /// When the client last heard from the room's server.
    public internal(set) var lastHeard: RuntimeInstant
    /// The peers the client has reported present (sorted), when it hears of peers.
    public var peers: [String] { peerNames.names }
    /// ``peers`` as the room keeps them: a word a name while every name is short (`PeerNames`).
    private var peerNames = PeerNames()
    /// The retry iterator of the current episode, boxed: 120 bytes that a joined room does not need inline.
    private var episodeRetry: RetryBox?

    /// The retry iterator on the heap, so that an absent one costs a pointer; changed in place while one room
    /// holds it, copied first when a copy of the room shares it. (An indirect enum, immutable, took a new allocation
    /// of 136 bytes on every attempt that failed: five a client as a storm's clients retry into a dead link.)
    private final class RetryBox: @unchecked Sendable {
        // Safe: `value` is written only by `RoomConnection.modifyRetry`, after `isKnownUniquelyReferenced` showed that
        // no other room value — on this thread or another — holds the box, and otherwise into a fresh copy: the
        // copy-on-write that makes the standard library's collections Sendable. Reads of a shared box never race
        // with a write, since a shared box is never written.
        var value: RetryPolicy.Iterator

        init(_ value: RetryPolicy.Iterator) {
            self.value = value
        }
    }

    /// Runs `body` on the episode's retry iterator in place (copied first if another room value shares it); `nil`
    /// without an episode.
    private mutating func modifyRetry<Result>(_ body: (inout RetryPolicy.Iterator) -> Result) -> Result? {
        guard episodeRetry != nil else { return nil }
        if !isKnownUniquelyReferenced(&episodeRetry!) { episodeRetry = RetryBox(episodeRetry!.value) }
        return body(&episodeRetry!.value)
    }

    /// When the latest attempt was sent.
    var attemptSentAt = RuntimeInstant.zero
    /// What the client driving the room keeps with it; the room's decisions never read it.
    public var attachment = Attachment()
    /// When the current join or reconnection episode gives up; `nil` once joined.
    public internal(set) var episodeDeadline: RuntimeInstant?
    /// What the room's one timer is armed for (``timer``), in a byte: its attempt or session is the room's own.
    private var timerKind: TimerKind?
    /// Where the room stands with its token, when its client fetches tokens (``TokenSource``): in a byte the
    /// attempt's alignment leaves after the timer's kind.
    var tokenStep = TokenStep.settled
    /// Counts attempts, so that a timer of an earlier attempt, or a server's late answer to one, is ignored.
    var attempt: UInt32 = 0

    /// What a client keeps with each of its rooms beside the room's state: the room's channel as the transport
    /// opened it, and the room's timers. Kept in the room's value rather than in a table of the client's own: a
    /// heartbeat reads it, and a second table would cost every heartbeat of a million clients one more cold cache
    /// line (+13 % wall time and +147 B per client on the 1M storm, measured: BENCHMARKS.md).
    public struct Attachment: Sendable {
        /// The room's channel, opened at its first login attempt (and again at the next while there is none).
        var channel: (any RoomChannel)?
        /// The room's one timer (``RoomConnection/timer``).
        var timer: TimerHandle? {
            get { TimerHandle(packed: timerBits) }
            set { timerBits = TimerHandle.packed(newValue) }
        }
        /// The ``RoomTransition/stillLost`` notice.
        var notice: TimerHandle? {
            get { TimerHandle(packed: noticeBits) }
            set { noticeBits = TimerHandle.packed(newValue) }
        }
        // The two handles as words (`TimerHandle.packed`): 32 bytes, where two optionals took 48.
        private var timerBits: UInt64 = 0
        private var noticeBits: UInt64 = 0

        /// An empty attachment.
        public init() {}
    }

    /// What the room's one timer is armed for, if it is: during an episode the answer timeout or the wait before the
    /// next attempt (never later than the episode's deadline, where it gives up); for a joined room, the silence
    /// that follows a cut path. One timer, not two, per room that is trying. A timer is armed for the room's current
    /// attempt and session, which it names.
    public internal(set) var timer: Timer? {
        get {
            switch timerKind {
            case nil: nil
            case .answer: .answer(attempt: attempt)
            case .nextAttempt: .nextAttempt(after: attempt)
            case .routeSilence: .routeSilence(session)
            }
        }
        set {
            switch newValue {
            case nil: timerKind = nil
            case .answer: timerKind = .answer
            case .nextAttempt: timerKind = .nextAttempt
            case .routeSilence: timerKind = .routeSilence
            }
        }
    }

    private enum TimerKind: UInt8 {
        case answer, nextAttempt, routeSilence
    }

    /// What a room's one timer is armed for. An episode's timers carry the attempt they belong to, so that one
    /// firing after its attempt was answered (or after the next began) is recognised and ignored.
    public enum Timer: Sendable, Hashable {
        /// The answer to attempt `tag` is due: without one, the attempt failed.
        case answer(attempt: UInt32)
        /// The wait after attempt `tag` failed is over: the next attempt goes out.
        case nextAttempt(after: UInt32)
        /// The path to a joined room was cut: its data is silent, and when this fires the connection of `session`
        /// is lost (dialects that watch their data).
        case routeSilence(SessionID)
    }

    /// A room starting its first join at `now`, whose first attempt (never delayed) goes out at once.
    public init(
        roomID: String,
        options: JoinOptions,
        session: SessionID,
        now: RuntimeInstant,
        retry: RetryPolicy.Iterator
    ) {
        self.roomID = roomID
        self.options = options
        self.session = session
        self.phase = .joining
        self.episodeStart = now
        self.lastHeard = now
        var retry = retry
        _ = retry.next(elapsed: .zero)
        self.episodeRetry = RetryBox(retry)
    }

    /// The connection was lost. A joined room starts reconnecting — its first attempt goes out at once — and
    /// returns `true`; one already trying returns `false` (its attempt in flight has failed).
    public mutating func connectionLost(at now: RuntimeInstant, retry newRetry: RetryPolicy.Iterator) -> Bool {
        guard phase == .joined else { return false }
        phase = .reconnecting
        episodeStart = now
        mode = .quick
        fullOnNext = false
        var retry = newRetry
        _ = retry.next(elapsed: .zero)
        episodeRetry = RetryBox(retry)
        return true
    }

    /// The renewal's fetch failed at `now`: how long until the next, by the client's retry policy — counted from
    /// the first failure of this renewal, whose iterator the joined room keeps (it keeps none of its own) — or `nil`
    /// when the policy allows no more (the token then runs out).
    mutating func renewalFailed(at now: RuntimeInstant, retry newRetry: RetryPolicy.Iterator) -> Duration? {
        guard phase == .joined else { return nil }
        if episodeRetry == nil {
            var retry = newRetry
            _ = retry.next(elapsed: .zero)
            episodeRetry = RetryBox(retry)
            episodeStart = now
        }
        let elapsed = episodeStart.duration(to: now)
        return modifyRetry { $0.next(elapsed: elapsed) } ?? nil
    }

    /// The renewal is done (or given up): the joined room forgets its retries.
    mutating func renewalEnded() {
        if phase == .joined { episodeRetry = nil }
    }

    /// Attempts the current episode has started, the first included.
    public var attemptsMade: Int { episodeRetry?.value.attempts ?? 0 }

    /// Whether the next attempt of a reconnection in modes must be a full one: the server could not resume the
    /// session, or this is the policy's last attempt.
    func isFullReconnectionDue(maxAttempts: Int?) -> Bool {
        guard phase == .reconnecting, mode == .quick else { return false }
        let isLast = maxAttempts.map { attemptsMade >= $0 } ?? false
        return fullOnNext || isLast
    }

    /// Switches the reconnection to full mode with the new `session`, and returns the peers the client forgets.
    mutating func switchToFull(session: SessionID) -> [String] {
        mode = .full
        self.session = session
        let forgotten = peers
        peerNames = PeerNames()
        return forgotten
    }

    /// Whether a server's answer to attempt `number` answers the attempt in flight (not one the client gave up on).
    func isAnswer(to number: UInt32) -> Bool {
        attemptInFlight && attempt == number
    }

    /// An attempt failed at `now` (refused, unanswered, busy, or its connection dropped): when to try again — the
    /// policy's delay, and at least `notBefore` when the server asked for it.
    public mutating func attemptFailed(
        at now: RuntimeInstant,
        maxAttempts: Int?,
        notBefore: Duration? = nil
    ) -> NextAttempt {
        attemptInFlight = false
        let elapsed = episodeStart.duration(to: now)
        let next = modifyRetry { retry -> NextAttempt in
            // `maxAttempts` may be tighter than the policy's own limit (a dialect's first join).
            if let maxAttempts, retry.attempts >= maxAttempts { return .giveUp }
            if let delay = retry.next(elapsed: elapsed) {
                return .retry(after: notBefore.map { max($0, delay) } ?? delay)
            }
            return .awaitDeadline
        }
        return next ?? .awaitDeadline  // no episode: nothing to retry
    }

    /// The server accepted the join or reconnection: the transitions to report, the peers last.
    ///
    /// A first join reports `present` as one `add`; a reconnection reports the difference between the peers it
    /// knew and `present` (what changed while it was away), departures first.
    public mutating func accepted(
        roomSessionID: String,
        present: [String],
        at now: RuntimeInstant
    )
        -> [RoomTransition]
    {
        let wasReconnecting = phase == .reconnecting
        phase = .joined
        episodeRetry = nil
        episodeDeadline = nil
        lastHeard = now
        attemptInFlight = false
        fullOnNext = false
        var transitions: [RoomTransition] = [wasReconnecting ? .rejoined(mode) : .joined(roomSessionID: roomSessionID)]
        guard options.notifiesPeers else { return transitions }
        if peerNames.isEmpty {
            // A first join (or a full reconnection): everyone present is new, and no sets need building.
            if !present.isEmpty { transitions.append(.peersChanged(.add, users: present, reason: nil)) }
            peerNames = PeerNames(present)
            return transitions
        }
        let (gone, new) = peerNames.changes(to: present)
        if !gone.isEmpty { transitions.append(.peersChanged(.delete, users: gone, reason: .dropped)) }
        if !new.isEmpty { transitions.append(.peersChanged(.add, users: new, reason: nil)) }
        peerNames = PeerNames(present)
        return transitions
    }

    /// Peers joined or left: the transition to report, if the room hears of peers.
    public mutating func userUpdate(
        _ change: PresenceChange,
        users: [String],
        reason: DepartureReason?
    )
        -> RoomTransition?
    {
        guard options.notifiesPeers, !users.isEmpty else { return nil }
        // The names stay sorted: a binary search per user, not a sort per update (rooms have hundreds of members).
        // What the client already knew is no change to report: a peer the list of its login answer named, and a
        // batch sent before that answer also names (a login repeated while the first was answered).
        var unchanged: [Int] = []
        for (index, user) in users.enumerated() {
            let changed =
                switch change {
                case .add: peerNames.insert(user)
                case .delete: peerNames.remove(user)
                }
            if !changed { unchanged.append(index) }
        }
        guard unchanged.count < users.count else { return nil }
        let reported =
            unchanged.isEmpty ? users : users.enumerated().filter { !unchanged.contains($0.offset) }.map(\.element)
        return .peersChanged(change, users: reported, reason: change == .delete ? reason : nil)
    }

    /// Whether a joined room's server has been silent for `timeout` at `now`: the connection is lost.
    public func isSilent(at now: RuntimeInstant, timeout: Duration) -> Bool {
        phase == .joined && lastHeard.duration(to: now) >= timeout
    }

    /// Heard from the server.
    mutating func heard(at now: RuntimeInstant) {
        lastHeard = now
    }
}
