internal import Foundation

/// What a run says: its report once every share returned, and its progress samples while it goes.
extension ScenarioRunner {
    /// The last progress sample of a run whose shards have all returned (none when it was interrupted).
    func reportEnd<Dialect: RoomDialect>(
        _ progress: Progress?,
        of shards: [Shard<Dialect>],
        wallStart: ContinuousClock.Instant
    ) {
        guard let progress, !shards.contains(where: \.interrupted) else { return }
        progress.report(Self.sample(shards, since: (wallStart, 0), wallStart: wallStart, end: scenario.end))
    }

    /// The report of a run from its shards.
    func report<Dialect: RoomDialect>(
        _ shards: [Shard<Dialect>],
        group: any RuntimeLoopGroup,
        wallStart: ContinuousClock.Instant,
        usageStart: ProcessUsage,
        rssStart: Int
    ) -> RunReport {
        let worlds = shards.compactMap(\.world)
        let wall = ContinuousClock.now - wallStart
        let usage = ProcessUsage.current()
        var summary = worlds[0].recorder.summary()
        for world in worlds.dropFirst() { summary.merge(world.recorder.summary()) }
        let clients = worlds.reduce(0) { $0 + $1.clientCount }
        let tallies = worlds.compactMap(\.statistics).map { $0.tally(end: scenario.end.seconds) }
        var load =
            collectsLoadStatistics && !tallies.isEmpty
            ? LoadStatistics.report(merging: tallies, end: scenario.end.seconds, clients: clients) : nil
        let serversLoad =
            load
            ?? (tallies.isEmpty
                ? nil : LoadStatistics.report(merging: tallies, end: scenario.end.seconds, clients: clients))
        load?.measureRecoveries(after: faultWindows)
        let loops = group as? any TimerLatenessReporting
        let lateness = loops?.timerLateness
        let connections = remote?.connections.map { ConnectionReport($0.tally(end: scenario.end.seconds)) }
        func keptUp(_ lateness: LatencySummary) -> Bool {
            RunReport.keptUp(
                timerLateness: lateness,
                timeScale: loops?.scenarioSecondsPerSecond ?? 1,
                latency: scenario.network.latency
            )
        }
        return RunReport(
            dialect: scenario.dialect.rawValue,
            clock: group is SimulationRuntime ? "virtual" : "real",
            seed: scenario.seed,
            clients: clients,
            rooms: worlds.reduce(0) { $0 + ($1.server?.roomCount ?? $1.remoteRoomCount) },
            events: summary.events,
            eventsPerPeer: summary.eventsPerPeer,
            eventsByType: summary.byType,
            eventsByState: summary.byState,
            eventsByReason: summary.byReason,
            eventsByCode: summary.byCode,
            messages: worlds.reduce(0) { $0 + $1.network.deliveredCount },
            violations: summary.violations.count,
            violationSample: summary.violations.prefix(20).map(\.description),
            droppedEvents: 0,
            wallSeconds: wall.seconds,
            scenarioSeconds: shards.contains(where: \.interrupted)
                ? shards.map { $0.origin.duration(to: $0.group.now).seconds }.min().map {
                    min(max(0, $0), scenario.end.seconds)
                } ?? 0
                : scenario.end.seconds,
            eventsPerWallSecond: wall > .zero ? Double(summary.events) / wall.seconds : 0,
            peakRSSBytes: usage.peakRSSBytes,
            peakRSSBytesPerClient: clients > 0 ? usage.peakRSSBytes / clients : 0,
            bytesPerClient: clients > 0 ? max(0, usage.peakRSSBytes - rssStart) / clients : 0,
            cpuSeconds: usage.cpuSeconds - usageStart.cpuSeconds,
            shards: shards.count,
            timerLateness: lateness,
            keptUp: lateness.map(keptUp),
            keptUpAfterFill: connections?.steadyTimerLateness.map(keptUp),
            load: load,
            interrupted: shards.contains(where: \.interrupted),
            servers: serverReport(worlds: worlds, shards: shards, load: serversLoad),
            timerLatenessTally: loops?.timerLatenessTally,
            connections: connections,
            tokens: tokens.map { TokenReport($0.statistics.tally(end: scenario.end.seconds)) }
        )
    }

    /// The servers' report, when their capacity is modelled: each node's statistics merged over the shards (a node
    /// is played by one shard; the others' copies are empty).
    func serverReport<Dialect: RoomDialect>(
        worlds: [ScenarioWorld<Dialect>],
        shards: [Shard<Dialect>],
        load: LoadReport?
    ) -> ServerReport? {
        guard scenario.server.isModelled else { return nil }
        var nodes = Array(repeating: ServerNodeStatistics(origin: .zero), count: scenario.server.nodes)
        for world in worlds {
            for (index, statistics) in (world.server?.nodes?.statistics ?? []).enumerated() {
                nodes[index].merge(statistics)
            }
        }
        var faults = FaultSpan()
        for shard in shards { faults.merge(shard.faults) }
        return ServerReport(
            policy: scenario.server,
            nodes: nodes,
            load: load,
            firstFault: faults.first?.seconds,
            lastFaultEnd: faults.last?.seconds,
            end: scenario.end.seconds
        )
    }

    /// A progress sample of a run: counts summed over its shards, scenario time of the one furthest behind.
    static func sample<Dialect: RoomDialect>(
        _ shards: [Shard<Dialect>],
        since previous: (time: ContinuousClock.Instant, events: Int),
        wallStart: ContinuousClock.Instant,
        end: Duration
    ) -> LoadProgress {
        let now = ContinuousClock.now
        var counts = (online: 0, reconnecting: 0, failed: 0, attempts: 0)
        var events = 0
        var scenarioSeconds = end.seconds
        for shard in shards {
            scenarioSeconds = min(
                scenarioSeconds,
                Double(shard.group.now.nanoseconds - shard.origin.nanoseconds) / 1e9
            )
            guard let world = shard.world else {
                scenarioSeconds = 0
                continue
            }
            events += world.recorder.eventCount
            if let part = world.statistics?.snapshot() {
                counts.online += part.online
                counts.reconnecting += part.reconnecting
                counts.failed += part.failed
                counts.attempts += part.attempts
            }
        }
        let elapsed = (now - previous.time).seconds
        return LoadProgress(
            scenarioSeconds: max(0, scenarioSeconds),
            scenarioEnd: end.seconds,
            wallSeconds: (now - wallStart).seconds,
            online: counts.online,
            reconnecting: counts.reconnecting,
            failed: counts.failed,
            attempts: counts.attempts,
            events: events,
            eventsPerSecond: elapsed > 0 ? Double(events - previous.events) / elapsed : 0,
            rssBytes: ProcessUsage.currentRSSBytes(),
            latePeakMs: (shards.first?.group as? any TimerLatenessReporting).map {
                $0.takeLatenessPeak() / .milliseconds(1)
            }
        )
    }
}
