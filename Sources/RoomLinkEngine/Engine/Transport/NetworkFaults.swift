/// The faults a transport can inject: what scenarios and load tests do to the path between clients and servers.
/// Only a transport that controls the path adopts it — `SimulatedNetwork`, and a proxy in front of a real
/// server — and a scenario's outages and partitions need one.
public protocol NetworkFaults: AnyObject, Sendable {
    /// The link state of `client`.
    func link(of client: any ClientEndpoint) -> LinkState
    /// Sets the link of `client` and tells the client (``ClientEndpoint/linkChanged(to:)``) as soon as its loop
    /// runs. `down` refuses its messages, `blackhole` loses them silently, `up` restores them. Setting the state it
    /// already has does nothing.
    func setLink(_ state: LinkState, for client: any ClientEndpoint)
    /// Whether `roomID` is cut off from its clients.
    func isPartitioned(_ roomID: String) -> Bool
    /// Cuts `roomID` off from every client (`true`) or heals it (`false`): messages both ways are lost, and only
    /// silence reveals it (to a client that is a ``RouteObserver``, its data stopping). Setting the state the room
    /// already has does nothing.
    func setPartitioned(_ cutOff: Bool, room roomID: String)
    /// Messages the path has carried, or will (both directions): a run's message count.
    var deliveredCount: Int { get }
}
