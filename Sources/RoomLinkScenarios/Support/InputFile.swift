#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a whole input (a scenario, an event log, a configuration) from a regular file or from standard input, up
/// to a documented size, reporting every failure as a ``RoomLinkError`` that names the path.
///
/// Nothing a user can name makes it hang or exhaust memory: a FIFO, a device (`/dev/zero`, `/dev/urandom`) or a
/// socket is refused before a byte is read (opening it never waits for a writer), and a file or a stream larger
/// than the limit is refused as soon as the limit is passed, not read to its end.
package struct InputFile {
    /// What a scenario file may weigh: the largest example is 2 KiB; a million-client population is a few lines.
    package static let scenarioLimit = 64 << 20
    /// What an event log may weigh: a 100,000-client storm's log is about 1 GiB.
    package static let eventLogLimit = 4 << 30
    /// What a serve configuration may weigh.
    package static let configurationLimit = 1 << 20

    /// `-` for standard input, otherwise a path.
    package let source: String
    /// What the input is, in messages ("the scenario").
    package let what: String
    /// The most bytes accepted.
    package let limit: Int

    package init(_ source: String, as what: String, limit: Int) {
        self.source = source
        self.what = what
        self.limit = limit
    }

    /// The source's name in messages.
    package var name: String { source == "-" ? "standard input" : source }

    /// Reads the input whole.
    ///
    /// - Throws: ``RoomLinkError/Code/invalidInput`` for an empty path, a source that is not a regular file (or
    ///   standard input), or one larger than ``limit``; ``RoomLinkError/Code/ioFailure`` when it cannot be opened
    ///   or read (missing, no permission, a directory).
    package func read() throws(RoomLinkError) -> [UInt8] {
        guard !source.isEmpty else {
            throw RoomLinkError(code: .invalidInput, message: "\(what): expected a file path, got an empty one")
        }
        if source == "-" { return try readAll(from: STDIN_FILENO) }
        // Non-blocking, so that opening a FIFO with no writer returns at once; it is refused just below.
        let descriptor = open(source, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw .ioFailure(source, cannot: "read \(what)", errno: errno) }
        defer { _ = close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .ioFailure(source, cannot: "read \(what)", errno: errno) }
        let kind = status.st_mode & S_IFMT
        if kind == S_IFDIR { throw .ioFailure(source, cannot: "read \(what)", errno: EISDIR) }
        guard kind == S_IFREG else {
            throw RoomLinkError(
                code: .invalidInput,
                field: source,
                message: "\(source): \(what) must be a regular file, and this is \(Self.describe(kind)); "
                    + "to read a stream, give '-' and redirect it to standard input"
            )
        }
        if Int(status.st_size) > limit { throw tooLarge() }
        return try readAll(from: descriptor)
    }

    private func readAll(from descriptor: Int32) throws(RoomLinkError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .ioFailure(name, cannot: "read \(what)", errno: errno)
            }
            if count == 0 { return bytes }
            // The limit is checked per chunk: an endless stream is refused after `limit` bytes, not read to its end.
            guard bytes.count + count <= limit else { throw tooLarge() }
            bytes.append(contentsOf: chunk[..<count])
        }
    }

    private func tooLarge() -> RoomLinkError {
        RoomLinkError(
            code: .invalidInput,
            field: source,
            message: "\(name): \(what) is larger than \(Self.describe(bytes: limit)), the most RoomLink reads"
        )
    }

    static func describe(bytes: Int) -> String {
        bytes >= 1 << 30 && bytes % (1 << 30) == 0 ? "\(bytes >> 30) GiB" : "\(bytes >> 20) MiB"
    }

    static func describe(_ kind: mode_t) -> String {
        switch kind {
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        default: "not a file"
        }
    }
}
