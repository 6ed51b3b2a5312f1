@_spi(RoomLinkInternals) import RoomLinkRuntime

/// Plays one timeline entry's participants in a simulation one at a time: only the next participant has a timer,
/// armed in the place among the simulation's timers that arming them all at the start would have given it.
///
/// A population entry acts on every user of its slice — a million logins over a minute, a storm's half million
/// outages and their returns. Armed all at once, their timers were the largest thing a run held at its start and
/// through a storm: each a wheel entry, a slot, a closure and its handler, and the wheel keeps its high-water mark.
/// The cursor reserves their places (`SimulationRuntime.reserveSequences`: two per participant, its action and its
/// return) and arms each when the one before it fires, so the run fires them in the same order — the same event
/// log — while holding one at a time (and the returns of those whose outage is under way).
final class TimelineCursor<Dialect: RoomDialect>: TimerHandler, @unchecked Sendable {
    // Safe: `position` is read and written only on the simulation's thread — in `start`, called there by the run
    // (the initializer refuses any other thread), and in `timerFired`, which the simulation calls there. The other
    // properties are immutable.
    private let world: ScenarioWorld<Dialect>
    private let simulation: SimulationRuntime
    private let entry: Scenario.Entry
    private let index: Int
    private let targets: ScenarioWorld<Dialect>.Targets
    private let origin: RuntimeInstant
    /// The first of the places reserved: participant `i` acts at `base + 2i`, and comes back at `base + 2i + 1`.
    private let base: UInt64
    /// The next participant to act.
    private var position = 0

    /// A cursor over `targets`, the participants of `entry` (number `index` of the timeline), on `simulation`;
    /// `nil` off the simulation's thread (arm the participants' timers at once there).
    init?(
        world: ScenarioWorld<Dialect>,
        simulation: SimulationRuntime,
        entry: Scenario.Entry,
        index: Int,
        targets: ScenarioWorld<Dialect>.Targets,
        origin: RuntimeInstant
    ) {
        guard simulation.isInServiceThread else { return nil }
        self.world = world
        self.simulation = simulation
        self.entry = entry
        self.index = index
        self.targets = targets
        self.origin = origin
        base = simulation.reserveSequences(2 * targets.count)
    }

    /// Arms the first participant's timer.
    func start() throws(RuntimeError) {
        try armNext()
    }

    /// Arms the timer of the next participant this shard runs, if one is left.
    // Specialised for each dialect: the simulation calls a generic class's handler through its protocol witness,
    // which is the unspecialised method, and that ran every `targets.count` and `world.clients[i]` through value
    // witnesses and metadata lookups — 7.8 % of a million-client fill in this function, 3.0 % specialised.
    @_specialize(where Dialect == Zego)
    @_specialize(where Dialect == Agora)
    @_specialize(where Dialect == LiveKit)
    private func armNext() throws(RuntimeError) {
        while position < targets.count {
            let (participant, offset) = targets[position]
            guard world.runs(participant) else {
                position += 1
                continue
            }
            let deadline = origin.advanced(by: entry.at + offset)
            _ = try simulation.schedule(at: deadline, sequence: base + 2 * UInt64(position), handler: self)
            return
        }
    }

    @_specialize(where Dialect == Zego)
    @_specialize(where Dialect == Agora)
    @_specialize(where Dialect == LiveKit)
    func timerFired(_ timer: TimerHandle) {
        let (participant, offset) = targets[position]
        let deadline = origin.advanced(by: entry.at + offset)
        if let client = world.clients[participant] {
            let (world, action) = (world, entry.action)
            client.assumeIsolated { world.perform(action, by: participant, client: $0) }
            // Its return takes the place after its action, whenever it comes.
            if let back = world.comesBack(
                after: entry,
                index: index,
                participant: participant,
                at: deadline,
                origin: origin
            ) {
                _ = try? simulation.schedule(
                    at: back,
                    sequence: base + 2 * UInt64(position) + 1,
                    handler: ScenarioWorld.ComesBack(world, participant)
                )
            }
        }
        position += 1
        // The simulation is stopping if this fails: the rest of the entry would not fire either.
        try? armNext()
    }
}
