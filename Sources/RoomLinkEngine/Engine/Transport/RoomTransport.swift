/// A transport that serves both sides in one process: clients send on it and servers answer on it. RoomLink's
/// simulated network (`SimulatedNetwork`) is one; a socket transport splits into a client side (in the load
/// generator or the app) and a server side (in `roomlink serve`).
public typealias RoomTransport = ClientTransport & ServerTransport
