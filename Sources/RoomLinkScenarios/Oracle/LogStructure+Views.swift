/// The rules on what users are told of their peers: `view` (each change consistent, with a cause near it) and `told`
/// (the view agrees with the peers' own logs wherever both are certain).
extension LogStructure {
    // MARK: - view

    /// `view` and `peer`: each user's view of each room changes consistently, each change near a cause.
    func views() -> [Violation] {
        var found: [Violation] = []
        // First starts of each device in each room; a peer (a user ID) started when the first of its devices did.
        var firstStart: [String: Double] = [:]
        for event in events where dialect.isStart(event) {
            let key = "\(event.user)\u{0}\(event.room ?? "")"
            if firstStart[key] == nil { firstStart[key] = event.time }
        }
        func started(_ peer: String, _ room: String?) -> Double {
            devices[peer, default: []].compactMap { firstStart["\($0)\u{0}\(room ?? "")"] }.min() ?? .infinity
        }
        let knownIDs = Set(userIDs.keys).union(devices.keys)
        var states: [String: [Double]] = [:]  // own state times by device and room
        for event in events where dialect.isState(event) {
            states["\(event.user)\u{0}\(event.room ?? "")", default: []].append(event.time)
        }
        func stateNear(_ device: String, _ room: String?, _ time: Double) -> Bool {
            states["\(device)\u{0}\(room ?? "")"]?.contains { abs($0 - time) <= tolerance } ?? false
        }
        // A join that ended on the client's side (it failed, gave up, lost its connection) may stay on the server
        // until the server's own timeout: its peers then see it leave up to `lingers` later.
        var ends: [String: [Double]] = [:]
        for event in events where dialect.isEnd(event) {
            ends["\(event.user)\u{0}\(event.room ?? "")", default: []].append(event.time)
        }
        func endedLately(_ device: String, _ room: String?, _ time: Double) -> Bool {
            ends["\(device)\u{0}\(room ?? "")"]?.contains {
                $0 <= time + tolerance && time <= $0 + dialect.lingers + tolerance
            } ?? false
        }
        // A device still trying — joining or reconnecting: its last state there neither in the room nor an end —
        // may be admitted by the server at any attempt, with nothing in its own log until the answer arrives, if it
        // does (a network that loses it, or outlasts the attempt's timeout).
        var lastStates: [String: [LoggedEvent]] = [:]
        for event in events where dialect.isState(event) {
            lastStates["\(event.user)\u{0}\(event.room ?? "")", default: []].append(event)
        }
        func isJoining(_ device: String, _ room: String?, _ time: Double) -> Bool {
            guard let states = lastStates["\(device)\u{0}\(room ?? "")"],
                let last = states.last(where: { $0.time <= time })
            else { return false }
            return !dialect.isIn(last) && !dialect.isEnd(last)
        }
        var views: [String: Set<String>] = [:]
        for event in events {
            let key = "\(event.user)\u{0}\(event.room ?? "")"
            if dialect.isStart(event) {
                views[key] = []
                continue
            }
            guard let (peers, joined) = dialect.presence(event) else { continue }
            if peers.isEmpty { found.append(violation("peer", event, "\(event.type) names no peer")) }
            for peer in peers where scenario.population == nil && !knownIDs.contains(peer) {
                found.append(violation("peer", event, "\(event.type) names \(peer), who is not a user of the scenario"))
            }
            for peer in peers {
                let peerDevices = devices[peer, default: []]
                if joined {
                    if views[key, default: []].contains(peer) {
                        found.append(
                            violation("view", event, "told \(peer) joined, but \(peer) was already in its view")
                        )
                    }
                    views[key, default: []].insert(peer)
                    if !peerDevices.isEmpty, started(peer, event.room) > event.time + tolerance {
                        found.append(
                            violation("view", event, "told \(peer) joined before \(peer) started joining the room")
                        )
                    }
                } else if views[key]?.remove(peer) == nil {
                    found.append(violation("view", event, "told \(peer) left, but \(peer) was not in its view"))
                }
                // On a lossy network a peer may be dropped, and come back, for lost heartbeats alone.
                guard scenario.network.loss == 0, !peerDevices.isEmpty,
                    !peerDevices.contains(where: { stateNear($0, event.room, event.time) }),
                    !stateNear(event.user, event.room, event.time)
                else { continue }
                let inOutage = outages.contains {
                    peerDevices.contains($0.user) && $0.start <= event.time
                        && event.time <= max($0.end, $0.start + 1_200_000) + tolerance
                }
                let joining = peerDevices.contains { isJoining($0, event.room, event.time) }
                // The server removes a member of its own accord: a kick, or a token's expiry not renewed in time (its
                // client may hear of it after the log ends).
                let removed = peerDevices.contains { device in
                    scenario.serverRemovals(of: device).contains { $0.time <= event.time + tolerance }
                }
                let explained = inOutage || removed || peerDevices.contains { endedLately($0, event.room, event.time) }
                if joined ? !joining : !explained {
                    found.append(
                        violation(
                            "view",
                            event,
                            "told \(peer) \(joined ? "joined" : "left") with no change of either near it"
                        )
                    )
                }
            }
        }
        return found
    }

    /// `view`, at a full reconnection: where the SDK reports every peer gone (``Dialect/clearsView``), the user's
    /// view is empty once that instant's lines are read.
    func clearedViews() -> [Violation] {
        var found: [Violation] = []
        for (user, userEvents) in byUser {
            var views: [String: Set<String>] = [:]
            var clearing: [String: LoggedEvent] = [:]
            func settle(_ room: String, before time: Double) {
                guard let clear = clearing[room], clear.time < time else { return }
                clearing[room] = nil
                if let left = views[room], !left.isEmpty {
                    found.append(
                        Violation(
                            rule: "view",
                            time: clear.time,
                            user: user,
                            room: room,
                            message: "a full reconnection left \(left.sorted()) in the view, not reported gone"
                        )
                    )
                }
            }
            for event in userEvents {
                let room = event.room ?? ""
                settle(room, before: event.time)
                if dialect.isStart(event) {
                    views[room] = []
                } else if let (names, joined) = dialect.presence(event) {
                    if joined {
                        views[room, default: []].formUnion(names)
                    } else {
                        views[room, default: []].subtract(names)
                    }
                }
                if dialect.clearsView(event) { clearing[room] = event }
            }
            for room in clearing.keys { settle(room, before: .infinity) }
        }
        return found
    }

    // MARK: - told

    /// A span of time (ms), both ends included.
    struct Span {
        var from: Double
        var to: Double

        func covers(_ from: Double, _ to: Double) -> Bool { self.from <= from && to <= self.to }
    }

    /// `told`: at every instant some line or span marks, each undisturbed user that is told of its peers holds in its
    /// view every peer certainly in its room, and no peer certainly out of it.
    func told() -> [Violation] {
        // On a lossy network any user may drop out of a room at any time, for lost heartbeats: nothing is certain.
        guard scenario.network.loss == 0 else { return [] }
        let partitioned = partitionedRooms()
        let end = scenario.end.milliseconds
        let rooms = Set(events.compactMap(\.room)).subtracting(partitioned)
        // Users whose visibility a vendor call may change, or that are never visible, are nobody's certain peers.
        let changing = Set(
            scenario.timeline.compactMap { entry -> String? in
                guard case .user(let user) = entry.target, case .vendor = entry.action else { return nil }
                return userIDs[user]
            }
        )
        let peers = devices.filter { userID, names in
            !changing.contains(userID)
                && names.allSatisfy { name in scenario.users.first { $0.id == name }.map(dialect.isVisible) ?? false }
        }
        var found: [Violation] = []
        for room in rooms.sorted() {
            var inside: [String: [Span]] = [:]
            var outside: [String: [Span]] = [:]
            var marks: Set<Double> = [end]
            for user in scenario.users {
                let (inSpans, outSpans) = spans(of: user.id, in: room, until: end)
                inside[user.id] = inSpans
                outside[user.id] = outSpans
                for span in inSpans + outSpans {
                    marks.insert(min(span.to, end))
                    if span.from <= end { marks.insert(span.from) }
                }
            }
            for event in events where event.room == room { marks.insert(event.time) }
            let instants = marks.sorted()
            for viewer in scenario.users where dialect.isNotified(viewer) {
                let watched = viewSpans(of: viewer.id, in: room, inside: inside[viewer.id] ?? [])
                guard !watched.isEmpty else { continue }
                let lines = byUser[viewer.id, default: []].filter { $0.room == room }
                var next = 0
                var view: Set<String> = []
                var reported: Set<String> = []
                for instant in instants {
                    while next < lines.count, lines[next].time <= instant {
                        let line = lines[next]
                        if dialect.isStart(line) {
                            view = []
                        } else if let (names, joined) = dialect.presence(line) {
                            if joined { view.formUnion(names) } else { view.subtract(names) }
                        }
                        next += 1
                    }
                    guard let span = watched.first(where: { $0.from <= instant && instant <= $0.to }) else { continue }
                    for (peer, names) in peers where peer != viewer.userID {
                        let certainlyIn = names.contains { name in
                            inside[name, default: []].contains { $0.covers(instant - tolerance, instant) }
                        }
                        let certainlyOut = names.allSatisfy { name in
                            outside[name, default: []].contains { $0.covers(instant - tolerance, instant) }
                        }
                        let key = "\(peer)\u{0}\(span.from)\u{0}\(certainlyIn)"
                        let wrong: String? =
                            if certainlyIn, !view.contains(peer) {
                                "does not hold \(peer) at \(instant) ms, though \(peer) is in the room"
                            } else if certainlyOut, view.contains(peer) {
                                "holds \(peer) at \(instant) ms, though \(peer) is not in the room"
                            } else {
                                nil
                            }
                        if let wrong, reported.insert(key).inserted {
                            found.append(
                                Violation(rule: "told", time: instant, user: viewer.id, room: room, message: wrong)
                            )
                        }
                    }
                }
            }
        }
        return found
    }

    /// When `device` was certainly in `room` and when certainly out of it, by its own log: in from each state that
    /// has it in the room (the tolerance after it, for its peers to hear) to its next state (the tolerance before),
    /// unless disturbed meanwhile (``disturbances(of:in:states:)``); out before its first start there, and from each end
    /// of a join (the tolerance after a leave the user asked for while undisturbed, the server's timeout and the
    /// tolerance after any other) to its next start.
    func spans(of device: String, in room: String, until end: Double) -> (inside: [Span], outside: [Span]) {
        let states = byUser[device, default: []].filter { $0.room == room && dialect.isState($0) }
        let troubles = disturbances(of: device, in: room, states: states)
        var inside: [Span] = []
        var outside: [Span] = [Span(from: 0, to: states.first?.time ?? end)]
        for (index, state) in states.enumerated() {
            let next = index + 1 < states.count ? states[index + 1].time - tolerance : end
            if dialect.isIn(state) {
                var span = Span(from: state.time + tolerance, to: next)
                for trouble in troubles where trouble.to >= span.from && trouble.from <= span.to {
                    span.to = min(span.to, trouble.from)
                }
                if span.from <= span.to { inside.append(span) }
            } else if dialect.isEnd(state) {
                // A leave the server heard at once, and a removal it made itself (a kick, a token's expiry, a newer
                // login); any other end, or a leave into a silent path, the server may learn of only when its timeout
                // passes.
                let causes = dialect.endCauses(state) ?? []
                // A token's end at the grace's end is the server's kick; the same code earlier is a refusal.
                let graceKick =
                    causes.contains(.tokenExpiry)
                    && entries(of: [device], where: { $0 == .expireToken }).contains {
                        abs(state.time - ($0 + dialect.tokenGrace)) <= tolerance
                    }
                let removed =
                    graceKick || !causes.isEmpty && causes.isSubset(of: [.kick, .duplicateLogin, .tokenExpiry])
                let heard =
                    removed
                    || dialect.isLeave(state) && !troubles.contains { $0.from <= state.time && state.time <= $0.to }
                let from = state.time + tolerance + (heard ? 0 : dialect.lingers)
                let until = states[(index + 1)...].first(where: dialect.isStart)?.time ?? end
                if from <= until { outside.append(Span(from: from, to: until)) }
            }
        }
        return (inside, outside)
    }

    /// When `device`'s presence in `room` is not certain whatever its log says: from each fault of its own (an
    /// outage, a kick, a token expiry, a reconnection request, a network change — the tolerance before, as the
    /// server may act on it first) to its next state that has it in the room after the fault is over (a kick or an
    /// expiry: to its next start, the server having removed it).
    func disturbances(
        of device: String,
        in room: String,
        states: [LoggedEvent],
        ignoringExpiries: Bool = false
    ) -> [Span] {
        var troubles: [(from: Double, over: Double, untilStart: Bool)] = []
        for outage in outages where outage.user == device {
            troubles.append((outage.start, outage.end, false))
        }
        // The server kicks, expires and asks to reconnect by user ID: what it does to one device of a user, it does
        // to each.
        let userID = userIDs[device] ?? device
        for entry in scenario.timeline {
            guard case .user(let target) = entry.target else { continue }
            let time = entry.at.milliseconds
            switch entry.action {
            case .kick where userIDs[target] == userID:
                troubles.append((time, time, true))
            case .expireToken where userIDs[target] == userID && !ignoringExpiries:
                troubles.append((time, time, true))
            case .requestReconnect where userIDs[target] == userID, .networkChange where target == device:
                troubles.append((time, time, false))
            default: continue
            }
        }
        let end = scenario.end.milliseconds
        return troubles.map { trouble in
            let resolves = states.first {
                $0.time >= trouble.over && (trouble.untilStart ? dialect.isStart($0) : dialect.isIn($0))
            }
            return Span(from: trouble.from - tolerance, to: resolves?.time ?? end)
        }
    }

    /// When `viewer`'s view of `room` is certain: while it is in the room (`inside`), and not after a fault of its
    /// own until it is back (its reconnection's answer lists the room again) — updates sent while its path was
    /// silent are lost.
    func viewSpans(of viewer: String, in room: String, inside: [Span]) -> [Span] {
        let states = byUser[viewer, default: []].filter { $0.room == room && dialect.isState($0) }
        let blind = disturbances(of: viewer, in: room, states: states)
        return inside.compactMap { span in
            var span = span
            for trouble in blind where trouble.to >= span.from && trouble.from <= span.to {
                span.to = min(span.to, trouble.from)
            }
            return span.from <= span.to ? span : nil
        }
    }

    /// The rooms a partition cuts off at some time: no view of them is certain.
    func partitionedRooms() -> Set<String> {
        var rooms: Set<String> = []
        for entry in scenario.timeline {
            guard case .partition = entry.action else { continue }
            switch entry.target {
            case .room(let room): rooms.insert(room)
            default: rooms.formUnion(events.compactMap(\.room))
            }
        }
        return rooms
    }
}
