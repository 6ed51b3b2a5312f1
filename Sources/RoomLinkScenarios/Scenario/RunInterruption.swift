/// Stops a running scenario early, from any thread — a signal handler, a closed pipe — and remembers why.
///
/// Give one to ``ScenarioRunner/interruption``. The first ``interrupt(_:)`` ends the run at the next moment its
/// loops can take it: every shard stops waiting for the scenario's end, closes its recorder (the events produced so
/// far stay, in order) and the run returns a report marked ``RunReport/interrupted``. Later calls do nothing.
///
/// ```swift
/// let interruption = RunInterruption()
/// runner.interruption = interruption
/// // elsewhere, on SIGINT:
/// interruption.interrupt(.signal(SIGINT))
/// ```
public final class RunInterruption: Sendable {
    /// Why a run was stopped.
    public enum Reason: Sendable, Hashable, CustomStringConvertible {
        /// A signal (SIGINT, SIGTERM) asked the process to stop.
        case signal(Int32)
        /// The reader of the event log went away (a closed pipe): there is no one left to write for.
        case closedOutput
        /// The embedding program asked, for its own reason.
        case requested(String)

        public var description: String {
            switch self {
            case .signal(let number): "signal \(number)"
            case .closedOutput: "the event log's reader closed its end"
            case .requested(let why): why
            }
        }
    }

    private struct State {
        var reason: Reason?
        var stops: [@Sendable () -> Void] = []
    }

    private let state = LockedBox(State())

    /// An interruption that has not happened yet.
    public init() {}

    /// Why the run was stopped, once it was.
    public var reason: Reason? { state.withLock { $0.reason } }

    /// What stopped the run `report` describes: ``reason`` if the run stopped early (``RunReport/interrupted``),
    /// else `nil` — an interruption that came once the run had reached its end stopped nothing, so that what a
    /// program says of the run, its report and its exit status agree.
    public func cause(of report: RunReport) -> Reason? {
        report.interrupted ? reason : nil
    }

    /// Stops the run for `reason`; only the first call counts.
    public func interrupt(_ reason: Reason) {
        let stops = state.withLock { state -> [@Sendable () -> Void] in
            guard state.reason == nil else { return [] }
            state.reason = reason
            defer { state.stops = [] }
            return state.stops
        }
        for stop in stops { stop() }
    }

    /// Runs `stop` when the run is interrupted (at once if it already was).
    func onInterrupt(_ stop: @escaping @Sendable () -> Void) {
        let already = state.withLock { state -> Bool in
            if state.reason != nil { return true }
            state.stops.append(stop)
            return false
        }
        if already { stop() }
    }
}
