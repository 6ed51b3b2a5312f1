internal import RoomLinkEngine

/// A message on a room's channel: a change of its members, numbered in the room's order, or a business server's call
/// for the node that holds a user.
///
/// Published as fields, each `LENGTH:BYTES` (a netstring without its comma), so that user IDs may hold any character:
/// `kind seq user session node hidden reason`.
struct PresenceEvent: Equatable {
    enum Kind: String {
        case join, leave, hide
        /// Kick the user out (its reason in `reason`).
        case kick
        /// Ask the user to reconnect.
        case reconnect
    }

    var kind: Kind
    var sequence: UInt64
    var userID: String
    var session: SessionID
    var node: String
    var hidden: Bool
    var reason: String

    /// The published form.
    var encoded: String {
        let fields = [
            kind.rawValue, String(sequence), userID, String(session.rawValue, radix: 16), node, hidden ? "1" : "0",
            reason,
        ]
        return Self.encode(fields)
    }

    /// Fields as published: each `LENGTH:BYTES`.
    static func encode(_ fields: [String]) -> String {
        fields.map { "\($0.utf8.count):\($0)" }.joined()
    }

    /// The fields of a published payload; `nil` when it is not made of fields.
    static func fields(_ payload: String) -> [String]? {
        var fields: [String] = []
        var rest = Substring(payload).utf8[...]
        while !rest.isEmpty {
            guard let colon = rest.firstIndex(of: UInt8(ascii: ":")), colon > rest.startIndex,
                rest.distance(from: rest.startIndex, to: colon) <= 10,
                let length = Int(Substring(rest[..<colon])), length >= 0
            else { return nil }
            let start = rest.index(after: colon)
            guard let end = rest.index(start, offsetBy: length, limitedBy: rest.endIndex) else { return nil }
            fields.append(String(decoding: rest[start..<end], as: UTF8.self))
            rest = rest[end...]
        }
        return fields
    }

    /// Parses a published event; `nil` when it is not one (it is then ignored, and counted).
    init?(parsing payload: String) {
        guard let fields = Self.fields(payload), fields.count == 7, let kind = Kind(rawValue: fields[0]),
            let sequence = UInt64(fields[1]),
            let session = UInt64(fields[3], radix: 16)
        else { return nil }
        self.init(
            kind: kind,
            sequence: sequence,
            userID: fields[2],
            session: SessionID(rawValue: session),
            node: fields[4],
            hidden: fields[5] == "1",
            reason: fields[6]
        )
    }

    init(
        kind: Kind,
        sequence: UInt64,
        userID: String,
        session: SessionID,
        node: String,
        hidden: Bool,
        reason: String
    ) {
        self.kind = kind
        self.sequence = sequence
        self.userID = userID
        self.session = session
        self.node = node
        self.hidden = hidden
        self.reason = reason
    }

    /// The change it is, for a room; `nil` for a business server's call.
    var change: ClusterChange? {
        switch kind {
        case .join:
            .joined(ClusterMember(userID: userID, session: session, node: node, hidden: hidden), sequence: sequence)
        case .leave:
            .left(
                userID: userID,
                session: session,
                reason: DepartureReason(rawValue: reason) ?? .dropped,
                sequence: sequence
            )
        case .hide: .hiddenChanged(userID: userID, session: session, hidden: hidden, sequence: sequence)
        case .kick, .reconnect: nil
        }
    }
}
