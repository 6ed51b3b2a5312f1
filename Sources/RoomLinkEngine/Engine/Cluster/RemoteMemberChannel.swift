/// The channel a room files a remote member (another node's, in a cluster) under: the room never sends to one, so
/// it leads nowhere. One instance serves every remote member.
final class RemoteMemberChannel: ClientChannel {
    static let shared = RemoteMemberChannel()

    /// Never called: a remote member's own node answers it.
    func send(_ message: ServerMessage, from room: any RoomEndpoint) {}
}
