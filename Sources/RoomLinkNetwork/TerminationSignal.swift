import Dispatch
import RoomLinkEngine

#if canImport(Glibc)
import Glibc
#endif

/// The signals that ask a server process to stop: SIGTERM (a service manager, `kill`) and SIGINT (Ctrl-C).
///
/// ``next()`` waits for the first, for ``NetworkServer/run(until:whenStopping:)``'s graceful shutdown; a second
/// one ends the process at once (status 128 + the signal), as an operator who asks twice expects. SIGPIPE is ignored
/// from the first call: a write to a socket its peer closed fails with an error the server handles instead.
///
/// Call ``watch()`` before the process says it is ready: a signal that arrives between then and ``next()`` is kept
/// for it. (Armed only inside `next()`, a stop asked for while the server started — its clients already served by
/// the loops — was lost to the moment the signal was ignored and its source not yet listening.)
public enum TerminationSignal {
    /// The first signal's name once it arrived, and who waits for it.
    private struct State {
        var fired: String?
        var waiting: [CheckedContinuation<String, Never>] = []
        var sources: [any DispatchSourceSignal] = []
    }

    private static let state = LockedBox(State())

    /// Starts listening for SIGTERM and SIGINT, from now on (once; later calls do nothing), and returns once both
    /// sources listen.
    public static func watch() {
        let registered = DispatchGroup()
        state.withLock { state in
            guard state.sources.isEmpty else { return }
            let queue = DispatchQueue(label: "roomlink.termination-signals")
            signal(SIGPIPE, SIG_IGN)
            for (number, name) in [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")] {
                // Ignored by the default action, so that the dispatch source alone hears it. The source takes it only
                // once registered — which `resume` leaves to the dispatch manager's thread, late on a loaded machine
                // — and a signal in between is lost: so this waits for the registration before it returns, and runs
                // before the process says it is ready.
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
                source.setEventHandler { fired(number, name) }
                registered.enter()
                source.setRegistrationHandler { registered.leave() }
                source.resume()
                state.sources.append(source)
            }
        }
        // Bounded: a dispatch that never registers (none seen) must not keep the process from starting.
        _ = registered.wait(timeout: .now() + .seconds(10))
    }

    /// Waits until SIGTERM or SIGINT arrives (since ``watch()``, which it calls), and returns its name (`"SIGTERM"`,
    /// `"SIGINT"`).
    public static func next() async -> String {
        watch()
        return await withCheckedContinuation { continuation in
            let fired: String? = state.withLock { state in
                if state.fired == nil { state.waiting.append(continuation) }
                return state.fired
            }
            if let fired { continuation.resume(returning: fired) }
        }
    }

    private static func fired(_ number: Int32, _ name: String) {
        let waiting: [CheckedContinuation<String, Never>]? = state.withLock { state in
            guard state.fired == nil else { return nil }
            state.fired = name
            defer { state.waiting.removeAll() }
            return state.waiting
        }
        guard let waiting else { _exit(128 + number) }
        for continuation in waiting { continuation.resume(returning: name) }
    }
}
