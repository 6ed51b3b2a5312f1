/// The rules on a join's episodes, whatever the dialect: `lost` (a connection is lost only for a cause the scenario
/// made), `back` (a user reconnecting when its network comes back is back soon after), `end` (a kick, another device's
/// login or a token's expiry ends a join only when the scenario did it) and `heard` (a user hears of its peers only
/// while in the room).
extension LogStructure {
    /// Whether nothing about a user's connection is certain on this scenario's network and server: loss takes any
    /// message, a partition cuts rooms off, and a modelled server may be too busy to answer.
    var isUncertain: Bool {
        scenario.network.loss > 0 || !partitionedRooms().isEmpty || scenario.server.isModelled
    }

    /// The devices that share `device`'s user ID, itself included: what the server does by user ID reaches each.
    func siblings(of device: String) -> [String] {
        devices[userIDs[device] ?? device] ?? [device]
    }

    /// The times of the timeline's entries of `action`'s kind for any of `targets`.
    func entries(of targets: [String], where matches: (Scenario.Action) -> Bool) -> [Double] {
        scenario.timeline.compactMap { entry in
            guard case .user(let user) = entry.target, targets.contains(user), matches(entry.action) else { return nil }
            return entry.at.milliseconds
        }
    }

    // MARK: - lost

    /// `lost`: a joined room's connection is lost only near a cause — an outage of the user's (from its start until
    /// the client can have noticed it), a network change, or a reconnection the server asked of any device of the
    /// user.
    func losses() -> [Violation] {
        // A network whose round trip outlasts an attempt's timeout outlasts a heartbeat's answer too.
        guard !isUncertain, answersFirstAttempts else { return [] }
        var found: [Violation] = []
        for (device, deviceEvents) in byUser {
            let changes = entries(of: [device]) { $0 == .networkChange }
            let requests = entries(of: siblings(of: device)) {
                if case .requestReconnect = $0 { true } else { false }
            }
            var previous: [String: LoggedEvent] = [:]
            for event in deviceEvents where dialect.isState(event) {
                let room = event.room ?? ""
                defer { previous[room] = event }
                guard dialect.isLost(event), let last = previous[room], dialect.isIn(last) else { continue }
                let time = event.time
                // A link that goes down is noticed at once where the system says so; a silent one, or one only the
                // data watch notices, within the notice time.
                let caused =
                    outages.contains {
                        let notice = !$0.silent && dialect.noticesDownAtOnce ? 0 : dialect.noticeWithin
                        return $0.user == device && $0.start - tolerance <= time
                            && time <= min($0.start + notice, $0.end + dialect.noticeWithin) + tolerance
                    } || (changes + requests).contains { $0 - tolerance <= time && time <= $0 + tolerance }
                if !caused {
                    found.append(
                        violation(
                            "lost",
                            event,
                            "\(event.type) reports the connection lost with no outage or change near it"
                        )
                    )
                }
            }
        }
        return found
    }

    // MARK: - back

    /// `back`: a user still reconnecting when its network comes back tries again at once, and is back (or its join
    /// ends) within an attempt's timeout — on a network that answers a first attempt in time, with nothing else of
    /// the user's happening meanwhile; and no user is back in a room while its network carries nothing (an answer
    /// already on its way as the outage began aside).
    func returns() -> [Violation] {
        guard !isUncertain, answersFirstAttempts else { return [] }
        var found: [Violation] = []
        let roundTrip = ((scenario.network.latency + scenario.network.jitter) * 2).milliseconds
        for outage in outages {
            for event in byUser[outage.user, default: []] where dialect.isIn(event) {
                guard event.time > outage.start + roundTrip + dialect.loginProcessing + tolerance,
                    event.time < outage.end
                else { continue }
                found.append(
                    violation("back", event, "\(event.type) back in the room while its network carries nothing")
                )
            }
        }
        let end = scenario.end.milliseconds
        for outage in outages where outage.end < end {
            let due = outage.end + dialect.attemptTimeout + tolerance
            // Another fault, call or server action of the user's meanwhile (but the return itself) changes what comes
            // next.
            let meanwhile = scenario.timeline.contains { entry in
                guard case .user(let user) = entry.target, siblings(of: outage.user).contains(user) else {
                    return false
                }
                let time = entry.at.milliseconds
                if user == outage.user, time == outage.end, entry.action == .networkUp { return false }
                return time >= outage.end - tolerance && time <= due
            }
            guard due <= end, !meanwhile else { continue }
            let states = byUser[outage.user, default: []].filter(dialect.isState)
            for room in Set(states.compactMap(\.room)).sorted() {
                let inRoom = states.filter { $0.room == room }
                guard let last = inRoom.last(where: { $0.time <= outage.end }), !dialect.isIn(last),
                    !dialect.isEnd(last), !dialect.isStart(last)
                else { continue }
                let answered = inRoom.contains {
                    $0.time > outage.end && $0.time <= due && (dialect.isIn($0) || dialect.isEnd($0))
                }
                if !answered {
                    found.append(
                        Violation(
                            rule: "back",
                            time: due,
                            user: outage.user,
                            room: room,
                            message:
                                "still reconnecting at \(due) ms, though its network came back at \(outage.end) ms"
                        )
                    )
                }
            }
        }
        return found
    }

    // MARK: - giveUp

    /// `giveUp`: a reconnection is over — back, or given up — by the dialect's retry timeout after it began (when
    /// the log lasts that long).
    func giveUps() -> [Violation] {
        guard let limit = dialect.retryTimeout else { return [] }
        var found: [Violation] = []
        let end = scenario.end.milliseconds
        for (_, deviceEvents) in byUser {
            var previous: [String: LoggedEvent] = [:]
            var began: [String: LoggedEvent] = [:]
            for event in deviceEvents where dialect.isState(event) {
                let room = event.room ?? ""
                defer { previous[room] = event }
                if dialect.isLost(event), let last = previous[room], dialect.isIn(last) { began[room] = event }
                if dialect.isIn(event) || dialect.isEnd(event) || dialect.isStart(event) { began[room] = nil }
            }
            for (_, start) in began where start.time + limit + tolerance < end {
                found.append(
                    violation(
                        "giveUp",
                        start,
                        "a reconnection from \(start.time) ms neither back nor given up by its retry timeout"
                    )
                )
            }
        }
        return found
    }

    // MARK: - end

    /// `end`: a join ends by a kick, by another device's login or by the token's expiry only if the scenario did
    /// that to the user — a kick of any of its devices, a login of another device of its ID into the room, an
    /// expiry of its token the renewal grace earlier or before.
    func ends() -> [Violation] {
        var found: [Violation] = []
        for event in events {
            guard let causes = dialect.endCauses(event), !causes.isEmpty else { continue }
            let time = event.time
            let family = siblings(of: event.user)
            var possible: [EndCause] = []
            if causes.contains(.kick),
                !entries(
                    of: family,
                    where: { action in
                        if case .kick(let room) = action { room == nil || room == event.room } else { false }
                    }
                ).filter({ $0 <= time + tolerance }).isEmpty
            {
                possible.append(.kick)
            }
            if causes.contains(.duplicateLogin),
                family.contains(where: { other in
                    other != event.user
                        && byUser[other, default: []].contains {
                            $0.room == event.room && dialect.isStart($0) && $0.time <= time + tolerance
                        }
                })
            {
                possible.append(.duplicateLogin)
            }
            let expiries = entries(of: family, where: { $0 == .expireToken })
            if causes.contains(.tokenExpiry), expiries.contains(where: { $0 <= time - dialect.tokenGrace + tolerance })
            {
                possible.append(.tokenExpiry)
            }
            if causes.contains(.tokenRefused), expiries.contains(where: { $0 <= time + tolerance }) {
                possible.append(.tokenRefused)
            }
            if causes.contains(.badToken),
                scenario.auth != nil || expiries.contains(where: { $0 <= time + tolerance })
            {
                possible.append(.badToken)
            }
            if causes.contains(.refusedJoin),
                scenario.users.contains(where: { $0.maxMemberCount != nil })
                    || calls[event.user, default: []].contains(where: { call in
                        if case .login = call.kind { abs(call.time - time) <= tolerance } else { false }
                    })
            {
                possible.append(.refusedJoin)
            }
            if possible.isEmpty {
                let said = causes.map { "\($0)" }.sorted().joined(separator: " or ")
                found.append(
                    violation("end", event, "\(event.type) ends the join by \(said), which the scenario never did")
                )
            }
        }
        return found
    }

    // MARK: - duplicate

    /// `duplicate`: a device of a user that joins a room (its first success there since it started joining) ends,
    /// at once, the join of every other device of the user that is in the room, undisturbed — the newer login wins,
    /// with the dialect's duplicate-login end.
    func duplicates() -> [Violation] {
        guard !isUncertain else { return [] }
        var found: [Violation] = []
        for (userID, names) in devices where names.count > 1 {
            _ = userID
            for newer in names {
                let states = byUser[newer, default: []].filter(dialect.isState)
                for (index, state) in states.enumerated() where dialect.isIn(state) {
                    // A first success: the state before it in the room is the start of the join.
                    guard let before = states[..<index].last(where: { $0.room == state.room }), dialect.isStart(before)
                    else { continue }
                    let time = state.time
                    for older in names where older != newer {
                        let olderStates = byUser[older, default: []].filter {
                            dialect.isState($0) && $0.room == state.room
                        }
                        guard let current = olderStates.last(where: { $0.time < before.time }), dialect.isIn(current),
                            !olderStates.contains(where: { $0.time >= before.time && $0.time < time - tolerance }),
                            disturbances(of: older, in: state.room ?? "", states: olderStates).allSatisfy({
                                $0.to < before.time - tolerance || $0.from > time + tolerance
                            })
                        else { continue }
                        // Kicked as the older login, or gone meanwhile of its own accord.
                        let ended = byUser[older, default: []].contains {
                            $0.room == state.room && $0.time >= before.time && $0.time <= time + tolerance
                                && dialect.isEnd($0)
                        }
                        if !ended {
                            found.append(
                                Violation(
                                    rule: "duplicate",
                                    time: time,
                                    user: older,
                                    room: state.room,
                                    message: "still in the room after \(newer), the same user, joined it at \(time) ms"
                                )
                            )
                        }
                    }
                }
            }
        }
        return found
    }

    // MARK: - heard

    /// `heard`: a user hears of its peers only while in the room — its last state there (at that instant or before)
    /// has it in, or changes at that very instant (a join's answer and its list come together; LiveKit's full
    /// reconnection reports every peer gone as it starts).
    func heardWhileIn() -> [Violation] {
        var found: [Violation] = []
        for (_, deviceEvents) in byUser {
            var last: [String: LoggedEvent] = [:]
            for event in deviceEvents {
                let room = event.room ?? ""
                if dialect.isState(event) {
                    last[room] = event
                    continue
                }
                guard dialect.presence(event) != nil else { continue }
                guard let state = last[room] else {
                    found.append(violation("heard", event, "\(event.type) before the user started joining the room"))
                    continue
                }
                if !dialect.isIn(state), state.time != event.time {
                    found.append(violation("heard", event, "\(event.type) while the user is not in the room"))
                }
            }
        }
        return found
    }
}
