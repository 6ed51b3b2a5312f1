import ArgumentParser
import Foundation
import RoomLink

/// Reports `error` on standard error as `roomlink: <message>` and returns the exit status for its kind (docs/cli.md,
/// "Exit status"), for a command to throw.
func fail(_ error: RoomLinkError) -> ExitCode {
    FileHandle.standardError.write(Data("roomlink: \(error.message)\n".utf8))
    return ExitCode(error.code.exitStatus)
}

/// Reports an error from RoomLink prefixed with `context` (a file it concerns); any other error is RoomLink's own
/// failure to say what went wrong, reported as internal.
func fail(_ error: any Error, in context: String? = nil) -> ExitCode {
    var failure =
        (error as? RoomLinkError) ?? RoomLinkError(code: .internalError, message: "unexpected error: \(error)")
    if let context, failure.field != context { failure.message = "\(context): \(failure.message)" }
    return fail(failure)
}

/// Reports bad input (a scenario, a flag's value) and returns its exit status, 2.
func fail(_ message: String) -> ExitCode {
    fail(RoomLinkError(code: .invalidInput, message: message))
}

/// Reads the file at `path` whole, or throws the I/O failure naming it and what it was expected to be.
func readFile(_ path: String, as what: String) throws -> Data {
    func failure(_ number: Int32) -> ExitCode {
        fail(.ioFailure(path, cannot: "read the \(what)", errno: number))
    }
    guard !path.isEmpty else { throw fail("the \(what): expected a file path, got an empty one") }
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { throw failure(errno) }
    defer { close(descriptor) }
    var data = Data()
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0 {
            if errno == EINTR { continue }
            throw failure(errno)  // EISDIR for a directory, EIO for a failing disk
        }
        if count == 0 { return data }
        data.append(contentsOf: chunk[..<count])
    }
}
