internal import Histogram

/// A population of simulated clients, each an actor pinned to a runtime loop, that send a heartbeat every
/// `period`: the timer load of RoomLink's clients without the room protocol.
///
/// It measures what the runtime costs per heartbeat (CPU, and lateness on the real clock) and is the main job of
/// `roomlink heartbeats`. Client `i`'s beats are due at `t0 + period × (1 + i / clients) + k × period`, so the
/// first beats are spread evenly over one period and every later beat keeps that phase.
public struct HeartbeatLoad: Sendable {
    /// How many clients.
    public var clients: Int
    /// Time between two heartbeats of one client, in scenario time.
    public var period: Duration
    /// How long the load runs, in scenario time, counted from the start.
    public var duration: Duration

    /// Creates a load.
    ///
    /// - Parameters:
    ///   - clients: How many heartbeat clients to run.
    ///   - period: The time between two heartbeats of a client, in scenario time.
    ///   - duration: How long the load runs, in scenario time.
    ///   - memoryLimit: The memory the clients may be estimated to need (``ScenarioLimits``); by default 90 % of
    ///     the machine's.
    /// - Throws: `RoomLinkError.Code.invalidInput` naming `clients`, `period` or `duration` when one is outside
    ///   ``ScenarioLimits`` (a period under 1 ms, a duration over a day, clients that cannot fit), or when
    ///   `duration` is not longer than `period`.
    public init(
        clients: Int,
        period: Duration = .seconds(5),
        duration: Duration,
        memoryLimit: UInt64 = ScenarioLimits.defaultMemoryLimit
    ) throws(RoomLinkError) {
        guard clients > 0 else { throw .invalidArgument("clients", "a positive number", got: "\(clients)") }
        guard period >= ScenarioLimits.minimumPeriod else {
            throw .invalidArgument("period", "at least \(ScenarioLimits.minimumPeriod.roomLinkText)", got: "\(period)")
        }
        guard duration <= ScenarioLimits.maximumDuration else {
            throw .invalidArgument(
                "duration",
                "at most \(ScenarioLimits.maximumDuration.roomLinkText)",
                got: duration.roomLinkText
            )
        }
        try ScenarioLimits.checkMemory(clients: clients, limit: memoryLimit, field: "clients")
        guard duration > period else {
            throw .invalidArgument("duration", "a duration longer than the period (\(period))", got: "\(duration)")
        }
        self.clients = clients
        self.period = period
        self.duration = duration
    }

    /// Runs the load on `group` and reports what happened, in scenario time.
    ///
    /// On a `SimulationRuntime` it runs in virtual time; on a `LibeventLoopGroup` in real (possibly scaled)
    /// time. CPU per heartbeat is measured over the steady state, after the first period.
    public func run(on group: any RuntimeLoopGroup) async throws -> HeartbeatReport {
        if let simulation = group as? SimulationRuntime {
            return try await simulation.run { try await self.measure(on: simulation) }
        }
        return try await measure(on: group)
    }

    private func measure(on group: any RuntimeLoopGroup) async throws -> HeartbeatReport {
        let loops = group.loops
        let wallStart = ContinuousClock.now
        let t0 = group.now
        let populations = try await onEachLoop(loops) { index, loop in
            try HeartbeatPopulation(
                loop: loop,
                clientIndices: Array(stride(from: index, to: clients, by: loops.count)),
                load: self,
                t0: t0,
                end: t0.advanced(by: duration)
            )
        }
        let steadyFrom = t0.advanced(by: period * 2)
        try await loops[0].sleep(until: steadyFrom)
        let usageStart = ProcessUsage.current()
        let steadyWallStart = ContinuousClock.now
        let firesAtSteadyStart = try await onEachLoop(loops) { index, _ in populations[index].stats.fires }
        try await loops[0].sleep(until: t0.advanced(by: duration))
        let usageEnd = ProcessUsage.current()
        let steadyWall = ContinuousClock.now - steadyWallStart
        // Beats due before the end that run late still count; beats due from the end on do not. Half a period
        // lets the late ones land without letting any beat of the next period in.
        try await loops[0].sleep(until: t0.advanced(by: duration + period / 2))
        let stats = try await onEachLoop(loops) { index, _ in populations[index].stop() }
        let wall = ContinuousClock.now - wallStart

        // Merge into a fresh `Stats`, so the histogram's range is set in one place.
        let total = stats.reduce(into: HeartbeatPopulation.Stats()) {
            $0.fires += $1.fires
            $0.lateness.add($1.lateness)
        }
        let fires = total.fires
        let lateness = total.lateness
        let steadyFires = fires - firesAtSteadyStart.reduce(0, +)
        let cpu = usageEnd.cpuSeconds - usageStart.cpuSeconds
        func ms(_ percentile: Double) -> Double { Double(lateness.valueAtPercentile(percentile)) / 1e6 }
        return HeartbeatReport(
            clients: clients,
            loops: loops.count,
            periodSeconds: period.seconds,
            scenarioSeconds: duration.seconds,
            fires: fires,
            expectedFires: expectedFires(),
            latenessP50Milliseconds: ms(50),
            latenessP99Milliseconds: ms(99),
            latenessP999Milliseconds: ms(99.9),
            latenessMaxMilliseconds: Double(lateness.max) / 1e6,
            wallSeconds: wall.seconds,
            steadyCPUSeconds: cpu,
            cpuPerFireMicroseconds: steadyFires > 0 ? cpu / Double(steadyFires) * 1e6 : 0,
            coreShare: steadyWall > .zero ? cpu / steadyWall.seconds : 0,
            peakRSSBytes: usageEnd.peakRSSBytes
        )
    }

    /// Beats due before the end (strictly), summed over clients.
    func expectedFires() -> Int {
        let periodNs = period.nanosecondsClamped
        let durationNs = duration.nanosecondsClamped
        var total = 0
        for i in 0..<clients {
            let first = firstDueOffset(client: i).nanosecondsClamped
            // The number of k ≥ 0 with first + k × period < duration.
            if first < durationNs { total += Int((durationNs - first + periodNs - 1) / periodNs) }
        }
        return total
    }

    /// How long after `t0` client `i`'s first beat is due.
    func firstDueOffset(client i: Int) -> Duration {
        period + .nanoseconds(Int64(Double(period.nanosecondsClamped) * Double(i) / Double(clients)))
    }

    /// Runs `body` on every loop's own thread (as a task preferring that loop) and returns the results in loop
    /// order.
    private func onEachLoop<T: Sendable>(
        _ loops: [any RuntimeLoop],
        _ body: @escaping @Sendable (Int, any RuntimeLoop) throws -> T
    ) async throws -> [T] {
        try await withThrowingTaskGroup(of: (Int, T).self) { group in
            for (index, loop) in loops.enumerated() {
                group.addTask(executorPreference: loop) { (index, try body(index, loop)) }
            }
            var results = [T?](repeating: nil, count: loops.count)
            for try await (index, value) in group { results[index] = value }
            return results.map { $0! }
        }
    }
}
