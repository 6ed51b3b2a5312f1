internal import Foundation

extension Scenario.Entry {
    /// The entry as one line of a scenario's `"timeline"`, in the form ``Scenario/init(json:)`` reads back to an equal
    /// entry: what `roomlink load --save-scenario` writes, one entry per line.
    public var jsonText: String {
        var fields = [("at", Self.quoted(at == .zero ? "0s" : at.roomLinkText))]
        switch target {
        case .user(let id):
            fields.append(("user", Self.quoted(id)))
        case .population(let fraction, let over, let offset):
            fields.append(("user", #""*""#))
            fields.append(contentsOf: Self.share(fraction, offset))
            if over > .zero { fields.append(("over", Self.quoted(over.roomLinkText))) }
        case .room(let room):
            fields.append(("room", Self.quoted(room)))
        case .populationRooms(let fraction, let offset):
            fields.append(("rooms", #""*""#))
            fields.append(contentsOf: Self.share(fraction, offset))
        }
        // The action goes right after the target, as people write it.
        let actionAt = fields.firstIndex { $0.0 == "fraction" || $0.0 == "over" } ?? fields.count
        fields.insert(contentsOf: action.jsonFields, at: actionAt)
        if let length { fields.append(("for", length.jsonText)) }
        return "{ " + fields.map { "\"\($0.0)\": \($0.1)" }.joined(separator: ", ") + " }"
    }

    /// A share's fields: the fraction unless the whole (the default), the offset unless 0.
    private static func share(_ fraction: Double, _ offset: Double) -> [(String, String)] {
        var fields: [(String, String)] = []
        if fraction != 1 { fields.append(("fraction", "\(fraction)")) }
        if offset > 0 { fields.append(("offset", "\(offset)")) }
        return fields
    }

    /// `text` as a JSON string (scenario names and tokens are plain; quotes and backslashes are escaped).
    static func quoted(_ text: String) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case let control where control.value < 0x20: escaped += String(format: "\\u%04x", control.value)
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return "\"\(escaped)\""
    }
}

extension Scenario.Action {
    /// The action's name and its fields, as a timeline entry writes them.
    var jsonFields: [(String, String)] {
        func named(_ name: String, _ extra: [(String, String?)] = []) -> [(String, String)] {
            [("action", Scenario.Entry.quoted(name))]
                + extra.compactMap { key, value in value.map { (key, Scenario.Entry.quoted($0)) } }
        }
        switch self {
        case .login(let room, let token): return named("login", [("room", room), ("token", token)])
        case .logout(let room): return named("logout", [("room", room)])
        case .switchRoom(let from, let to): return named("switchRoom", [("from", from), ("to", to)])
        case .networkDown: return named("networkDown")
        case .networkUp: return named("networkUp")
        case .blackhole: return named("blackhole")
        case .kick(let room): return named("kick", [("room", room)])
        case .expireToken: return named("expireToken")
        case .renewToken(let token): return named("renewToken", [("token", token)])
        case .networkChange: return named("networkChange")
        case .vendor(let call):
            return named(call.name, call.arguments.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        case .requestReconnect(let room): return named("requestReconnect", [("room", room)])
        case .partition: return named("partition")
        case .heal: return named("heal")
        }
    }
}
