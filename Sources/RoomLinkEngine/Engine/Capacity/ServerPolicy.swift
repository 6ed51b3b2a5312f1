/// How the simulated server's capacity is modelled (contract §9): how many nodes the rooms are spread over, what each
/// node can do, and how it protects itself. The default — one node, no capacity, no admission control — is the
/// server of contract §§2–4, whose every login takes the dialect's `loginProcessing` however many arrive.
///
/// In a scenario this is the `"server"` object; on the command line, `--server-nodes`, `--server-capacity`,
/// `--admission`, `--max-queue` and `--shed-expired`.
public struct ServerPolicy: Sendable, Hashable {
    /// Server nodes; a room lives on node `fnv1a(roomID) mod nodes`, whatever the run's loops or shards.
    public var nodes: Int
    /// Each node's workers and service costs; `nil`: unlimited (no queue).
    public var capacity: ServerCapacity?
    /// The token bucket on each node's logins; `nil`: every login is admitted.
    public var admission: AdmissionPolicy?
    /// The longest a login may expect to wait for a worker: one that would wait longer is refused as busy. Needs a
    /// capacity (an unlimited node has no queue).
    public var maxQueue: Duration?
    /// Whether a node drops a login whose client stopped waiting before a worker took it up (deadline-aware
    /// shedding), instead of doing the work for nobody.
    public var shedExpired: Bool

    /// A policy; the defaults are the unlimited server.
    public init(
        nodes: Int = 1,
        capacity: ServerCapacity? = nil,
        admission: AdmissionPolicy? = nil,
        maxQueue: Duration? = nil,
        shedExpired: Bool = false
    ) {
        self.nodes = nodes
        self.capacity = capacity
        self.admission = admission
        self.maxQueue = maxQueue
        self.shedExpired = shedExpired
    }

    /// The unlimited server of contract §§2–4.
    public static let unlimited = ServerPolicy()

    /// Whether nodes model anything: a capacity, admission control or a queue bound. Without one the server takes
    /// no lock and keeps no statistics per message, and a run is exactly what it was before capacities existed.
    public var isModelled: Bool { capacity != nil || admission != nil || maxQueue != nil }

    /// The node that serves `roomID`.
    public func node(of roomID: String) -> Int {
        nodes <= 1 ? 0 : Int(StableHash.fnv1a(roomID) % UInt64(nodes))
    }

    /// Checks the combination, naming the field at fault under `path` (`server.nodes`).
    public func validate(at path: String = "server") throws(RoomLinkError) {
        func field(_ name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }
        guard (1...ServerPolicy.maxNodes).contains(nodes) else {
            throw .invalidArgument(field("nodes"), "1 … \(Self.maxNodes) nodes", got: "\(nodes)")
        }
        if let maxQueue {
            guard capacity != nil else {
                throw .invalidArgument(
                    field("maxQueue"),
                    "a server capacity to bound the queue of (an unlimited node has none)",
                    got: maxQueue.roomLinkText
                )
            }
            guard maxQueue > .zero else {
                throw .invalidArgument(field("maxQueue"), "a positive duration", got: "0")
            }
        }
        if shedExpired, capacity == nil {
            throw .invalidArgument(
                field("shedExpired"),
                "a server capacity (only a queued login can expire before it is served)",
                got: "true"
            )
        }
    }

    /// The scenario's `"server"` object as JSON text, which the scenario reader reads back; `nil` for the default.
    public var jsonText: String? {
        guard self != .unlimited else { return nil }
        var fields = ["\"nodes\": \(nodes)"]
        if let capacity { fields.append("\"capacity\": \"\(capacity.text)\"") }
        if let admission { fields.append("\"admission\": \"\(admission.text)\"") }
        if let maxQueue { fields.append("\"maxQueue\": \"\(maxQueue.roomLinkText)\"") }
        if shedExpired { fields.append("\"shedExpired\": true") }
        return "{ " + fields.joined(separator: ", ") + " }"
    }

    /// The most nodes a run may have: each keeps a per-second series, and a thousand is more than any storm needs.
    public static let maxNodes = 1_000
}
