/// A set of loops that actors are spread over: the libevent loops of a process, or one simulation.
public protocol RuntimeLoopGroup: Sendable {
    /// Every loop of the group.
    var loops: [any RuntimeLoop] { get }

    /// The current time on the group's clock, in scenario time; the same on all its loops.
    var now: RuntimeInstant { get }
}

extension RuntimeLoopGroup {
    /// The loop for an identifier, stable across runs and processes (FNV-1a of the UTF-8 bytes).
    ///
    /// Use it to place a client or room actor: the same ID always lands on the same loop of a group of that size.
    public func loop(for id: String) -> any RuntimeLoop {
        loop(forHash: StableHash.fnv1a(id))
    }

    /// The loop for a numeric identifier, stable across runs.
    public func loop(forHash hash: UInt64) -> any RuntimeLoop {
        let all = loops
        return all[Int(hash % UInt64(all.count))]
    }
}
