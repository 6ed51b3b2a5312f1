/// RoomLink's simulated transport: every message crosses a ``NetworkModel`` (seeded latency, jitter and loss, and a
/// link state per client) and is delivered as a timer on the receiver's loop.
///
/// Change a client's link with ``setLink(_:for:)``: `down` refuses its messages and tells it at once, `blackhole`
/// loses them silently (only missed heartbeats reveal it), `up` restores it and tells it. Timers, not threads, carry
/// the latency, so the same network runs in virtual and in real time.
///
/// Safe to use from any loop: the model is guarded by a lock held only to draw a message's fate.
public final class SimulatedNetwork: RoomTransport {
    private let model: LockedBox<NetworkModel>
    private let directory: LockedBox<WeakDirectory>

    private struct WeakDirectory {
        weak var value: (any RoomDirectory)?
    }

    /// Creates a network with `conditions`, drawing every message's fate from streams derived from `seed`.
    public init(conditions: Scenario.Network = .init(), seed: UInt64 = 0) {
        model = LockedBox(NetworkModel(conditions: conditions, seed: seed))
        directory = LockedBox(WeakDirectory())
    }

    /// Connects the network to the servers it carries messages to. A ``RoomServer`` does this when it is created
    /// with this network; the network holds it weakly, so the server's owner decides its lifetime.
    public func attach(_ rooms: any RoomDirectory) {
        directory.withLock { $0.value = rooms }
    }

    /// The link state of `client`.
    public func link(of client: any ClientEndpoint) -> LinkState {
        model.withLock { $0.link(of: client.endpointID) }
    }

    /// Sets the link of `client` and tells the client (at once when called on its loop, otherwise as soon as its
    /// loop runs). Setting the state it already has does nothing.
    public func setLink(_ state: LinkState, for client: any ClientEndpoint) {
        let changed = model.withLock { model -> Bool in
            guard model.link(of: client.endpointID) != state else { return false }
            model.setLink(state, for: client.endpointID)
            return true
        }
        guard changed else { return }
        if client.loop.isInServiceThread {
            client.linkChanged(to: state)
        } else {
            _ = try? client.loop.schedule(after: .zero) { client.linkChanged(to: state) }
        }
    }

    public func send(_ message: ClientMessage, from client: any ClientEndpoint, to roomID: String) -> SendOutcome {
        guard let rooms = directory.withLock({ $0.value }) else { return .refused }
        let transit: Transit
        if case .connectionClosed = message {
            // The server sees the socket close: not a message the dead link must carry.
            transit = .delivered(after: model.withLock { $0.conditions.latency })
        } else {
            transit = model.withLock { $0.transit(for: client.endpointID) }
        }
        switch transit {
        case .refused: return .refused
        case .lost: return .sent
        case .delivered(let delay):
            let room = rooms.room(roomID)
            _ = try? room.loop.schedule(after: delay) { room.deliver(message, from: client) }
            return .sent
        }
    }

    public func send(_ message: ServerMessage, from roomID: String, to client: any ClientEndpoint) {
        guard case .delivered(let delay) = model.withLock({ $0.transit(for: client.endpointID) }) else { return }
        _ = try? client.loop.schedule(after: delay) { client.deliver(message, from: roomID) }
    }
}
