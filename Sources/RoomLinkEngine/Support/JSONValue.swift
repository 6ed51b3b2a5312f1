package import Foundation

/// A parsed JSON document, kept generic so that scenario validation can name every field it rejects.
package enum JSONValue: Sendable, Equatable, Decodable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // Bool first: JSONDecoder refuses to read a number as a Bool, so `true` and `1` stay apart.
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// Parses `data` as strict JSON (``StrictJSONParser``): the document `what` names in messages.
    ///
    /// - Throws: `RoomLinkError.Code.invalidInput` saying where the text stops being JSON, or naming the path of a
    ///   key written twice (`timeline[2].at`, or `root` and the path when `root` is not empty).
    package static func parse(
        _ data: Data,
        what: String = "scenario",
        root: String = ""
    ) throws(RoomLinkError) -> JSONValue {
        do {
            return try StrictJSONParser.parse(Array(data), root: root)
        } catch {
            switch error {
            case .syntax(let reason, let line, let column):
                throw .invalidArgument(
                    what,
                    "a JSON document",
                    got: "text that is not JSON (line \(line), column \(column): \(reason))"
                )
            case .duplicateKey(let path):
                throw .invalidArgument(path, "a field written once", got: "a second value for it")
            }
        }
    }

    /// A short description for error messages: the value itself when short, its kind otherwise.
    package var summary: String {
        switch self {
        case .null: "null"
        case .bool(let value): "\(value)"
        case .number(let value): value == value.rounded() && abs(value) < 1e15 ? "\(Int64(value))" : "\(value)"
        case .string(let value): value.count <= 40 ? "\"\(value)\"" : "a string of \(value.count) characters"
        case .array(let items): "an array of \(items.count)"
        case .object: "an object"
        }
    }
}
