/// What a client asks for when it joins a room, in the engine's terms (each dialect's API maps its own options
/// onto these).
public struct JoinOptions: Sendable, Hashable {
    // The flags after the optional count, where its tag's word has room for them: 32 bytes, not 40 (a million
    // clients' rooms each keep one).
    /// The token the server checks; `nil` when it checks none.
    public var token: String?
    /// The room's member cap, set by its first member (ZEGO `maxMemberCount`).
    public var maxMemberCount: Int?
    /// Whether the client hears of peers joining and leaving (ZEGO's opt-in `isUserStatusNotify`; Agora and
    /// LiveKit always do).
    public var notifiesPeers: Bool
    /// Whether peers cannot see the member (an Agora audience member in a live broadcast).
    public var hidden: Bool

    public init(token: String? = nil, notifiesPeers: Bool = false, maxMemberCount: Int? = nil, hidden: Bool = false) {
        self.token = token
        self.notifiesPeers = notifiesPeers
        self.maxMemberCount = maxMemberCount
        self.hidden = hidden
    }
}
