import Dispatch
import Foundation
import Glibc
import Synchronization

/// The child processes a benchmark started and has not seen end, so that a benchmark stopped by SIGINT or SIGTERM
/// stops them too: a cluster case runs a Redis, eight nodes and seven generators, and a benchmark killed alone (by
/// `timeout`, a job runner) used to leave them all running. A terminal's Ctrl-C reaches the children anyway (they are
/// in its process group); a signal sent to the benchmark's process alone did not.
enum ChildRegistry {
    private struct State {
        var running: Set<Int32> = []
        /// The signal sources, made with the first child (kept here: a source that is released stops watching).
        var sources: [any DispatchSourceSignal] = []
    }

    private static let state = Mutex(State())

    /// Records a child started with `pid`; the first call installs the signal handlers.
    static func started(_ pid: Int32) {
        state.withLock { state in
            if state.sources.isEmpty { state.sources = [SIGINT, SIGTERM].map(watch) }
            state.running.insert(pid)
        }
    }

    /// Forgets a child that has ended (or was stopped and waited for).
    static func ended(_ pid: Int32) {
        state.withLock { _ = $0.running.remove(pid) }
    }

    private static func watch(_ number: Int32) -> any DispatchSourceSignal {
        signal(number, SIG_IGN)  // the source sees it; the default action (death, children left behind) does not
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { stopAll(exitingWith: 128 + number) }
        source.resume()
        return source
    }

    /// Asks every child still running to stop (SIGTERM: serve shuts down gracefully), kills what is left after a few
    /// seconds, and exits with `status`.
    private static func stopAll(exitingWith status: Int32) {
        // A child that ended by itself (a generator at the end of its run) may still be listed, and its pid taken by
        // another process since: only this process's children are signalled.
        let pids = state.withLock { Array($0.running) }.filter { parent(of: $0) == getpid() }
        for pid in pids { kill(pid, SIGTERM) }
        let deadline = Date().addingTimeInterval(5)
        var left = pids
        while !left.isEmpty, Date() < deadline {
            // Reaps the children that ended (they are this process's), so a pid is not signalled once it is free.
            left = left.filter { waitpid($0, nil, WNOHANG) == 0 }
            if !left.isEmpty { usleep(50_000) }
        }
        for pid in left { kill(pid, SIGKILL) }
        _exit(status)
    }

    /// The parent of process `pid`, from `/proc/PID/stat` (its fourth field, after the command in parentheses).
    private static func parent(of pid: Int32) -> Int32? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 1 ? Int32(fields[1]) : nil
    }
}
