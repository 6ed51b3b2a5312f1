internal import Foundation

/// Playing a run: each share of the run (a simulation, or the real clock) builds its world, schedules the
/// timeline's entries and faults on it, and waits for the scenario's end.
extension ScenarioRunner {
    /// When a run's faults (outages, partitions, kicks, token expiries) began and ended, from the scenario's start.
    struct FaultSpan: Sendable {
        var first: Duration?
        var last: Duration?

        mutating func note(_ time: Duration) {
            first = min(first ?? time, time)
            last = max(last ?? time, time)
        }

        mutating func merge(_ other: FaultSpan) {
            if let time = other.first { note(time) }
            if let time = other.last { note(time) }
        }
    }

    /// One simulation's (or the real clock's) part of a run: its group, its world once built, its statistics.
    final class Shard<Dialect: RoomDialect>: Sendable {
        let group: any RuntimeLoopGroup
        private let start: LockedBox<RuntimeInstant>
        private let built = LockedBox<ScenarioWorld<Dialect>?>(nil)
        private let stopped = LockedBox(false)

        /// The span of the timeline's faults this shard scheduled.
        private let faultSpan = LockedBox(FaultSpan())
        var faults: FaultSpan {
            get { faultSpan.withLock { $0 } }
            set { faultSpan.withLock { $0 = newValue } }
        }

        /// Whether the shard stopped before the scenario's end (``RunInterruption``).
        var interrupted: Bool {
            get { stopped.withLock { $0 } }
            set { stopped.withLock { $0 = newValue } }
        }

        init(group: any RuntimeLoopGroup, origin: RuntimeInstant) {
            self.group = group
            self.start = LockedBox(origin)
        }

        /// The scenario's time zero on this shard's clock.
        var origin: RuntimeInstant {
            get { start.withLock { $0 } }
            set { start.withLock { $0 = newValue } }
        }

        var world: ScenarioWorld<Dialect>? {
            get { built.withLock { $0 } }
            set { built.withLock { $0 = newValue } }
        }
    }

    /// Builds one shard's world on its group, plays the timeline's entries that concern it, and waits for the end.
    func play<Dialect: RoomDialect>(
        _ shard: Shard<Dialect>,
        shard index: Int,
        of count: Int,
        events: (any EventSink<EventLogLine>)?,
        progress: Progress?,
        wallStart: ContinuousClock.Instant,
        all shards: [Shard<Dialect>]
    ) async throws {
        let buildStart = shard.group.now
        // A modelled server's report judges recovery from the load statistics' series.
        let statistics =
            collectsLoadStatistics || scenario.server.isModelled ? LoadStatistics(origin: buildStart) : nil
        let world = ScenarioWorld<Dialect>(
            scenario: scenario,
            group: shard.group,
            forward: events,
            statistics: statistics,
            logsAttempts: logsAttempts,
            network: network,
            remote: remote,
            tokens: tokens,
            shard: index,
            of: count
        )
        if !(shard.group is SimulationRuntime) {
            // Real time ran while the world was built (a second for a million clients; at scale 0.01 that is 100
            // scenario seconds): the scenario starts once it is built, after a lead for the timeline's timers to be
            // armed (from here, through each loop's inbox: measured at about the build's time, so twice that), instead
            // of finding its first minutes already past.
            let built = shard.group.now
            let lead = max(buildStart.duration(to: built) * 2, .milliseconds(10))
            if let startGate {
                // The start agreed with others: the scenario's zero is that instant on this group's clock.
                let start = try await startGate()
                let scale = (shard.group as? any TimerLatenessReporting)?.scenarioSecondsPerSecond ?? 1
                let now = shard.group.now
                let ahead = (start - ContinuousClock.now) * scale
                guard ahead >= lead else {
                    throw RoomLinkError(
                        code: .invalidInput,
                        field: "start",
                        message: "the agreed start came \((lead - ahead).roomLinkText) too soon for this generator to "
                            + "arm its timeline: give the fleet a longer lead"
                    )
                }
                shard.origin = now.advanced(by: ahead)
            } else {
                shard.origin = built.advanced(by: lead)
            }
        }
        let origin = shard.origin
        statistics?.start(at: origin)
        remote?.connections?.start(at: origin)
        tokens?.statistics.start(at: origin)
        world.server?.nodes?.start(at: origin)
        shard.world = world
        world.recorder.start(at: origin)
        var faults = FaultSpan()
        for (index, entry) in scenario.timeline.enumerated() {
            let isFault = entry.action.isFault
            if isFault { faults.note(entry.at) }
            for (position, roomID) in world.rooms(of: entry).enumerated() where world.owns(room: roomID) {
                let healed = try world.schedule(entry, index: index, room: roomID, position: position, origin: origin)
                if isFault { faults.note(healed.map { origin.duration(to: $0) } ?? scenario.end) }
            }
            let targets = world.targets(of: entry, index: index)
            // In a simulation, a population's participants are armed one at a time, each in the place arming them
            // all now would give it (``TimelineCursor``); elsewhere all now, in that order.
            let cursor =
                targets.count > 1
                ? (shard.group as? SimulationRuntime).flatMap { simulation in
                    TimelineCursor(
                        world: world,
                        simulation: simulation,
                        entry: entry,
                        index: index,
                        targets: targets,
                        origin: origin
                    )
                } : nil
            // With a cursor, the participants are walked here only for the faults' span (it arms their timers).
            for (participant, offset) in targets where cursor == nil || isFault {
                guard let client = world.clients[participant] else { continue }
                let deadline = origin.advanced(by: entry.at + offset)
                if isFault { faults.note(entry.at + offset) }
                if cursor == nil {
                    _ = try client.loop.schedule(at: deadline) {
                        client.assumeIsolated { world.perform(entry.action, by: participant, client: $0) }
                    }
                }
                // An outage with a length: this user's network comes back after its own draw.
                if let back = world.comesBack(
                    after: entry,
                    index: index,
                    participant: participant,
                    at: deadline,
                    origin: origin
                ) {
                    if isFault { faults.note(origin.duration(to: back)) }
                    if cursor == nil {
                        _ = try client.loop.schedule(at: back, handler: ScenarioWorld.ComesBack(world, participant))
                    }
                } else if entry.length != nil, isFault {
                    faults.note(scenario.end)
                }
            }
            try cursor?.start()
        }
        shard.faults = faults
        // Progress (the first shard reports for all): a task on the global executor samples the run every wall
        // interval (the clocks and the statistics are safe to read from any thread), and once more at the end.
        let end = scenario.end
        let sampler = progress.map { progress in
            Task.detached {
                var previous = (time: ContinuousClock.now, events: 0)
                while !Task.isCancelled {
                    try? await Task.sleep(for: progress.interval)
                    let sample = Self.sample(shards, since: previous, wallStart: wallStart, end: end)
                    previous = (ContinuousClock.now, sample.events)
                    if Task.isCancelled || sample.scenarioSeconds >= sample.scenarioEnd { break }  // the end reports
                    progress.report(sample)
                }
            }
        }
        // Every loop must reach the end, not only the first: on the real clock a loop that was preempted still has
        // the timers due before the end to fire (each loop fires in deadline order, so its sleep ends after them).
        let loops = shard.group.loops
        if let interruption {
            // The wait is a task of its own that the interruption cancels; it runs on the first loop, as the wait
            // below would, so virtual time sees the same timers armed at the same instant.
            let waiter = Task(executorPreference: loops[0]) {
                for loop in loops { try await loop.sleep(until: origin.advanced(by: end)) }
            }
            interruption.onInterrupt { waiter.cancel() }
            do {
                try await waiter.value
            } catch is CancellationError {
                shard.interrupted = true
            }
        } else {
            for loop in loops { try await loop.sleep(until: origin.advanced(by: end)) }
        }
        sampler?.cancel()
        world.recorder.close()
        // The last sample is the caller's (``reportEnd(_:of:wallStart:)``), once every shard is at the end: waiting
        // for the others here, inside a simulation's run, would be waiting on something the simulation cannot
        // deliver, and a simulation with nothing left to do calls that a stall.
    }
}
