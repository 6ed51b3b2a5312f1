/// An event as one line of the event log (contract §7): `type`, `room` where a room is concerned, and the dialect's
/// fields, in a fixed order.
public struct EventLogLine: Sendable, Equatable {
    /// A field's value.
    public enum Value: Sendable, Equatable {
        case string(String)
        case integer(Int64)
        case strings([String])
        case object([String: String])
    }

    public var type: String
    public var room: String?
    public var fields: [(String, Value)]

    public init(type: String, room: String?, fields: [(String, Value)] = []) {
        self.type = type
        self.room = room
        self.fields = fields
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.type == rhs.type && lhs.room == rhs.room && lhs.fields.elementsEqual(rhs.fields) { $0 == $1 }
    }

    /// The JSON line (without its newline) for this event, published by `user` at `time`:
    /// `{"t_ms":120.0,"user":"A","room":"r1","type":"roomState",…}`.
    public func json(user: String, time: RuntimeInstant) -> String {
        var out = "{\"t_ms\":\(time.milliseconds),\"user\":"
        Self.append(string: user, to: &out)
        if let room {
            out += ",\"room\":"
            Self.append(string: room, to: &out)
        }
        out += ",\"type\":"
        Self.append(string: type, to: &out)
        for (name, value) in fields {
            out += ","
            Self.append(string: name, to: &out)
            out += ":"
            switch value {
            case .string(let text): Self.append(string: text, to: &out)
            case .integer(let number): out += String(number)
            case .strings(let list):
                out += "["
                for (index, item) in list.enumerated() {
                    if index > 0 { out += "," }
                    Self.append(string: item, to: &out)
                }
                out += "]"
            case .object(let dictionary):
                out += "{"
                for (index, key) in dictionary.keys.sorted().enumerated() {
                    if index > 0 { out += "," }
                    Self.append(string: key, to: &out)
                    out += ":"
                    Self.append(string: dictionary[key]!, to: &out)
                }
                out += "}"
            }
        }
        out += "}"
        return out
    }

    /// Appends `text` as a JSON string literal.
    static func append(string text: String, to out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

/// An event that can be written to the event log.
public protocol EventLogRepresentable: Sendable {
    /// The event's line, without `t_ms` and `user` (the writer adds them).
    var eventLogLine: EventLogLine { get }
}

extension EventLogLine: EventLogRepresentable {
    /// A line is its own log line: sinks of lines (an `EventLogWriter<EventLogLine>`) take any dialect's events.
    public var eventLogLine: EventLogLine { self }

    /// The value of the string field `name`, if the line has one.
    public func string(_ name: String) -> String? {
        for (key, value) in fields where key == name { if case .string(let text) = value { return text } }
        return nil
    }

    /// The value of the whole-number field `name`, if the line has one.
    public func integer(_ name: String) -> Int64? {
        for (key, value) in fields where key == name { if case .integer(let number) = value { return number } }
        return nil
    }
}
