import ArgumentParser
import RoomLink

/// A duration on the command line: a number and a unit, `500ms`, `5s`, `20m`, `1h`.
struct DurationArgument: ExpressibleByArgument, Sendable, CustomStringConvertible {
    let duration: Duration
    let text: String

    init?(argument: String) {
        guard let duration = Duration(roomLinkText: argument) else { return nil }
        self.duration = duration
        self.text = argument
    }

    init(_ text: String) {
        self.init(argument: text)!
    }

    var description: String { text }
    var defaultValueDescription: String { text }
    static var defaultCompletionKind: CompletionKind { .default }
}
