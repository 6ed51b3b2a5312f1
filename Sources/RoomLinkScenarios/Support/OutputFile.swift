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

    /// Checks that the destination can be written, without creating or changing anything: a bad path fails before
    /// a long run, not after it, and a run that fails leaves no empty file behind.
    ///
    /// A FIFO is not opened here: opening and closing it would hand a one-shot reader its end of file before the
    /// run wrote anything.
    package func checkWritable() throws(RoomLinkError) {
        guard destination != "-" else { return }
        var status = stat()
        if stat(destination, &status) == 0 {
            if status.st_mode & S_IFMT == S_IFDIR {
                throw .ioFailure(destination, cannot: "open for writing", errno: EISDIR)
            }
            guard access(destination, W_OK) == 0 else {
                throw .ioFailure(destination, cannot: "open for writing", errno: errno)
            }
            return
        }
        guard errno == ENOENT else { throw .ioFailure(destination, cannot: "open for writing", errno: errno) }
        // A new file: its folder must exist and take new entries.
        let folder = destination.lastIndex(of: "/").map { String(destination[..<$0]) } ?? "."
        guard access(folder.isEmpty ? "/" : folder, W_OK | X_OK) == 0 else {
            throw .ioFailure(destination, cannot: "open for writing", errno: errno)
        }
    }

    /// Writes `bytes` as the destination's whole content.
    ///
    /// A FIFO is opened without waiting: with no process reading it the write fails at once ("no such device or
    /// address") instead of blocking the command for ever.
    package func write(_ bytes: some Sequence<UInt8>) throws(RoomLinkError) {
        let data = Array(bytes)
        if destination == "-" {
            try Self.writeAll(data, to: STDOUT_FILENO, name: name)
            return
        }
        let descriptor = try Self.openForWriting(destination, operation: "open for writing")
        do {
            try Self.writeAll(data, to: descriptor, name: name)
        } catch {
            _ = close(descriptor)
            throw error
        }
        guard close(descriptor) == 0 else { throw .ioFailure(destination, cannot: "write", errno: errno) }
    }

    /// Opens (creating or truncating) `path` for writing without waiting for a reader: a FIFO that no process reads
    /// fails at once ("no such device or address") instead of blocking the command. The descriptor is blocking
    /// again for the writes (a slow reader is waited for; a full pipe is not an error). `operation` names the open in
    /// the error.
    package static func openForWriting(_ path: String, operation: String) throws(RoomLinkError) -> Int32 {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0o644)
        guard descriptor >= 0 else {
            let number = errno
            // ENXIO: a FIFO that no process has open for reading.
            let what = number == ENXIO ? "\(operation): no process reads this FIFO" : operation
            throw .ioFailure(path, cannot: what, errno: number)
        }
        let flags = fcntl(descriptor, F_GETFL)
        if flags >= 0 { _ = fcntl(descriptor, F_SETFL, flags & ~O_NONBLOCK) }
        return descriptor
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
