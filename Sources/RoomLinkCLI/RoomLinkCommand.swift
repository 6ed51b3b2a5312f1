import ArgumentParser

/// The `roomlink` command line.
@main
struct RoomLinkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "roomlink",
        abstract: "Reproduce how real-time SDK clients keep their connection to a room, at scale.",
        subcommands: [Run.self, Load.self, Check.self, Serve.self, Heartbeats.self, ReportCommand.self]
    )
}
