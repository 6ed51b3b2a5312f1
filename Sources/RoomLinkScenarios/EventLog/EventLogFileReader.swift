internal import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// An event log read from a file one line at a time, in bounded memory whatever the file's size: 64 KiB read at a
/// time, each line read as ``LoggedEvent/read(jsonLines:)`` reads it (blank lines skipped), and no line longer than
/// ``maximumLineLength``.
///
/// - Important: Not `Sendable`: one reader, read by one task.
package final class EventLogFileReader {
    /// The longest line read (1 MiB): a contract line is a few hundred bytes, and a file with no line ends must not
    /// be read whole.
    package static let maximumLineLength = 1 << 20

    private let descriptor: Int32
    /// The file's name in messages.
    package let name: String
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEnd = false
    /// The number of the line last read (blank ones counted).
    package private(set) var lineNumber = 0

    /// Opens the log at `path`, which `what` names in messages (`"generator 2's event log"`).
    ///
    /// - Throws: `RoomLinkError.Code.ioFailure` naming the path when it cannot be opened.
    package init(path: String, as what: String) throws(RoomLinkError) {
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .ioFailure(path, cannot: "open \(what)", errno: errno) }
        name = path
    }

    deinit {
        Glibc.close(descriptor)
    }

    /// The next line that is not blank — its bytes, without the line end, and its event — or `nil` at the end.
    ///
    /// - Throws: `RoomLinkError` naming the line (`events line 12`) and what was wrong with it, or the file when it
    ///   cannot be read.
    package func next() throws(RoomLinkError) -> (line: [UInt8], event: LoggedEvent)? {
        while true {
            guard let line = try nextLine() else { return nil }
            lineNumber += 1
            if let event = try LoggedEvent.read(line: line, number: lineNumber) { return (line, event) }
        }
    }

    /// The next line's bytes, reading more of the file when the buffer holds no whole line.
    private func nextLine() throws(RoomLinkError) -> [UInt8]? {
        while true {
            if let end = buffer[start...].firstIndex(of: 0x0A) {
                defer { start = end + 1 }
                return Array(buffer[start..<end])
            }
            guard buffer.count - start <= Self.maximumLineLength else {
                throw .invalidArgument(
                    "events line \(lineNumber + 1)",
                    "a line of at most \(Self.maximumLineLength) bytes",
                    got: "a longer one in \(name)"
                )
            }
            if atEnd {
                guard start < buffer.count else { return nil }
                defer { start = buffer.count }
                return Array(buffer[start...])
            }
            try fill()
        }
    }

    /// Drops what was read and appends up to 64 KiB more of the file; marks the end when there is no more.
    private func fill() throws(RoomLinkError) {
        buffer.removeFirst(start)
        start = 0
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .ioFailure(name, cannot: "read", errno: errno)
            }
            if count == 0 { atEnd = true } else { buffer.append(contentsOf: chunk[..<count]) }
            return
        }
    }
}

/// The children's event logs of a load split over processes, merged into one by time as they are read: a k-way
/// merge of files each already in time order (one process writes its lines in the order its loops made them), in
/// memory bounded by one line of each, whatever the logs' size. Lines of one time go in the children's order, and
/// each child's lines keep their order.
package enum EventLogMerge {
    /// Merges the logs at `paths` (`names` name them in messages) into `writer`, returning how many lines it wrote.
    ///
    /// - Throws: `RoomLinkError` naming a log and its line that does not read as an event line, or a log that cannot
    ///   be read.
    @discardableResult
    package static func merge(
        _ paths: [String],
        names: [String],
        into writer: EventLogWriter<EventLogLine>
    ) throws(RoomLinkError) -> Int {
        var readers: [EventLogFileReader] = []
        for (path, name) in zip(paths, names) { readers.append(try EventLogFileReader(path: path, as: name)) }
        var heads: [(line: [UInt8], time: Double)?] = []
        for reader in readers { heads.append(try reader.next().map { ($0.line, $0.event.time) }) }
        var written = 0
        // Few children (one per core of a machine): the earliest head is found by a scan, not a heap.
        while let child = heads.indices.filter({ heads[$0] != nil }).min(by: { heads[$0]!.time < heads[$1]!.time }) {
            writer.record(rawLine: heads[child]!.line)
            written += 1
            heads[child] = try readers[child].next().map { ($0.line, $0.event.time) }
        }
        return written
    }
}
