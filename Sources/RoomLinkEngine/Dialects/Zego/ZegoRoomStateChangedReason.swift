/// Why a ZEGO client's room state changed: the `reason` of `onRoomStateChanged` (contract §2).
///
/// The raw values are ZEGO's. `logout` is also the state before any login. In the event log a reason is written
/// as its lower-camel-case name (`"logined"`, `"reconnectFailed"`).
public enum ZegoRoomStateChangedReason: Int, Sendable, CaseIterable, CustomStringConvertible {
    /// `loginRoom` was called, or a switch began; the SDK is connecting.
    case logining = 0
    /// Logged in; `extendedData` carries `room_session_id`.
    case logined = 1
    /// Login failed (bad token 1002033, member cap 1002034, network timeout 1002053, …); no retry.
    case loginFailed = 2
    /// The connection was interrupted (1002051); the SDK retries.
    case reconnecting = 3
    /// A retry succeeded (code 0).
    case reconnected = 4
    /// Retrying gave up at the retry timeout (1002053); the user is no longer in the room.
    case reconnectFailed = 5
    /// The server removed the user: logged in elsewhere (1002050), admin kick (1002055), token expired (1002056).
    case kickOut = 6
    /// Logged out, or never logged in.
    case logout = 7
    /// `logoutRoom` / `switchRoom` named a room the user is not in (multi-room mode, 1002002).
    case logoutFailed = 8

    /// The name the event log writes.
    public var description: String {
        switch self {
        case .logining: "logining"
        case .logined: "logined"
        case .loginFailed: "loginFailed"
        case .reconnecting: "reconnecting"
        case .reconnected: "reconnected"
        case .reconnectFailed: "reconnectFailed"
        case .kickOut: "kickOut"
        case .logout: "logout"
        case .logoutFailed: "logoutFailed"
        }
    }
}
