#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes whole outputs (a report, a plot, a saved scenario) to a path or to standard output, reporting every
/// failure as a `RoomLinkError.Code.ioFailure` that names the destination.
///
/// A path is opened and truncated in place, never replaced: a symbolic link is written through, and a FIFO or a
/// device (`/dev/null`, `/dev/stdout`) gets the bytes instead of being turned into a regular file. Writes retry on
/// `EINTR` and short counts, so a failure is a real one (a full disk, a closed pipe).
package struct OutputFile {
    /// `-` for standard output, otherwise a path.
    package let destination: String

    /// The destination `destination`: `-` means standard output.
    package init(_ destination: String) { self.destination = destination }

    /// The destination's name in messages.
    package var name: String { destination == "-" ? "standard output" : destination }

    /// Checks that the destination can be opened for writing, creating it (empty) if it does not exist, without
    /// changing what it holds: a bad path fails before a long run, not after it.
    package func checkWritable() throws(RoomLinkError) {
        guard destination != "-" else { return }
        let descriptor = open(destination, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .ioFailure(destination, cannot: "open for writing", errno: errno) }
        _ = close(descriptor)
    }

    /// Writes `bytes` as the destination's whole content.
    package func write(_ bytes: some Sequence<UInt8>) throws(RoomLinkError) {
        let data = Array(bytes)
        if destination == "-" {
            try Self.writeAll(data, to: STDOUT_FILENO, name: name)
            return
        }
        let descriptor = open(destination, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .ioFailure(destination, cannot: "open for writing", errno: errno) }
        do {
            try Self.writeAll(data, to: descriptor, name: name)
        } catch {
            _ = close(descriptor)
            throw error
        }
        guard close(descriptor) == 0 else { throw .ioFailure(destination, cannot: "write", errno: errno) }
    }

    /// Writes `text` (UTF-8) as the destination's whole content.
    package func write(_ text: String) throws(RoomLinkError) { try write(text.utf8) }

    /// Writes `text` to standard output, reporting a full disk or a closed pipe instead of losing it.
    package static func standardOutput(_ text: String) throws(RoomLinkError) {
        try writeAll(Array(text.utf8), to: STDOUT_FILENO, name: "standard output")
    }

    private static func writeAll(_ data: [UInt8], to descriptor: Int32, name: String) throws(RoomLinkError) {
        var offset = 0
        let failure = data.withUnsafeBytes { bytes -> Int32? in
            while offset < bytes.count {
                let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += written
            }
            return nil
        }
        if let failure { throw .ioFailure(name, cannot: "write", errno: failure) }
    }
}
