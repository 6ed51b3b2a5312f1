package import RoomLinkRuntime

/// A witness to how long the threads of a loop group stalled, for tests on the real clock.
///
/// A real-clock run tells the same story as in virtual time only while its loops keep up: a loop thread that a
/// loaded machine deschedules for longer than a timeout lets that timeout expire for real (a login answer still
/// waiting on a stalled server loop is a lost answer), and the story changes — legitimately. Such a test asserts
/// the exact story only when the run shows that no loop stalled for long enough to change it, and otherwise only
/// what no stall can shift (order, never early).
///
/// The witness is a periodic timer on every loop. Every actor pinned to a loop runs on its thread, so a thread that
/// was descheduled or busy for longer than a period makes that loop's watch timer late by about as much, and the
/// loop records the lateness with its own timers': the group's largest timer lateness afterwards bounds every stall.
package struct StallWatch: TimerHandler {
    /// Arms the watch on every loop of `group`, firing every `period` of scenario time until the group shuts down.
    package static func start(on group: some RuntimeLoopGroup, every period: Duration) throws {
        for loop in group.loops {
            _ = try loop.schedulePeriodic(every: period, handler: StallWatch())
        }
    }

    package func timerFired(_ timer: TimerHandle) {}
}
