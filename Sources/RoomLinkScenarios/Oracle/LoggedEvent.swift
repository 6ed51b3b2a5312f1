public import struct Foundation.Data

/// One line of an event log, read back for checking: the common fields of contract §7 and the dialect's fields.
public struct LoggedEvent: Sendable, Equatable {
    /// Milliseconds since the scenario's start.
    public var time: Double
    public var user: String
    public var room: String?
    public var type: String
    /// String fields (`reason`, `update`, `state`, `peer`, …).
    public var strings: [String: String]
    /// Whole-number fields (`code`).
    public var integers: [String: Int64]
    /// String-list fields (`users`).
    public var lists: [String: [String]]

    public init(
        time: Double,
        user: String,
        room: String?,
        type: String,
        strings: [String: String] = [:],
        integers: [String: Int64] = [:],
        lists: [String: [String]] = [:]
    ) {
        self.time = time
        self.user = user
        self.room = room
        self.type = type
        self.strings = strings
        self.integers = integers
        self.lists = lists
    }

    /// The event an `EventLogLine` describes, as reading its JSON line back would give it (without the text).
    public init(line: EventLogLine, user: String, time: Double) {
        self.init(time: time, user: user, room: line.room, type: line.type)
        for (key, value) in line.fields {
            switch value {
            case .string(let text): strings[key] = text
            case .integer(let number): integers[key] = number
            case .strings(let list): lists[key] = list
            case .object: break  // not checked, as when read from text
            }
        }
    }

    /// Reads JSON Lines text; blank lines are skipped.
    ///
    /// - Throws: `RoomLinkError` naming the line (`events line 12`) and what was wrong with it.
    public static func read(jsonLines data: Data) throws(RoomLinkError) -> [LoggedEvent] {
        var events: [LoggedEvent] = []
        var lineNumber = 0
        for line in data.split(separator: 0x0A, omittingEmptySubsequences: false) {
            lineNumber += 1
            if let event = try read(line: line, number: lineNumber) { events.append(event) }
        }
        return events
    }

    /// Reads one line of an event log, the `number`th: `nil` for a blank line.
    ///
    /// - Throws: `RoomLinkError` naming the line (`events line 12`) and what was wrong with it.
    package static func read(
        line: some Collection<UInt8>,
        number lineNumber: Int
    ) throws(RoomLinkError)
        -> LoggedEvent?
    {
        guard line.contains(where: { $0 != 0x20 && $0 != 0x0D }) else { return nil }
        let path = "events line \(lineNumber)"
        let value = try JSONValue.parse(Data(line), what: path, root: path)
        guard case .object(let fields) = value else {
            throw .invalidArgument(path, "a JSON object", got: value.summary)
        }
        guard case .number(let time)? = fields["t_ms"], time >= 0, time < 9_007_199_254_740_992 else {
            throw .invalidArgument(
                "\(path).t_ms",
                "milliseconds since the start, a number from 0 to 2^53",
                got: fields["t_ms"]?.summary ?? "nothing"
            )
        }
        guard case .string(let user)? = fields["user"] else {
            throw .invalidArgument("\(path).user", "a string", got: fields["user"]?.summary ?? "nothing")
        }
        guard case .string(let type)? = fields["type"] else {
            throw .invalidArgument("\(path).type", "a string", got: fields["type"]?.summary ?? "nothing")
        }
        var event = LoggedEvent(time: time, user: user, room: nil, type: type)
        for (key, field) in fields where !["t_ms", "user", "type"].contains(key) {
            switch field {
            case .string(let text): if key == "room" { event.room = text } else { event.strings[key] = text }
            case .number(let number) where number == number.rounded():
                // A whole number must fit in 64 bits: a code, a count or a time the contract writes always does.
                guard let integer = Int64(exactly: number) else {
                    throw .invalidArgument("\(path).\(key)", "a whole number that fits in 64 bits", got: field.summary)
                }
                event.integers[key] = integer
            case .array(let items):
                event.lists[key] = items.compactMap { if case .string(let text) = $0 { text } else { nil } }
            default: break  // other shapes (extendedData) are not checked
            }
        }
        return event
    }
}
