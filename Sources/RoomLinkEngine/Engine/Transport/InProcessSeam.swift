import RoomLinkRuntime

// The seam between the engine and a network that runs in the same process as its clients and rooms.
//
// The engine defines these protocols and never names what implements them: a client and a room reach an in-process
// network, and a loop's batches of timers, through them alone. They are package-level, so an embedder's transport
// sees none of them (its four requirements are `ClientTransport`'s), and each is asked for once — when an environment,
// a room or a heartbeat starts — not on every message.

/// A client an in-process transport carries with no socket between it and its room: the engine's ``RoomClient``.
///
/// It is its own channel as the server sees it (a room answers on it, ``ClientChannel/send(_:from:)``), and it keeps
/// the link state its transport gives it, so that a network asking for the link of the sender of every message — in
/// a storm, millions — reads a byte of the client it already holds instead of a table of millions behind a lock.
package protocol InProcessClient: ClientEndpoint, ClientChannel {
    /// The identity of ``ClientEndpoint/loop``, read without a retain of the loop: what a network compares to route a
    /// message (the loop was retained and released a dozen times a message).
    var loopIdentity: ObjectIdentifier { get }
    /// The link state the client's transport keeps in it (`up` until the transport sets another).
    var keptLinkState: LinkState { get }
    /// Sets ``keptLinkState`` and returns the state it replaced, atomically (any thread may set it).
    func exchangeKeptLinkState(_ state: LinkState) -> LinkState
}

/// A transport that carries ``InProcessClient``s itself: the in-process network.
///
/// An environment asks its transport once whether it is one (`RoomClient.Environment`); its clients then send through
/// it as what they are, with no cast on any message, and a room's answer to such a client — its own channel — comes
/// back through the client's transport (``carry(_:from:to:)``).
package protocol InProcessTransport: ClientTransport {
    /// ``ClientTransport/send(_:on:from:)`` from a client of the engine's.
    func send(_ message: ClientMessage, on channel: any RoomChannel, from client: any InProcessClient) -> SendOutcome
    /// ``ClientTransport/closed(_:session:from:)`` from a client of the engine's.
    func closed(_ channel: any RoomChannel, session: SessionID, from client: any InProcessClient)
    /// Carries `message` from `room` to `client`, which is its own channel: the room answered on it.
    func carry(_ message: ServerMessage, from room: any RoomEndpoint, to client: any InProcessClient)
}

/// A loop that keeps the engine's fixed-delay timers in batches of its own, cheaper than a timer each, whose batches
/// come out in exactly the order its timers would have fired. The engine asks a loop
/// whether it is one when a heartbeat starts and when a room is made; on any other loop it arms timers.
package protocol BatchingLoop: RuntimeLoop {
    /// The batch that carries heartbeats of `interval` on this loop, or `nil` when it keeps none of that interval
    /// (then the client arms a periodic timer).
    func heartbeatBatch(every interval: Duration) -> (any HeartbeatBatch)?
    /// The batch that carries logins through a server's processing time of `delay` on this loop, or `nil` (then the
    /// room arms a timer for each).
    func loginBatch(after delay: Duration) -> (any LoginBatch)?
}

/// Heartbeats that all beat with one period on one loop.
package protocol HeartbeatBatch: AnyObject {
    /// Adds the heartbeat `beat`, whose client sends it towards `room` (the channel of the room it beats to, when it
    /// has one). It comes out a period from now, and again every period while ``BatchedHeartbeat/client`` answers
    /// that it beats on. `false` when the batch cannot take it (off the loop's thread): arm a timer instead.
    func add(_ beat: BatchedHeartbeat, towards room: (any RoomChannel)?) -> Bool
}

/// A heartbeat in a ``HeartbeatBatch``: its client, and the token it was started with (a client that stops beating or
/// starts again has another, so the batch's copy stops there).
package struct BatchedHeartbeat: Sendable {
    package let client: any HeartbeatBeater
    package let token: UInt64

    package init(client: any HeartbeatBeater, token: UInt64) {
        self.client = client
        self.token = token
    }
}

/// What a batched heartbeat calls when it comes out.
package protocol HeartbeatBeater: AnyObject, Sendable {
    /// Beats, if the client still beats with `token`, on its loop's thread; answers whether it beats on.
    func beatFromBatch(token: UInt64) -> Bool
}

/// Logins that all wait one server's processing time on one loop.
package protocol LoginBatch: AnyObject {
    /// Adds `login`, which comes out (``ServerRoom/PendingLogin/process()``) when its processing time is up. `false`
    /// when the batch cannot take it: arm a timer instead.
    func add(_ login: ServerRoom.PendingLogin) -> Bool
}
