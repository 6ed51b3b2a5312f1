/// What a ZEGO client's callbacks deliver: `onRoomStateChanged` and `onRoomUserUpdate` (contract §2).
public enum ZegoEvent: Sendable, Equatable {
    /// `onRoomStateChanged(roomID, reason, errorCode, extendedData)`.
    case roomStateChanged(
        roomID: String,
        reason: ZegoRoomStateChangedReason,
        errorCode: ZegoErrorCode,
        extendedData: [String: String]
    )
    /// `onRoomUserUpdate(roomID, updateType, userList)`; only for users who logged in with `isUserStatusNotify`.
    case roomUserUpdate(roomID: String, update: ZegoUpdateType, users: [String])
    /// `onRoomTokenWillExpire(roomID, remainTimeInSecond)`: renew the token with `renewToken` within this time or
    /// be kicked out (1002056). Logged as type `tokenWillExpire` with `remainingSeconds`.
    case roomTokenWillExpire(roomID: String, remainingSeconds: Int)
}

/// Whether peers joined or left (`ZegoUpdateType`).
public enum ZegoUpdateType: String, Sendable, CaseIterable {
    case add, delete
}

extension ZegoEvent: EventLogRepresentable {
    public var eventLogLine: EventLogLine {
        switch self {
        case .roomStateChanged(let roomID, let reason, let errorCode, let extendedData):
            var fields: [(String, EventLogLine.Value)] = [
                ("reason", .string(reason.description)), ("code", .integer(Int64(errorCode.rawValue))),
            ]
            if !extendedData.isEmpty { fields.append(("extendedData", .object(extendedData))) }
            return EventLogLine(type: "roomState", room: roomID, fields: fields)
        case .roomUserUpdate(let roomID, let update, let users):
            return EventLogLine(
                type: "userUpdate",
                room: roomID,
                fields: [("update", .string(update.rawValue)), ("users", .strings(users))]
            )
        case .roomTokenWillExpire(let roomID, let remainingSeconds):
            return EventLogLine(
                type: "tokenWillExpire",
                room: roomID,
                fields: [("remainingSeconds", .integer(Int64(remainingSeconds)))]
            )
        }
    }
}
