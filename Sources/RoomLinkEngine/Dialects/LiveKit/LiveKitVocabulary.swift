/// LiveKit's `ConnectionState` (contract §4), logged as its name.
public enum LiveKitConnectionState: String, Sendable, Hashable, CaseIterable {
    case disconnected, connecting, connected, reconnecting, disconnecting
}

/// LiveKit's `DisconnectReason` (the protocol's values), logged as its lower-camel-case name.
public enum LiveKitDisconnectReason: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case unknownReason = 0
    /// The app called `disconnect()`.
    case clientInitiated = 1
    /// Another participant joined with the same identity.
    case duplicateIdentity = 2
    case serverShutdown = 3
    /// The server removed the participant (an admin's `RemoveParticipant`, or its token expired).
    case participantRemoved = 4
    case roomDeleted = 5
    case stateMismatch = 6
    /// The connection could not be established (a first connect that failed, or a refused token).
    case joinFailure = 7
    case migration = 8
    case signalClose = 9
    case roomClosed = 10
    /// The reconnection's attempts ran out.
    case connectionTimeout = 14

    public var description: String {
        switch self {
        case .unknownReason: "unknownReason"
        case .clientInitiated: "clientInitiated"
        case .duplicateIdentity: "duplicateIdentity"
        case .serverShutdown: "serverShutdown"
        case .participantRemoved: "participantRemoved"
        case .roomDeleted: "roomDeleted"
        case .stateMismatch: "stateMismatch"
        case .joinFailure: "joinFailure"
        case .migration: "migration"
        case .signalClose: "signalClose"
        case .roomClosed: "roomClosed"
        case .connectionTimeout: "connectionTimeout"
        }
    }
}

/// A LiveKit call the room's state does not allow.
public enum LiveKitError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `connect` while the room is not disconnected (it is in, or joining, `room`).
    case alreadyConnected(room: String)
    /// The client was shut down.
    case shutDown

    public var description: String {
        switch self {
        case .alreadyConnected(let room):
            "connect: expected a disconnected room, but the client is connected (or connecting) to \(room)"
        case .shutDown: "the client was shut down"
        }
    }
}
