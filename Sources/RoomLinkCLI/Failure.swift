import ArgumentParser
import Foundation
import RoomLink

/// Reports `error` on standard error as `roomlink: <message>` and returns the exit status for its kind (docs/cli.md,
/// "Exit status"), for a command to throw.
func fail(_ error: RoomLinkError) -> ExitCode {
    StandardStream.error.write("roomlink: \(error.message)\n")
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

/// Reads the input at `path` (`-`: standard input) whole, up to `limit` bytes, or throws the failure naming it and
/// what it was expected to be (see ``InputFile``: a FIFO or a device is refused, nothing is read past the limit).
func readFile(_ path: String, as what: String, limit: Int = InputFile.scenarioLimit) throws -> Data {
    do {
        return Data(try InputFile(path, as: "the \(what)", limit: limit).read())
    } catch {
        throw fail(error)
    }
}
