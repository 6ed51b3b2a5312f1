/// A ZEGO room error code: the `errorCode` of `onRoomStateChanged` and of failed calls (contract §2's table).
public struct ZegoErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int

    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    /// Success.
    public static let success = ZegoErrorCode(rawValue: 0)
    /// Login to more rooms than allowed (single-room mode), or to a room already logged in.
    public static let roomCountExceeded = ZegoErrorCode(rawValue: 1_002_001)
    /// Logout or switch from a room this user is not logged in to (multi-room mode).
    public static let userNotInRoom = ZegoErrorCode(rawValue: 1_002_002)
    /// The room ID is empty.
    public static let roomIDEmpty = ZegoErrorCode(rawValue: 1_002_011)
    /// The token is wrong or expired at login → `loginFailed`.
    public static let tokenInvalid = ZegoErrorCode(rawValue: 1_002_033)
    /// The room's member cap is reached.
    public static let roomMemberCapReached = ZegoErrorCode(rawValue: 1_002_034)
    /// Kicked because the same user ID logged in to the room elsewhere (the newer login wins) → `kickOut`.
    public static let kickedByDuplicateLogin = ZegoErrorCode(rawValue: 1_002_050)
    /// The connection is temporarily interrupted; retrying → `reconnecting`.
    public static let connectionInterrupted = ZegoErrorCode(rawValue: 1_002_051)
    /// Login timed out over the network, or the 20-minute retry time was exceeded → `loginFailed` /
    /// `reconnectFailed`.
    public static let networkTimeout = ZegoErrorCode(rawValue: 1_002_053)
    /// Kicked by the business server's kick API → `kickOut`.
    public static let kickedByAdmin = ZegoErrorCode(rawValue: 1_002_055)
    /// Kicked because the token expired → `kickOut`.
    public static let kickedByTokenExpiry = ZegoErrorCode(rawValue: 1_002_056)

    /// Every code contract §2 lists, success first.
    public static let allKnown: [ZegoErrorCode] = [
        .success, .roomCountExceeded, .userNotInRoom, .roomIDEmpty, .tokenInvalid, .roomMemberCapReached,
        .kickedByDuplicateLogin, .connectionInterrupted, .networkTimeout, .kickedByAdmin, .kickedByTokenExpiry,
    ]

    public var description: String { "\(rawValue)" }
}
