import Dispatch
import Foundation
import RoomLink
import Synchronization

/// SIGINT and SIGTERM while a run plays: the first stops the run through its ``RunInterruption`` (the events produced
/// so far are written and the report is marked interrupted), a second ends the process at once. SIGPIPE is ignored
/// for the run, so a reader that closes its pipe shows as a failed write instead of killing the process.
final class SignalTrap: Sendable {
    /// How many trapped signals arrived; shared with the handlers.
    private final class Count: Sendable {
        let value = Atomic(0)
    }

    private static let trapped: [Int32] = [SIGINT, SIGTERM]
    // A dispatch source is safe to use from any thread (its handler runs on the trap's queue and `cancel` may be
    // called anywhere), but the Dispatch overlay does not mark the protocol Sendable; these are only read.
    nonisolated(unsafe) private let sources: [any DispatchSourceSignal]

    /// Starts trapping; call ``release()`` when the run is over.
    init(stopping interruption: RunInterruption) {
        let count = Count()
        let queue = DispatchQueue(label: "roomlink.signals")
        signal(SIGPIPE, SIG_IGN)
        sources = Self.trapped.map { number in
            signal(number, SIG_IGN)  // the source sees it; the default action (death) does not happen
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                if count.value.wrappingAdd(1, ordering: .relaxed).oldValue > 0 { _exit(128 + number) }
                StandardStream.error.write(
                    "\nroomlink: \(number == SIGINT ? "SIGINT" : "SIGTERM"): stopping the run and writing what it "
                        + "produced (a second signal exits at once)\n"
                )
                interruption.interrupt(.signal(number))
            }
            source.resume()
            return source
        }
    }

    /// Stops trapping: the signals get their default actions again.
    func release() {
        for source in sources { source.cancel() }
        for number in Self.trapped + [SIGPIPE] { signal(number, SIG_DFL) }
    }
}
