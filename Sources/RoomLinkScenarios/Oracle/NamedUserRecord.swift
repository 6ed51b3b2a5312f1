/// What an oracle keeps of a scenario's named users for the rules that need the whole log — their events, and when
/// each was in each room — and the presence rule that Agora and LiveKit share.
struct NamedUserRecord: Sendable {
    struct Key: Hashable, Sendable {
        var user: String
        var room: String
    }

    /// How a dialect's peers see a user whose network failed.
    struct PresenceRule {
        /// The server drops a silent member this long after it last heard it (ms).
        var timeout: Double
        /// How much sooner than `timeout` after the outage began the drop may come (ms): a silent user was last
        /// heard up to one heartbeat before its outage.
        var earlier: (Scenario.Outage) -> Double
        /// Whether `event` (a peer's) reports `userID` leaving.
        var departs: (LoggedEvent, String) -> Bool
        /// Whether `event` (a peer's) reports `userID` arriving.
        var arrives: (LoggedEvent, String) -> Bool
        /// Whether `event` (the user's own) marks it back in the room.
        var isBack: (LoggedEvent) -> Bool
        /// Whether `event` (the user's own) is a state of its join, and whether that state has it in the room: a
        /// user already reconnecting when an outage begins may not be in the server's room to be dropped.
        var state: (LoggedEvent) -> (isState: Bool, isIn: Bool)
        /// The departure's name in messages.
        var departureName: String
        /// Whether `event` (a peer's own) starts its view of the room over, reporting every other member gone at
        /// that instant (LiveKit's full reconnection): those departures are the peer's, not the user's.
        var resetsView: (LoggedEvent) -> Bool = { _ in false }
    }

    let names: Set<String>
    private(set) var events: [LoggedEvent] = []
    /// When each named (user, room) was in the room: from its join to its end.
    private var stays: [Key: [(from: Double, to: Double)]] = [:]

    init(scenario: Scenario) {
        names = Set(scenario.users.map(\.id))
    }

    /// Whether `user` is a named user (free in a population run without any).
    func isNamed(_ user: String) -> Bool { names.containsNamed(user) }

    mutating func keep(_ event: LoggedEvent) { events.append(event) }

    /// A named user entered `room` at `time`.
    mutating func entered(_ user: String, room: String, at time: Double) {
        stays[Key(user: user, room: room), default: []].append((time, .infinity))
    }

    /// A named user's stay in `room` ended at `time`.
    mutating func left(_ user: String, room: String, at time: Double) {
        let key = Key(user: user, room: room)
        guard let last = stays[key]?.indices.last, stays[key]![last].to == .infinity else { return }
        stays[key]![last].to = time
    }

    /// Whether `user` was in `room` from `from` and still at `through`.
    func wasIn(_ user: String, room: String, from: Double, through: Double) -> Bool {
        stays[Key(user: user, room: room)]?.contains { $0.from <= from && $0.to > through } ?? false
    }

    /// The rooms `user` was in at `time`.
    func rooms(of user: String, at time: Double) -> [String] {
        stays.compactMap { key, spans in
            key.user == user && spans.contains { $0.from <= time && $0.to > time } ? key.room : nil
        }.sorted()
    }

    /// The named users other than `user` in `room` from `from` through `through`.
    func others(of user: String, in room: String, from: Double, through: Double) -> [String] {
        stays.keys.filter { $0.room == room && $0.user != user }.map(\.user).sorted().filter {
            wasIn($0, room: room, from: from, through: through)
        }
    }

    /// `user`'s events in `room` that satisfy `matches`.
    func events(of user: String, in room: String, where matches: (LoggedEvent) -> Bool) -> [LoggedEvent] {
        events.filter { $0.user == user && $0.room == room && matches($0) }
    }

    /// The presence rule over the scenario's outages of named users: a peer sees the user leave only if the outage
    /// outlasted the server's timeout, and then at about that time; and sees it arrive when the user is back.
    func presenceViolations(_ rule: PresenceRule, scenario: Scenario, slack: Double) -> [Violation] {
        // On a lossy network a member may be dropped at any time, and a peer's update may be lost: no timing is
        // certain.
        guard scenario.network.loss == 0 else { return [] }
        var found: [Violation] = []
        let userIDs = Dictionary(uniqueKeysWithValues: scenario.users.map { ($0.id, $0.userID) })
        let outages = scenario.namedOutages()
        for outage in outages {
            // A user with a second device may stay in the room through the other: no departure is certain.
            guard let userID = userIDs[outage.user], !scenario.hasOtherDevices(outage.user) else { continue }
            let earliest = outage.start + rule.timeout - rule.earlier(outage)
            let latest = outage.start + rule.timeout
            // A kick or a token expiry during the outage removes the user at the server's own time, not the timeout.
            let removals = scenario.serverRemovals(of: outage.user).filter { $0.time <= latest + slack }
            for room in rooms(of: outage.user, at: outage.start) {
                let states = events(of: outage.user, in: room) { rule.state($0).isState && $0.time < outage.start }
                guard let last = states.last, rule.state(last).isIn else { continue }
                // The peer is still in the room when the departure, due at `latest`, could reach it.
                for peer in others(of: outage.user, in: room, from: outage.start, through: latest + slack) {
                    let resets = Set(events(of: peer, in: room, where: rule.resetsView).map(\.time))
                    let gone = events(of: peer, in: room) {
                        rule.departs($0, userID) && $0.time >= outage.start && $0.time <= outage.end + slack
                            && !resets.contains($0.time)
                    }
                    // Short: back before the server could have dropped the user, and before the log ends (an outage
                    // the end cuts short lasted longer).
                    if outage.end < scenario.end.milliseconds, outage.length < earliest - outage.start - slack {
                        // A departure the user's own end explains (a leave after the outage) is not the outage's.
                        // Nor one a call or a server action of the user's after the outage began explains (LiveKit's
                        // full reconnection, which the server asked for, is a new participant).
                        let ended = stays[Key(user: outage.user, room: room), default: []].map(\.to)
                        let acted = scenario.timeline.compactMap { entry -> Double? in
                            guard case .user(outage.user) = entry.target else { return nil }
                            switch entry.action {
                            case .networkDown, .networkUp, .blackhole: return nil
                            default: return entry.at.milliseconds
                            }
                        }
                        for event in gone
                        where !removals.contains(where: { $0.time <= event.time + slack })
                            && !ended.contains(where: { $0 >= event.time - slack && $0 <= event.time })
                            && !acted.contains(where: { $0 >= outage.start - slack && $0 <= event.time })
                        {
                            found.append(
                                Violation(
                                    rule: "presence",
                                    time: event.time,
                                    user: peer,
                                    room: room,
                                    message:
                                        "saw \(userID) leave after an outage of \(outage.length) ms, under the server's timeout"
                                )
                            )
                        }
                        continue
                    }
                    guard outage.length > rule.timeout + slack, !scenario.restartsServerClock(during: outage) else {
                        continue
                    }
                    // A peer whose own network is down meanwhile cannot be told, nor one not steadily in the room
                    // (reconnecting, it hears of no one).
                    guard !Scenario.isCutOff(peer, from: outage.start, through: latest + slack, in: outages) else {
                        continue
                    }
                    let peerStates = events(of: peer, in: room) { rule.state($0).isState && $0.time <= latest + slack }
                    guard let steady = peerStates.last(where: { $0.time <= outage.start }), rule.state(steady).isIn,
                        !peerStates.contains(where: { $0.time > outage.start })
                    else { continue }
                    // A kick or an expiry removes the user at the server's own time; the peer's own full
                    // reconnection meanwhile reports every other member gone at once (and the user, dropped, is not
                    // among those it finds again).
                    let removedEarlier =
                        removals.contains { $0.open || $0.time >= outage.start - slack }
                        || resets.contains { $0 >= outage.start && $0 <= latest + slack }
                    guard
                        removedEarlier
                            || gone.contains(where: { $0.time >= earliest - slack && $0.time <= latest + slack })
                    else {
                        found.append(
                            Violation(
                                rule: "presence",
                                time: latest,
                                user: peer,
                                room: room,
                                message: "expected \(rule.departureName)(\(userID)) by \(latest) ms"
                            )
                        )
                        continue
                    }
                    guard
                        let back = events(
                            of: outage.user,
                            in: room,
                            where: { rule.isBack($0) && $0.time >= outage.end }
                        ).first,
                        wasIn(peer, room: room, from: outage.start, through: back.time + slack),
                        // The log ends before the peer could be told.
                        back.time + slack <= scenario.end.milliseconds,
                        // A peer whose own network is down when the user is back cannot be told.
                        !Scenario.isCutOff(peer, from: back.time, through: back.time + slack, in: outages)
                    else { continue }
                    // From when the network came back: the server may admit an attempt whose answer the user
                    // ignores (it had timed out), and see it in long before it says it is back.
                    let arrived = !events(of: peer, in: room) {
                        rule.arrives($0, userID) && $0.time >= outage.end && $0.time <= back.time + slack
                    }.isEmpty
                    if !arrived {
                        found.append(
                            Violation(
                                rule: "rejoin",
                                time: back.time,
                                user: peer,
                                room: room,
                                message:
                                    "\(userID) was back at \(back.time) ms after leaving, but \(peer) did not see it arrive"
                            )
                        )
                    }
                }
            }
        }
        return found
    }
}
