/// What a LiveKit `RoomDelegate` receives (contract §4).
public enum LiveKitEvent: Sendable, Equatable {
    /// `room(_:didUpdateConnectionState:from:)`.
    case connectionStateChanged(room: String, state: LiveKitConnectionState, from: LiveKitConnectionState)
    /// `room(_:didStartReconnectWithMode:)`: at the start of a reconnection (quick), and when it turns full.
    case reconnectStarted(room: String, mode: ReconnectMode)
    /// `room(_:didCompleteReconnectWithMode:)`.
    case reconnectCompleted(room: String, mode: ReconnectMode)
    /// `room(_:participantDidConnect:)`.
    case participantConnected(room: String, peer: String)
    /// `room(_:participantDidDisconnect:)`.
    case participantDisconnected(room: String, peer: String)
    /// `room(_:didDisconnectWithError:)` with the `DisconnectReason`.
    case disconnected(room: String, reason: LiveKitDisconnectReason)
}

extension LiveKitEvent: EventLogRepresentable {
    public var eventLogLine: EventLogLine {
        switch self {
        case .connectionStateChanged(let room, let state, let from):
            EventLogLine(
                type: "connectionState",
                room: room,
                fields: [("state", .string(state.rawValue)), ("from", .string(from.rawValue))]
            )
        case .reconnectStarted(let room, let mode):
            EventLogLine(type: "reconnectStarted", room: room, fields: [("mode", .string(mode.rawValue))])
        case .reconnectCompleted(let room, let mode):
            EventLogLine(type: "reconnectCompleted", room: room, fields: [("mode", .string(mode.rawValue))])
        case .participantConnected(let room, let peer):
            EventLogLine(type: "participantConnected", room: room, fields: [("peer", .string(peer))])
        case .participantDisconnected(let room, let peer):
            EventLogLine(type: "participantDisconnected", room: room, fields: [("peer", .string(peer))])
        case .disconnected(let room, let reason):
            EventLogLine(type: "disconnected", room: room, fields: [("reason", .string(reason.description))])
        }
    }
}
