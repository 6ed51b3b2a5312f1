/// The business server's calls on rooms — what a scenario does to users from the server's side: kick them out, ask
/// them to reconnect, expire their tokens. A ``RoomServer`` in the same process adopts it; so does a client of a
/// remote server's admin API (`roomlink serve --admin`).
///
/// Each call is sent and not awaited, as a business server's HTTP call is: its effect reaches the clients as the
/// server's messages.
public protocol RoomAdministration: AnyObject, Sendable {
    /// Kicks users out of a room: their clients are told (`admin`) and do not reconnect.
    func kickOut(roomID: String, userIDs: [String])
    /// Asks users of a room to reconnect now, as a server node going away does.
    func requestReconnect(roomID: String, userIDs: [String])
    /// Expires the current token of `userID`: later logins with it are refused, and its members in `roomIDs` (every
    /// room when `nil`) are warned and kicked out after the renewal grace unless they renew.
    func expireToken(userID: String, inRooms roomIDs: [String]?)
}

extension RoomServer: RoomAdministration {}
