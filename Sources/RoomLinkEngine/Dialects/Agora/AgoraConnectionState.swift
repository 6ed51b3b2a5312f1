/// Agora's `CONNECTION_STATE_TYPE` (contract §3), logged as its lower-camel-case name.
public enum AgoraConnectionState: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case disconnected = 1
    case connecting = 2
    case connected = 3
    case reconnecting = 4
    case failed = 5

    public var description: String {
        switch self {
        case .disconnected: "disconnected"
        case .connecting: "connecting"
        case .connected: "connected"
        case .reconnecting: "reconnecting"
        case .failed: "failed"
        }
    }
}

/// Agora's `CONNECTION_CHANGED_REASON_TYPE` (contract §3), with its raw values, logged as its lower-camel-case name.
public enum AgoraConnectionChangedReason: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Trying to join (`connecting`).
    case connecting = 0
    /// Joined (`connected`).
    case joinSuccess = 1
    /// No data from the server for 4 s (`reconnecting`).
    case interrupted = 2
    /// An admin banned the user (`failed`).
    case bannedByServer = 3
    /// Still not back 20 minutes after the interruption: no more retries (`failed`).
    case joinFailed = 4
    /// The app left (`disconnected`).
    case leaveChannel = 5
    /// The App ID is not a valid one (`failed`).
    case invalidAppId = 6
    /// The channel name is not valid (`failed`).
    case invalidChannelName = 7
    /// The token is not valid (`disconnected`).
    case invalidToken = 8
    /// The token expired (`failed`).
    case tokenExpired = 9
    /// The server refused the join: the client is already in a channel (`failed`).
    case rejectedByServer = 10
    /// Reconnecting because a cloud proxy was set (`reconnecting`).
    case settingProxyServer = 11
    /// A token renewed while reconnecting changes the connection (`reconnecting`).
    case renewToken = 12
    /// The device's IP address changed (`reconnecting`).
    case clientIpAddressChanged = 13
    /// The server no longer keeps the session alive (`reconnecting`).
    case keepAliveTimeout = 14
    /// Back in the channel after an interruption (`connected`).
    case rejoinSuccess = 15
    /// Still no connection 10 s after `interrupted` (`reconnecting`).
    case lost = 16
    /// The same user ID joined the channel elsewhere; this older session is out (`failed`).
    case sameUidLogin = 19

    public var description: String {
        switch self {
        case .connecting: "connecting"
        case .joinSuccess: "joinSuccess"
        case .interrupted: "interrupted"
        case .bannedByServer: "bannedByServer"
        case .joinFailed: "joinFailed"
        case .leaveChannel: "leaveChannel"
        case .invalidAppId: "invalidAppId"
        case .invalidChannelName: "invalidChannelName"
        case .invalidToken: "invalidToken"
        case .tokenExpired: "tokenExpired"
        case .rejectedByServer: "rejectedByServer"
        case .settingProxyServer: "settingProxyServer"
        case .renewToken: "renewToken"
        case .clientIpAddressChanged: "clientIpAddressChanged"
        case .keepAliveTimeout: "keepAliveTimeout"
        case .rejoinSuccess: "rejoinSuccess"
        case .lost: "lost"
        case .sameUidLogin: "sameUidLogin"
        }
    }

    /// The state a change for this reason enters.
    public var state: AgoraConnectionState {
        switch self {
        case .connecting: .connecting
        case .joinSuccess, .rejoinSuccess: .connected
        case .interrupted, .settingProxyServer, .renewToken, .clientIpAddressChanged, .keepAliveTimeout, .lost:
            .reconnecting
        case .leaveChannel, .invalidToken: .disconnected
        case .bannedByServer, .joinFailed, .invalidAppId, .invalidChannelName, .tokenExpired, .rejectedByServer,
            .sameUidLogin:
            .failed
        }
    }
}

/// Agora's `USER_OFFLINE_REASON_TYPE`: why a remote user went offline.
public enum AgoraUserOfflineReason: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The user left.
    case quit = 0
    /// No data from the user for 20 s (or the server removed it).
    case dropped = 1
    /// A broadcaster switched to audience.
    case becomeAudience = 2

    public var description: String {
        switch self {
        case .quit: "quit"
        case .dropped: "dropped"
        case .becomeAudience: "becomeAudience"
        }
    }
}

/// Agora's client role in a live broadcast: audience members are not seen by others.
public enum AgoraClientRole: String, Sendable, Hashable, CaseIterable {
    case broadcaster, audience
}
