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

    /// The dialect's timings with `overrides` (by their names in ``DialectTimings/settings``; other names are
    /// ignored), in the engine's terms.
    public func engineTimings(overrides: [String: Duration] = [:]) -> EngineTimings {
        func timings<D: RoomDialect>(_ dialect: D.Type) -> EngineTimings { D.Timings(overrides: overrides).engine }
        return timings(engine)
    }

    /// The timing names the dialect takes.
    public var timingNames: Set<String> {
        func names<D: RoomDialect>(_ dialect: D.Type) -> Set<String> { D.Timings.names }
        return names(engine)
    }
}

/// Whether a user may be in one room or several at once (ZEGO's multi-room mode).
public enum RoomMode: String, Sendable, CaseIterable {
    case single, multi
}
