import RoomLinkEngine
import SwiftProtobuf

/// How both sides decode: unknown fields (a newer peer's additions) are dropped rather than kept with the message.
enum WireDecoding {
    static let options: BinaryDecodingOptions = {
        var options = BinaryDecodingOptions()
        options.discardUnknownFields = true
        // The protocol's messages nest two deep; anything deeper is hostile.
        options.messageDepthLimit = 8
        return options
    }()
}

enum WireDialect {
    static func wire(_ dialect: DialectName?) -> Roomlink_V1_Dialect {
        switch dialect {
        case nil: .unspecified
        case .zego?: .zego
        case .agora?: .agora
        case .livekit?: .livekit
        }
    }

    static func decode(_ dialect: Roomlink_V1_Dialect, field: String) throws(WireError) -> DialectName? {
        switch dialect {
        case .unspecified: nil
        case .zego: .zego
        case .agora: .agora
        case .livekit: .livekit
        case .UNRECOGNIZED(let value): throw .invalidField(field: field, problem: "is \(value), not a dialect")
        }
    }
}

enum WireLoginKind {
    static func wire(_ kind: LoginRequest.Kind) -> Roomlink_V1_Login.Kind {
        switch kind {
        case .join: .join
        case .reconnect: .reconnect
        case .resume: .resume
        }
    }

    static func decode(_ kind: Roomlink_V1_Login.Kind) throws(WireError) -> LoginRequest.Kind {
        switch kind {
        case .join: return .join
        case .reconnect: return .reconnect
        case .resume: return .resume
        case .unspecified: throw .invalidField(field: "login.kind", problem: "is missing")
        case .UNRECOGNIZED(let value): throw .invalidField(field: "login.kind", problem: "is \(value), not a kind")
        }
    }
}

/// Durations cross the wire as whole milliseconds.
enum WireDuration {
    /// `duration` in milliseconds, rounded down; 0 for a negative one.
    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        return overflow ? .max : product &+ attoseconds / 1_000_000_000_000_000
    }

    /// `milliseconds` as a duration, capped at 100 years (a hostile value cannot overflow a deadline).
    static func duration(milliseconds: UInt64) -> Duration {
        .milliseconds(Int64(min(milliseconds, 100 * 365 * 86_400_000)))
    }
}

/// The checks every decoded field passes before it reaches the engine.
enum WireCheck {
    static func identifier(_ value: String, field: String, allowsEmpty: Bool = false) throws(WireError) -> String {
        if value.isEmpty, !allowsEmpty { throw .invalidField(field: field, problem: "is empty") }
        if value.utf8.count > WireProtocol.maximumIdentifierLength {
            throw .invalidField(
                field: field,
                problem: "is \(value.utf8.count) bytes long, more than \(WireProtocol.maximumIdentifierLength)"
            )
        }
        return value
    }

    static func token(_ value: String, field: String) throws(WireError) -> String {
        if value.utf8.count > WireProtocol.maximumTokenLength {
            throw .invalidField(
                field: field,
                problem: "is \(value.utf8.count) bytes long, more than \(WireProtocol.maximumTokenLength)"
            )
        }
        return value
    }

    static func roomAndUser(_ room: String, _ userID: String, in message: String) throws(WireError) -> (String, String)
    {
        (try identifier(room, field: "\(message).room"), try identifier(userID, field: "\(message).user_id"))
    }
}
