import Foundation

/// A receiver's room lists checked against the truth `serve --callback-truth` wrote (`roomlink report callbacks`):
/// which users it wrongly holds or wrongly dropped, per room, when each went wrong, and why — a callback the vendor
/// lost or dropped (no receiver could know), one still on its way, or callbacks that all arrived but out of order or
/// twice (the receiver's ordering).
public struct CallbackAudit: Sendable, Hashable {
    /// One user the receiver has wrong.
    public struct Finding: Sendable, Hashable {
        public enum Kind: String, Sendable, Hashable {
            /// The receiver holds a user the room does not.
            case wronglyHeld
            /// The receiver lacks a user the room holds.
            case wronglyDropped
        }

        /// Whose fault it looks like.
        public enum Blame: String, Sendable, Hashable {
            /// The callback of the user's last change was lost or dropped: the vendor never delivered it.
            case lost
            /// The callback of the user's last change had not been settled when the truth ends (still on its way).
            case unsettled
            /// Every callback of the user's last change arrived; some of the user's came late or twice: the receiver
            /// applied them in the wrong order.
            case disorder
            /// Every callback arrived, in order and once: the receiver's own logic.
            case receiver
        }

        public var room: String
        public var user: String
        public var kind: Kind
        /// When the room last changed for the user (Unix ms): when the receiver's list went wrong.
        public var sinceMs: Int64
        /// The callback of that change.
        public var callbackID: UInt64
        public var blame: Blame
        /// What the truth says about the user's callbacks.
        public var detail: String
    }

    /// What went wrong, room by room (rooms in order, users in order).
    public var findings: [Finding]
    /// Rooms the truth or the receiver names.
    public var rooms: Int
    /// Users the rooms hold at the end of the truth.
    public var members: Int
    /// The receiver's counts by the truth: emitted, delivered, lost, dropped, unsettled, duplicates, late.
    public var counts: [String: Int]
    /// Which receiver's deliveries were read.
    public var receiver: String?

    /// Whether the receiver's lists match the truth.
    public var matches: Bool { findings.isEmpty }

    /// Checks `view` (`{"rooms": {"room": ["user", …]}}`) against `truth` (JSON Lines), for the deliveries to
    /// `receiver` (needed when the truth has several).
    ///
    /// - Throws: ``CallbackAuditError`` naming the line or key that is not what it should be.
    public init(truth: [UInt8], view: [UInt8], receiver: String? = nil) throws(CallbackAuditError) {
        struct Change {
            let id: UInt64
            let joined: Bool
            let atMs: Int64
        }
        var members: [String: Set<String>] = [:]
        var last: [String: [String: Change]] = [:]
        var userCallbacks: [String: [String: [UInt64]]] = [:]
        var receivers: Set<String> = []
        var marks: [String: [UInt64: [String]]] = [:]
        var outcomes: [String: [UInt64: String]] = [:]
        var emitted = 0
        var lineNumber = 0
        var start = 0
        while start < truth.count {
            let end = truth[start...].firstIndex(of: 0x0A) ?? truth.count
            lineNumber += 1
            defer { start = end + 1 }
            let line = truth[start..<end]
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x0D || $0 == 0x09 }) { continue }
            guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] else {
                throw .truth(line: lineNumber, "not a JSON object")
            }
            guard let id = (object["id"] as? NSNumber)?.uint64Value, let t = (object["t"] as? NSNumber)?.int64Value
            else { throw .truth(line: lineNumber, #"no "id" and "t" numbers"#) }
            if let event = object["event"] as? String {
                guard let room = object["room"] as? String else { throw .truth(line: lineNumber, #"no "room""#) }
                emitted += 1
                switch event {
                case "join", "leave":
                    guard let user = object["user"] as? String else { throw .truth(line: lineNumber, #"no "user""#) }
                    let joined = event == "join"
                    if joined {
                        members[room, default: []].insert(user)
                    } else {
                        members[room]?.remove(user)
                    }
                    last[room, default: [:]][user] = Change(id: id, joined: joined, atMs: t)
                    userCallbacks[room, default: [:]][user, default: []].append(id)
                case "role":
                    // The member stays in the room, in another role.
                    guard object["user"] is String else { throw .truth(line: lineNumber, #"no "user""#) }
                case "create", "destroy":
                    if members[room] == nil { members[room] = [] }
                default:
                    throw .truth(line: lineNumber, "unknown event '\(event)'")
                }
            } else if let to = object["receiver"] as? String {
                receivers.insert(to)
                if let mark = object["mark"] as? String {
                    let delay = (object["delay"] as? NSNumber)?.doubleValue ?? 0
                    marks[to, default: [:]][id, default: []].append(
                        mark == "duplicate"
                            ? "sent twice (again after \(Self.seconds(delay)))"
                            : "held back \(Self.seconds(delay))"
                    )
                } else if let outcome = object["outcome"] as? String {
                    let copy = object["copy"] as? String ?? "original"
                    guard copy == "original" else { continue }
                    let cause = object["cause"] as? String
                    let attempts = (object["attempts"] as? NSNumber)?.intValue
                    outcomes[to, default: [:]][id] =
                        outcome
                        + (cause.map { " (\($0)" + (attempts.map { ", \($0) attempts)" } ?? ")") } ?? "")
                } else {
                    throw .truth(line: lineNumber, #"a receiver's line with no "mark" or "outcome""#)
                }
            } else {
                throw .truth(line: lineNumber, #"neither an "event" nor a "receiver" line"#)
            }
        }
        if let receiver {
            guard receivers.contains(receiver) || receivers.isEmpty else {
                throw .receiver(
                    "'\(receiver)' is not in the truth; it has \(receivers.sorted().joined(separator: ", "))"
                )
            }
            self.receiver = receiver
        } else if receivers.count > 1 {
            throw .receiver("the truth has several receivers; name one: \(receivers.sorted().joined(separator: ", "))")
        } else {
            self.receiver = receivers.first
        }
        let chosen = self.receiver ?? ""
        let delivered = outcomes[chosen] ?? [:]
        let marked = marks[chosen] ?? [:]

        // The receiver's view.
        guard let object = try? JSONSerialization.jsonObject(with: Data(view)) as? [String: Any] else {
            throw .view("not a JSON object")
        }
        guard let roomsObject = object["rooms"] as? [String: Any] else { throw .view(#"no "rooms" object"#) }
        var held: [String: Set<String>] = [:]
        for (room, value) in roomsObject {
            guard let users = value as? [Any], users.allSatisfy({ $0 is String }) else {
                throw .view("rooms.\(room): expected an array of user IDs")
            }
            held[room] = Set(users.compactMap { $0 as? String })
        }

        var findings: [Finding] = []
        let allRooms = Set(members.keys).union(held.keys)
        for room in allRooms.sorted() {
            let truthUsers = members[room] ?? []
            let viewUsers = held[room] ?? []
            for user in viewUsers.union(truthUsers).sorted() where truthUsers.contains(user) != viewUsers.contains(user)
            {
                let kind: Finding.Kind = viewUsers.contains(user) ? .wronglyHeld : .wronglyDropped
                guard let change = last[room]?[user] else {
                    findings.append(
                        Finding(
                            room: room,
                            user: user,
                            kind: kind,
                            sinceMs: 0,
                            callbackID: 0,
                            blame: .receiver,
                            detail: "the truth has no callback about this user in this room"
                        )
                    )
                    continue
                }
                let ids = userCallbacks[room]?[user] ?? []
                let lastOutcome = delivered[change.id]
                let disordered = ids.filter { marked[$0] != nil }
                let blame: Finding.Blame
                var detail = "its \(change.joined ? "join" : "leave") #\(change.id) "
                switch lastOutcome {
                case nil:
                    blame = .unsettled
                    detail += "was still on its way when the truth ends"
                case let outcome? where !outcome.hasPrefix("delivered"):
                    blame = .lost
                    detail += "was never delivered: \(outcome)"
                default:
                    blame = disordered.isEmpty ? .receiver : .disorder
                    detail += "was delivered"
                }
                if !disordered.isEmpty {
                    detail +=
                        "; of its callbacks, "
                        + disordered.map { "#\($0) was \(marked[$0]!.joined(separator: " and "))" }
                        .joined(separator: ", ")
                }
                findings.append(
                    Finding(
                        room: room,
                        user: user,
                        kind: kind,
                        sinceMs: change.atMs,
                        callbackID: change.id,
                        blame: blame,
                        detail: detail
                    )
                )
            }
        }
        self.findings = findings
        rooms = allRooms.count
        self.members = members.values.reduce(0) { $0 + $1.count }
        let values = Array(delivered.values)
        let allMarks = marked.values.flatMap { $0 }
        counts = [
            "emitted": emitted,
            "delivered": values.filter { $0.hasPrefix("delivered") }.count,
            "lost": values.filter { $0.hasPrefix("lost") }.count,
            "dropped": values.filter { $0.hasPrefix("dropped") }.count,
            "duplicates": allMarks.filter { $0.hasPrefix("sent twice") }.count,
            "late": allMarks.filter { $0.hasPrefix("held back") }.count,
        ]
    }

    /// The audit in words: a summary, then each room's findings.
    public var text: String {
        var lines: [String] = []
        let counts = ["emitted", "delivered", "lost", "dropped", "duplicates", "late"].map {
            "\(self.counts[$0] ?? 0) \($0)"
        }
        lines.append(
            "callbacks \(receiver.map { "to \($0)" } ?? "(no deliveries in the truth)"): "
                + counts.joined(separator: ", ")
        )
        let wrongRooms = Set(findings.map(\.room))
        if findings.isEmpty {
            lines.append("verdict: the receiver's lists match the truth in all \(rooms) rooms (\(members) members)")
        } else {
            lines.append(
                "verdict: the receiver's lists are wrong in \(wrongRooms.count) of \(rooms) rooms — "
                    + "\(findings.filter { $0.kind == .wronglyHeld }.count) users wrongly held, "
                    + "\(findings.filter { $0.kind == .wronglyDropped }.count) wrongly dropped"
            )
            let blames = Dictionary(grouping: findings, by: \.blame)
            lines.append(
                "  by cause: "
                    + [Finding.Blame.disorder, .receiver, .lost, .unsettled].compactMap { blame in
                        blames[blame].map { "\(blame.rawValue) \($0.count)" }
                    }.joined(separator: ", ")
            )
            for room in wrongRooms.sorted() {
                lines.append("room \(room):")
                for finding in findings where finding.room == room {
                    let verb = finding.kind == .wronglyHeld ? "holds" : "lacks"
                    lines.append(
                        "  \(verb) \(finding.user) since \(Self.timestamp(finding.sinceMs)) [\(finding.blame.rawValue)]: "
                            + finding.detail
                    )
                }
            }
        }
        return lines.joined(separator: "\n")
    }

    /// The audit as JSON.
    public var json: [String: Any] {
        [
            "matches": matches,
            "rooms": rooms,
            "members": members,
            "receiver": receiver as Any,
            "counts": counts,
            "findings": findings.map {
                [
                    "room": $0.room, "user": $0.user, "kind": $0.kind.rawValue, "sinceMs": $0.sinceMs,
                    "callback": $0.callbackID, "blame": $0.blame.rawValue, "detail": $0.detail,
                ] as [String: Any]
            },
        ]
    }

    private static func seconds(_ value: Double) -> String {
        String(format: "%.1f s", value)
    }

    private static func timestamp(_ ms: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }
}

/// Why a callback audit could not be made.
public enum CallbackAuditError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A line of the truth is not what `serve --callback-truth` writes.
    case truth(line: Int, String)
    /// The receiver's view is not `{"rooms": {"room": ["user", …]}}`.
    case view(String)
    /// The receiver named is not in the truth, or none was named among several.
    case receiver(String)

    public var description: String {
        switch self {
        case .truth(let line, let message): "the truth, line \(line): \(message)"
        case .view(let message): "the receiver's view: \(message)"
        case .receiver(let message): "--receiver: \(message)"
        }
    }
}
