/// The ZEGO Express dialect (contract §2): `onRoomStateChanged` reasons with their error codes, and
/// `onRoomUserUpdate` for users who asked for it.
///
/// Everything ZEGO-specific is here and in the vocabulary files next to it: the mapping of the engine's
/// transitions, the defaults (``ZegoTimings``, ``RetryPolicy/zegoDefault``), and the API (``ZegoClient``).
public enum Zego: RoomDialect {
    public typealias Event = ZegoEvent
    public typealias Timings = ZegoTimings

    public static let name = DialectName.zego
    public static var defaultRetryPolicy: RetryPolicy { .zegoDefault }
    public static let alwaysNotifiesPeers = false
    public static let firstJoinAttempts: Int? = nil
    /// ZEGO publishes no room-login code for an overloaded server; RoomLink uses 1002099 (`RoomInnerError`, "room
    /// login failed due to internal system exceptions"), the code ZEGO's SDK gives a login the server side failed.
    public static let busyCode: Int64 = 1_002_099
    public static let reconnectsInModes = false

    public static func report(_ transition: RoomTransition, room: String, into emit: (ZegoEvent) -> Void) {
        func state(_ reason: ZegoRoomStateChangedReason, _ code: ZegoErrorCode, _ extended: [String: String] = [:]) {
            emit(.roomStateChanged(roomID: room, reason: reason, errorCode: code, extendedData: extended))
        }
        switch transition {
        case .joining: state(.logining, .success)
        case .joined(let roomSessionID): state(.logined, .success, ["room_session_id": roomSessionID])
        case .lost: state(.reconnecting, .connectionInterrupted)
        case .rejoined: state(.reconnected, .success)
        case .peersChanged(let change, let users, _):
            emit(.roomUserUpdate(roomID: room, update: change == .add ? .add : .delete, users: users))
        case .gaveUp(let phase): state(phase == .reconnecting ? .reconnectFailed : .loginFailed, .networkTimeout)
        case .rejected(.tokenInvalid, .reconnecting): state(.kickOut, .kickedByTokenExpiry)
        case .rejected(.tokenInvalid, _): state(.loginFailed, .tokenInvalid)
        case .rejected(.memberCapReached, .reconnecting): state(.reconnectFailed, .roomMemberCapReached)
        case .rejected(.memberCapReached, _): state(.loginFailed, .roomMemberCapReached)
        case .kicked(.duplicateLogin, _): state(.kickOut, .kickedByDuplicateLogin)
        case .kicked(.admin, _): state(.kickOut, .kickedByAdmin)
        case .kicked(.tokenExpired, _): state(.kickOut, .kickedByTokenExpiry)
        case .left: state(.logout, .success)
        case .tokenWillExpire(let remaining):
            emit(.roomTokenWillExpire(roomID: room, remainingSeconds: Int(remaining.seconds.rounded())))
        case .stillLost, .reconnectMode, .peersCleared, .tokenRenewedWhileReconnecting:
            return  // ZEGO has no callback for these
        }
    }

    public static let enginePath = EnginePath<Zego>.compiled

    public static func apply(_ call: AppCall, on client: isolated ZegoClient) {
        switch call {
        case .join(let room, let options): client.loginRoom(room, config: ZegoRoomConfig(options))
        case .leave(let room?): client.logoutRoom(room)
        case .leave(nil): client.logoutRoom()
        case .switchRoom(let from, let to): client.switchRoom(from: from, to: to)
        case .renewToken(let token): for room in client.roomIDs { client.renewToken(token, roomID: room) }
        case .vendor: return  // another vendor's call
        }
    }
}

/// One simulated ZEGO Express engine (contract §2) on RoomLink's connection engine.
///
/// It logs in, sends heartbeats, notices a closed connection at once and a silent one by missed heartbeats,
/// reconnects with its retry policy until the retry timeout, and publishes ZEGO's callbacks (`onRoomStateChanged`,
/// `onRoomUserUpdate`, `onRoomTokenWillExpire`). Calls behave as ZEGO's do; a call ZEGO refuses returns its error
/// code, and also reports it as a state change where ZEGO does (`loginFailed` for an empty room ID or a second room
/// in single-room mode, `logoutFailed` for a room the user is not in).
///
/// ```swift
/// let client = ZegoClient(id: "A", loop: group.loop(for: "A"), environment: environment)
/// await client.loginRoom("r1", config: ZegoRoomConfig(isUserStatusNotify: true))
/// for await change in await client.events() { print(change.time, change.event) }
/// ```
public typealias ZegoClient = RoomClient<Zego>

extension RoomClient where Dialect == Zego {
    /// `loginRoom(roomID, user, config)`: starts logging in; the outcome arrives as state changes.
    ///
    /// - Returns: `.success` when the login started; 1002011 (also reported as `loginFailed`) for an empty room ID;
    ///   1002001 in single-room mode when already in a room (also reported as `loginFailed`), or when already in or
    ///   logging in to this very room (return value only: that room's state does not change).
    @discardableResult
    public func loginRoom(_ roomID: String, config: ZegoRoomConfig = ZegoRoomConfig()) -> ZegoErrorCode {
        guard !isShutDown else { return .roomCountExceeded }
        guard !roomID.isEmpty else {
            publish(.roomStateChanged(roomID: roomID, reason: .loginFailed, errorCode: .roomIDEmpty, extendedData: [:]))
            return .roomIDEmpty
        }
        if rooms.contains(where: { $0.roomID == roomID }) { return .roomCountExceeded }
        if roomMode == .single, !rooms.isEmpty {
            publish(
                .roomStateChanged(
                    roomID: roomID,
                    reason: .loginFailed,
                    errorCode: .roomCountExceeded,
                    extendedData: [:]
                )
            )
            return .roomCountExceeded
        }
        join(roomID, options: config.joinOptions)
        return .success
    }

    /// `logoutRoom(roomID)`: leaves one room at once (`logout`). The server is told if the connection is up; if
    /// it is not, peers keep seeing the user until the server's heartbeat timeout.
    ///
    /// - Returns: `.success`, or 1002002 (also reported as `logoutFailed`) when the client is not in the room.
    @discardableResult
    public func logoutRoom(_ roomID: String) -> ZegoErrorCode {
        guard leave(roomID) else {
            publish(
                .roomStateChanged(roomID: roomID, reason: .logoutFailed, errorCode: .userNotInRoom, extendedData: [:])
            )
            return .userNotInRoom
        }
        return .success
    }

    /// `logoutRoom()`: leaves every room, in login order.
    public func logoutRoom() {
        for roomID in rooms.map(\.roomID) { logoutRoom(roomID) }
    }

    /// `switchRoom(from, to, config)`: `logout(from)`, then a login to `to`.
    ///
    /// - Returns: `.success`; 1002002 (reported as `logoutFailed` of `from`) when the client is not in `from`;
    ///   1002001 when it is already in `to`. Neither room changes on an error.
    @discardableResult
    public func switchRoom(
        from fromRoomID: String,
        to toRoomID: String,
        config: ZegoRoomConfig? = nil
    ) -> ZegoErrorCode {
        guard let current = rooms.first(where: { $0.roomID == fromRoomID }) else {
            publish(
                .roomStateChanged(
                    roomID: fromRoomID,
                    reason: .logoutFailed,
                    errorCode: .userNotInRoom,
                    extendedData: [:]
                )
            )
            return .userNotInRoom
        }
        guard !rooms.contains(where: { $0.roomID == toRoomID }) else { return .roomCountExceeded }
        logoutRoom(fromRoomID)
        return loginRoom(toRoomID, config: config ?? ZegoRoomConfig(current.options))
    }

    /// `renewToken(token, roomID)`: gives the server a new token before the old one expires; later reconnections
    /// use it too.
    ///
    /// - Returns: `.success`, or 1002002 when the client is not in the room.
    @discardableResult
    public func renewToken(_ token: String, roomID: String) -> ZegoErrorCode {
        renew(token, roomID: roomID) ? .success : .userNotInRoom
    }
}
