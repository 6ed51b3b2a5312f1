#if canImport(Glibc)
import Glibc
#endif

/// Writes events as JSON Lines (contract §7) to a file or standard output: an `EventSink` for every client of a run.
///
/// Lines are written in the order `record` is called. Clients on several loops may record at once; the writer
/// serialises them with a lock and writes in 64 KiB blocks, and whenever ``flush()`` is called.
///
/// The first failed write (a full disk, a reader that closed its pipe) stops the writing: what is buffered then and
/// recorded later is dropped rather than kept in memory, `onFailure` hears the system's error number once (to stop
/// the run), and ``close()`` reports it.
///
/// - Important: Call ``close()`` at the end of a run to write what is buffered (and close the file).
public final class EventLogWriter<Event: EventLogRepresentable>: EventSink, Sendable {
    private struct State {
        var buffer: [UInt8] = []
        var descriptor: Int32
        var ownsDescriptor: Bool
        var lines = 0
        var writeError: Int32?
    }

    private let onFailure: (@Sendable (Int32) -> Void)?

    private let state: LockedBox<State>
    /// The path, or "standard output", for messages.
    private let destination: String

    /// Writes to standard output; `onFailure` hears the error number of the first write that fails.
    public init(onFailure: (@Sendable (Int32) -> Void)? = nil) {
        state = LockedBox(State(descriptor: STDOUT_FILENO, ownsDescriptor: false))
        destination = "standard output"
        self.onFailure = onFailure
    }

    /// Writes to the file at `path`, created or truncated.
    ///
    /// - Throws: `RoomLinkError.Code.ioFailure` naming the path when it cannot be opened.
    public init(path: String, onFailure: (@Sendable (Int32) -> Void)? = nil) throws(RoomLinkError) {
        // A FIFO that no process reads fails at once instead of blocking the command before its run starts.
        let descriptor = try OutputFile.openForWriting(path, operation: "open the event log for writing")
        state = LockedBox(State(descriptor: descriptor, ownsDescriptor: true))
        destination = path
        self.onFailure = onFailure
    }

    /// Lines recorded so far.
    public var lineCount: Int { state.withLock { $0.lines } }

    public func record(_ event: Stamped<Event>, from client: String) {
        append(event.event.eventLogLine.json(user: client, time: event.time).utf8)
    }

    /// Writes `line` (a whole event line as text, without its line end) as it is: a line another writer made, passed
    /// on (``EventLogMerge``).
    package func record(rawLine line: [UInt8]) {
        append(line)
    }

    /// Appends one line and its line end to the buffer, flushing it when full; a failed write is handed to
    /// `onFailure` outside the lock (the handler may stop the run, which records nothing more here).
    private func append(_ line: some Collection<UInt8>) {
        let failure = state.withLock { state -> Int32? in
            guard state.writeError == nil else { return nil }
            state.buffer.append(contentsOf: line)
            state.buffer.append(0x0A)
            state.lines += 1
            guard state.buffer.count >= 1 << 16 else { return nil }
            Self.flush(&state)
            return state.writeError
        }
        if let failure { onFailure?(failure) }
    }

    /// Writes what is buffered now, so that a reader follows a run as it goes (a real-clock run's caller flushes a
    /// few times a second; a virtual-time run, which ends in moments, needs no more than the 64 KiB blocks).
    public func flush() {
        let failure = state.withLock { state -> Int32? in
            let before = state.writeError
            Self.flush(&state)
            return before == nil ? state.writeError : nil
        }
        if let failure { onFailure?(failure) }
    }

    /// Writes what is buffered and closes the file (not standard output).
    ///
    /// - Throws: `RoomLinkError.Code.ioFailure` if a write failed (disk full, closed pipe).
    public func close() throws(RoomLinkError) {
        let (error, isNew) = state.withLock { state -> (Int32?, Bool) in
            let before = state.writeError
            Self.flush(&state)
            if state.ownsDescriptor, state.descriptor >= 0 {
                Glibc.close(state.descriptor)
                state.descriptor = -1
            }
            return (state.writeError, before == nil && state.writeError != nil)
        }
        // The last block failed (a reader gone before the end, as `| true` is): heard like any other failure.
        if isNew, let error { onFailure?(error) }
        if let error { throw .ioFailure(destination, cannot: "write the event log", errno: error) }
    }

    private static func flush(_ state: inout State) {
        guard !state.buffer.isEmpty, state.descriptor >= 0, state.writeError == nil else {
            state.buffer.removeAll(keepingCapacity: false)
            return
        }
        var offset = 0
        state.buffer.withUnsafeBytes { bytes in
            while offset < bytes.count {
                let written = write(state.descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    state.writeError = errno
                    break
                }
                offset += written
            }
        }
        state.buffer.removeAll(keepingCapacity: state.writeError == nil)
    }
}
