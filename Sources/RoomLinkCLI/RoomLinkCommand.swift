import ArgumentParser
import Foundation
import RoomLink

/// The `roomlink` command line.
@main
struct RoomLinkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "roomlink",
        abstract: "Reproduce how real-time SDK clients keep their connection to a room, at scale.",
        version: RoomLinkVersion.description,
        subcommands: [
            Run.self, Load.self, Check.self, Serve.self, Heartbeats.self, ReportCommand.self, TokenCommand.self,
        ]
    )

    /// Parses and runs a command. A flag or argument the parser refuses is reported like every other error —
    /// `roomlink: <what was wrong>`, then the usage — with the parser's exit status (64); help and `--version` go
    /// to standard output; a command's own failures were reported where they happened.
    static func main() async {
        // Before any thread of the run's allocates (``MemoryTuning``).
        MemoryTuning.apply(
            for: Array(CommandLine.arguments.dropFirst()),
            environment: ProcessInfo.processInfo.environment
        )
        let arguments: [String]
        do {
            // A serve configuration file is flags too: read into the command line before it is parsed.
            arguments = try ServeConfiguration.expand(Array(CommandLine.arguments.dropFirst()))
        } catch {
            Foundation.exit(fail(error).rawValue)
        }
        do {
            var command = try parseAsRoot(arguments)
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            guard code != .success, !(error is ExitCode) else { exit(withError: error) }
            var message = fullMessage(for: error)
            if message.hasPrefix("Error: ") { message = "roomlink: " + message.dropFirst("Error: ".count) }
            StandardStream.error.write(message + "\n")
            Foundation.exit(code.rawValue)
        }
    }
}
