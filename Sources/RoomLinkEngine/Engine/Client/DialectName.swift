/// The dialects RoomLink speaks, by the names scenarios and the command line use: the one place a dialect is
/// registered.
public enum DialectName: String, Sendable, CaseIterable {
    case zego, agora, livekit

    /// The dialect's type on the engine: what runs a scenario of this dialect.
    public var engine: any RoomDialect.Type {
        switch self {
        case .zego: Zego.self
        case .agora: Agora.self
        case .livekit: LiveKit.self
        }
    }
}

/// Whether a user may be in one room or several at once (ZEGO's multi-room mode).
public enum RoomMode: String, Sendable, CaseIterable {
    case single, multi
}
