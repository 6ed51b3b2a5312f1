import Testing

/// Waits for something another thread does, in the socket and Redis tests: the one polling helper they share.
package enum Polling {
    /// A wait that ran out (``until(_:limit:showing:_:)`` records it as an issue too).
    package struct TimedOut: Error, CustomStringConvertible {
        package let what: String
        package var description: String { "timed out waiting until \(what)" }
    }

    /// Waits until `condition` holds, checking it every 10 real milliseconds, at most `limit / 10 ms` times (a limit
    /// for hangs, not a timing). It counts checks, not real time: on a loaded machine this task may wait a minute for
    /// a thread, and a wait that ran out while nothing could run would blame the code under test for the machine.
    /// The suite's time limit still bounds the whole. On a timeout the issue recorded lists `showing` (the events
    /// each log saw), so a failure seen once says what happened.
    ///
    /// - Throws: ``TimedOut`` when the checks run out; a `CancellationError` when the task is cancelled.
    package static func until(
        _ what: String,
        limit: Duration = .seconds(60),
        showing logs: [any CustomStringConvertible] = [],
        _ condition: () async -> Bool
    ) async throws {
        let checks = max(1, Int(limit / .milliseconds(10)))
        for _ in 0..<checks {
            if await condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        if await condition() { return }
        let shown = logs.map { "\n  \($0)" }.joined()
        Issue.record("timed out waiting until \(what)\(shown)")
        throw TimedOut(what: what)
    }
}
