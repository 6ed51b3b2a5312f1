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
public enum TerminationSignal {
    /// Waits until SIGTERM or SIGINT arrives, and returns its name (`"SIGTERM"`, `"SIGINT"`).
    public static func next() async -> String {
        await withCheckedContinuation { continuation in
            let queue = DispatchQueue(label: "roomlink.termination-signals")
            let fired = LockedBox(false)
            // The sources must outlive this call: they are kept by the box their handlers capture.
            let sources = LockedBox<[any DispatchSourceSignal]>([])
            signal(SIGPIPE, SIG_IGN)
            for (number, name) in [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")] {
                // Ignored by the default action, so that the dispatch source alone hears it.
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
                source.setEventHandler {
                    guard
                        fired.withLock({ old in
                            defer { old = true }
                            return !old
                        })
                    else { _exit(128 + number) }
                    _ = sources.withLock { $0 }
                    continuation.resume(returning: name)
                }
                source.resume()
                sources.withLock { $0.append(source) }
            }
        }
    }
}
