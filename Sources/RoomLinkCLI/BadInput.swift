import ArgumentParser
import Foundation

/// Reports bad input (a scenario, a file, a destination) on standard error and returns the exit status for it, 2,
/// for a command to throw.
func fail(_ message: String) -> ExitCode {
    FileHandle.standardError.write(Data("roomlink: \(message)\n".utf8))
    return ExitCode(2)
}
