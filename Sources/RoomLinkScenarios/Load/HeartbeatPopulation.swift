internal import Histogram

/// The heartbeat clients of one loop and their statistics.
///
/// Created, used and stopped on its loop's thread only (``HeartbeatLoad`` reaches it through tasks that prefer
/// that loop), so its counters need no lock.
final class HeartbeatPopulation: @unchecked Sendable {
    // Safe: every access happens on `loop`'s thread: `init` and `stop` run in tasks preferring the loop, and the
    // clients' timer callbacks fire there; `HeartbeatLoad` reads `stats` only from such tasks.

    struct Stats: Sendable {
        var fires = 0
        var lateness = Histogram<UInt64>(
            highestTrackableValue: 3_600_000_000_000,
            numberOfSignificantValueDigits: .three
        )
    }

    let loop: any RuntimeLoop
    var stats = Stats()
    private var clients: [HeartbeatClient] = []
    private var timers: [TimerHandle] = []

    /// Beats due from here on are not counted.
    let end: RuntimeInstant

    init(
        loop: any RuntimeLoop,
        clientIndices: [Int],
        load: HeartbeatLoad,
        t0: RuntimeInstant,
        end: RuntimeInstant
    ) throws {
        self.loop = loop
        self.end = end
        clients.reserveCapacity(clientIndices.count)
        timers.reserveCapacity(clientIndices.count)
        for i in clientIndices {
            let client = HeartbeatClient(
                population: self,
                firstDue: t0.advanced(by: load.firstDueOffset(client: i)),
                period: load.period
            )
            clients.append(client)
            timers.append(try loop.schedulePeriodic(every: load.period, startingAt: client.firstDue, handler: client))
        }
    }

    /// Cancels every client's timer and returns the statistics.
    func stop() -> Stats {
        for timer in timers { loop.cancel(timer) }
        timers.removeAll()
        clients.removeAll()
        return stats
    }
}

/// One simulated client: an actor pinned to its loop whose periodic timer calls it on the loop's thread.
actor HeartbeatClient: TimerHandler {
    // Unowned: the population owns its clients and outlives their timers (it cancels them in `stop`).
    private unowned let population: HeartbeatPopulation
    nonisolated let firstDue: RuntimeInstant
    private let periodNanoseconds: Int64

    init(population: HeartbeatPopulation, firstDue: RuntimeInstant, period: Duration) {
        self.population = population
        self.firstDue = firstDue
        self.periodNanoseconds = period.nanosecondsClamped
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { population.loop.asUnownedSerialExecutor() }

    nonisolated func timerFired(_ timer: TimerHandle) {
        assumeIsolated { $0.beat() }
    }

    private func beat() {
        let now = population.loop.now
        // Lateness against this period's due time; the absolute schedule means periods never shift.
        let sinceFirst = now.nanoseconds - firstDue.nanoseconds
        let late = sinceFirst % periodNanoseconds
        guard now.nanoseconds - late < population.end.nanoseconds else { return }
        population.stats.fires += 1
        _ = population.stats.lateness.record(UInt64(max(0, late)))
    }
}
