import ArgumentParser
import RoomLink

/// The simulated server's nodes, capacity and admission control (contract §9), for `run` and `load`; given flags
/// override the scenario's `"server"` object.
struct ServerOptions: ParsableArguments {
    @Option(help: "Server nodes the rooms are spread over (by a stable hash of the room ID).")
    var serverNodes: Int?

    @Option(
        help: ArgumentHelp(
            "Each node's workers and costs: workers=N,login=D,heartbeat=D,other=D (any of them).",
            valueName: "capacity"
        )
    )
    var serverCapacity: String?

    @Option(help: ArgumentHelp("A token bucket on each node's logins: rate=N/s[,burst=N].", valueName: "bucket"))
    var admission: String?

    @Option(help: "Refuse (busy) a login that would wait longer than this for a worker; needs --server-capacity.")
    var maxQueue: DurationArgument?

    @Flag(help: "Drop a queued login whose client stopped waiting before a worker took it up (needs a capacity).")
    var shedExpired = false

    /// The flag of each server field the library names in its errors.
    static let flags = [
        "server.nodes": "--server-nodes", "server.maxQueue": "--max-queue", "server.shedExpired": "--shed-expired",
    ]

    /// `policy` with the given flags applied, checked.
    func apply(to policy: ServerPolicy) throws(RoomLinkError) -> ServerPolicy {
        var policy = policy
        if let serverNodes { policy.nodes = serverNodes }
        if let serverCapacity {
            policy.capacity = try ServerCapacity(parsing: serverCapacity, field: "--server-capacity")
        }
        if let admission { policy.admission = try AdmissionPolicy(parsing: admission, field: "--admission") }
        if let maxQueue { policy.maxQueue = maxQueue.duration }
        if shedExpired { policy.shedExpired = true }
        do {
            try policy.validate()
        } catch {
            throw error.naming(fields: Self.flags)
        }
        return policy
    }
}
