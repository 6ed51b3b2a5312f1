#if canImport(Glibc)
import Glibc
#endif

/// Writes events as JSON Lines (SPEC §7) to a file or standard output: an ``EventSink`` for every client of a run.
///
/// Lines are written in the order `record` is called. Clients on several loops may record at once; the writer
/// serialises them with a lock and writes in 64 KiB blocks.
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

    private let state: LockedBox<State>
    /// The path, or "standard output", for messages.
    private let destination: String

    /// Writes to standard output.
    public init() {
        state = LockedBox(State(descriptor: STDOUT_FILENO, ownsDescriptor: false))
        destination = "standard output"
    }

    /// Writes to the file at `path`, created or truncated.
    ///
    /// - Throws: ``RoomLinkError/Code/ioFailure`` naming the path when it cannot be opened.
    public init(path: String) throws(RoomLinkError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .ioFailure(path, cannot: "open the event log for writing", errno: errno) }
        state = LockedBox(State(descriptor: descriptor, ownsDescriptor: true))
        destination = path
    }

    /// Lines recorded so far.
    public var lineCount: Int { state.withLock { $0.lines } }

    public func record(_ event: Stamped<Event>, from client: String) {
        let line = event.event.eventLogLine.json(user: client, time: event.time)
        state.withLock { state in
            state.buffer.append(contentsOf: line.utf8)
            state.buffer.append(0x0A)
            state.lines += 1
            if state.buffer.count >= 1 << 16 { Self.flush(&state) }
        }
    }

    /// Writes what is buffered and closes the file (not standard output).
    ///
    /// - Throws: ``RoomLinkError/Code/ioFailure`` if a write failed (disk full, closed pipe).
    public func close() throws(RoomLinkError) {
        let error = state.withLock { state -> Int32? in
            Self.flush(&state)
            if state.ownsDescriptor, state.descriptor >= 0 {
                Glibc.close(state.descriptor)
                state.descriptor = -1
            }
            return state.writeError
        }
        if let error { throw .ioFailure(destination, cannot: "write the event log", errno: error) }
    }

    private static func flush(_ state: inout State) {
        guard !state.buffer.isEmpty, state.descriptor >= 0 else { return }
        var offset = 0
        state.buffer.withUnsafeBytes { bytes in
            while offset < bytes.count {
                let written = write(state.descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    state.writeError = errno
                    return
                }
                offset += written
            }
        }
        state.buffer.removeAll(keepingCapacity: true)
    }
}
