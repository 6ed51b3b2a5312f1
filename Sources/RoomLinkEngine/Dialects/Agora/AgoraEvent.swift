/// What an Agora client's delegate receives (contract §3): `connectionChangedToState`, `didJoinChannel`,
/// `didRejoinChannel`, `rtcEngineConnectionDidLost`, `didJoinedOfUid`, `didOfflineOfUid` and
/// `tokenPrivilegeWillExpire`.
public enum AgoraEvent: Sendable, Equatable {
    /// `connectionChangedToState(state, reason)`.
    case connectionStateChanged(channel: String, state: AgoraConnectionState, reason: AgoraConnectionChangedReason)
    /// `didJoinChannel`.
    case joinChannelSuccess(channel: String)
    /// `didRejoinChannel`.
    case rejoinChannelSuccess(channel: String)
    /// `rtcEngineConnectionDidLost`: still no connection 10 s after `interrupted`.
    case connectionLost(channel: String)
    /// `didJoinedOfUid`: a remote user joined (or became visible).
    case userJoined(channel: String, peer: String)
    /// `didOfflineOfUid`: a remote user left, dropped, or became audience.
    case userOffline(channel: String, peer: String, reason: AgoraUserOfflineReason)
    /// `tokenPrivilegeWillExpire`: renew within the grace time or the token expires (`failed/tokenExpired`).
    case tokenPrivilegeWillExpire(channel: String)
}

extension AgoraEvent: EventLogRepresentable {
    public var eventLogLine: EventLogLine {
        switch self {
        case .connectionStateChanged(let channel, let state, let reason):
            EventLogLine(
                type: "connectionState",
                room: channel,
                fields: [("state", .string(state.description)), ("reason", .string(reason.description))]
            )
        case .joinChannelSuccess(let channel): EventLogLine(type: "joinChannelSuccess", room: channel)
        case .rejoinChannelSuccess(let channel): EventLogLine(type: "rejoinChannelSuccess", room: channel)
        case .connectionLost(let channel): EventLogLine(type: "connectionLost", room: channel)
        case .userJoined(let channel, let peer):
            EventLogLine(type: "userJoined", room: channel, fields: [("peer", .string(peer))])
        case .userOffline(let channel, let peer, let reason):
            EventLogLine(
                type: "userOffline",
                room: channel,
                fields: [("peer", .string(peer)), ("reason", .string(reason.description))]
            )
        case .tokenPrivilegeWillExpire(let channel): EventLogLine(type: "tokenPrivilegeWillExpire", room: channel)
        }
    }
}
