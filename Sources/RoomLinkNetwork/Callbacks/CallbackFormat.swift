import Foundation
import RoomLinkTokens

/// One HTTP `POST` of a callback: its body and the headers beside `Host` and `Content-Length`.
public struct CallbackRequest: Sendable, Hashable {
    public var body: [UInt8]
    public var contentType: String
    /// Other headers, in order (signatures).
    public var headers: [Header]

    public struct Header: Sendable, Hashable {
        public var name: String
        public var value: String
        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    public init(body: [UInt8], contentType: String = "application/json", headers: [Header] = []) {
        self.body = body
        self.contentType = contentType
        self.headers = headers
    }
}

/// A vendor's wording of room callbacks: which events it sends, and each attempt's request (a resend is signed
/// anew, and Agora's `notifyMs` is new on each).
public protocol CallbackFormat: Sendable {
    var vendor: CallbackVendor { get }
    /// Whether the vendor tells receivers about `event` (ZEGO's room callbacks here are `room_login` and
    /// `room_logout` only).
    func sends(_ event: RoomCallback.Event) -> Bool
    /// The request of `callback`'s attempt `attempt`, sent at `sentAtMs` (Unix milliseconds).
    func request(for callback: RoomCallback, attempt: Int, sentAtMs: Int64) -> CallbackRequest
}

/// Agora's Notifications (NCS) channel events, as the "Channel event type" reference gives them: a JSON body with
/// `noticeId`, `productId` (1, RTC), `eventType`, `notifyMs`, `sid` and `payload`, signed in `Agora-Signature`
/// (HMAC-SHA1 of the raw body, hex) and `Agora-Signature-V2` (HMAC-SHA256) with the NCS secret.
///
/// Event types: 101/102 for a channel's creation and destruction; in the communication profile 107/108 for a
/// user's join and leave; in the live-broadcast profile 103/104 for a host's, 105/106 for an audience member's (a
/// user who joins hidden from its peers), and 111/112 for a switch to host or to audience. The payload
/// carries `channelName`, `uid` (the user ID when it is a number, else 0), `account` (the user ID), `platform`
/// (0, other), `clientSeq` (increasing with each event of the user), `ts` (seconds), and for a leave `reason` and
/// `duration` (seconds in the channel).
public struct AgoraCallbackFormat: CallbackFormat {
    /// Agora's channel profiles, which pick the join and leave event types.
    public enum Profile: String, Sendable, Hashable, CaseIterable {
        /// 107 and 108.
        case communication
        /// 103 and 104 (hosts).
        case live
    }

    public let secret: String
    public let profile: Profile
    public var vendor: CallbackVendor { .agora }

    public init(secret: String, profile: Profile = .communication) {
        self.secret = secret
        self.profile = profile
    }

    /// Every event; a role change only in the live-broadcast profile (the communication profile has no roles).
    public func sends(_ event: RoomCallback.Event) -> Bool { event != .roleChanged || profile == .live }

    /// The event type of `callback`.
    public func eventType(of callback: RoomCallback) -> Int {
        switch (callback.event, profile) {
        case (.roomCreated, _): 101
        case (.roomDestroyed, _): 102
        case (.joined, .live): callback.audience ? 105 : 103
        case (.left, .live): callback.audience ? 106 : 104
        case (.joined, .communication): 107
        case (.left, .communication): 108
        case (.roleChanged, _): callback.audience ? 112 : 111
        }
    }

    /// The `reason` of a leave: 1 quit, 2 timeout, 3 kicked (removed by the business server), 5 replaced by the same
    /// user's newer login, 12 token expired.
    public static func reason(_ reason: RoomCallback.LeaveReason) -> Int {
        switch reason {
        case .quit: 1
        case .timeout: 2
        case .kicked: 3
        case .replaced: 5
        case .token: 12
        }
    }

    /// A notice's body, its keys in sorted order as Agora's samples show them.
    private struct Notice: Encodable {
        struct Payload: Encodable {
            var account: String?
            var channelName: String
            var clientSeq: UInt64?
            var duration: Int64?
            var platform: Int?
            var reason: Int?
            var ts: Int64
            var uid: UInt32?
        }

        var eventType: Int
        var noticeId: String
        var notifyMs: Int64
        var payload: Payload
        var productId: Int
        var sid: String
    }

    public func request(for callback: RoomCallback, attempt: Int, sentAtMs: Int64) -> CallbackRequest {
        let type = eventType(of: callback)
        var payload = Notice.Payload(channelName: callback.roomID, ts: callback.atMs / 1000)
        if callback.event != .roomCreated, callback.event != .roomDestroyed {
            payload.uid = UInt32(callback.userID) ?? 0
            payload.account = callback.userID
            payload.platform = callback.event == .roleChanged ? nil : 0
            payload.clientSeq = callback.userSequence
            if callback.event == .left {
                payload.reason = Self.reason(callback.reason ?? .timeout)
                payload.duration = max(0, (callback.atMs - callback.joinedAtMs) / 1000)
            }
        }
        let notice = Notice(
            eventType: type,
            // The same notice on every resend and duplicate: what a receiver that de-duplicates keys on.
            noticeId: "\(callback.roomSession):\(callback.id):\(type)",
            notifyMs: sentAtMs,
            payload: payload,
            productId: 1,
            sid: "\(callback.roomSession)-\(callback.id)"
        )
        let bytes = callbackJSON(notice)
        return CallbackRequest(body: bytes, headers: Self.signatures(of: bytes, secret: secret))
    }

    /// `Agora-Signature` and `Agora-Signature-V2` of `body` under `secret`.
    public static func signatures(of body: [UInt8], secret: String) -> [CallbackRequest.Header] {
        let key = Data(secret.utf8)
        return [
            .init("Agora-Signature", Digests.hex(Digests.hmacSHA1(Data(body), key: key))),
            .init("Agora-Signature-V2", Digests.hex(Digests.hmacSHA256(Data(body), key: key))),
        ]
    }
}

/// ZEGO's room callbacks `room_login` and `room_logout`, as the current server-callback reference shows them: a
/// JSON body whose values are strings — `event`, `appid`, `timestamp` (seconds), `nonce`, `signature`, `room_id`,
/// `room_seq` (the room's life), `user_account`, `user_nickname`, `session_id`, `login_time` (milliseconds),
/// `user_update_seq` (the room's membership changes so far), and for a logout `logout_time` and `reason` (0 quit,
/// 1 heartbeat timeout, 3 kicked — by the business server or by the same user's newer login — 4 token expired).
///
/// `signature` is the SHA-1 (hex) of the callback secret, the timestamp and the nonce, sorted as strings and
/// concatenated: ZEGO's published check.
public struct ZegoCallbackFormat: CallbackFormat {
    public let appID: String
    public let secret: String
    public var vendor: CallbackVendor { .zego }

    public init(appID: String, secret: String) {
        self.appID = appID
        self.secret = secret
    }

    public func sends(_ event: RoomCallback.Event) -> Bool { event == .joined || event == .left }

    /// The `reason` of a logout.
    public static func reason(_ reason: RoomCallback.LeaveReason) -> Int {
        switch reason {
        case .quit: 0
        case .timeout: 1
        case .kicked, .replaced: 3
        case .token: 4
        }
    }

    /// ZEGO's signature of a callback sent at `timestamp` with `nonce`.
    public static func signature(secret: String, timestamp: String, nonce: String) -> String {
        let joined = [secret, timestamp, nonce].sorted().joined()
        return Digests.hex(Digests.sha1(Data(joined.utf8)))
    }

    /// A callback's body: every value a string, as the current reference shows them; keys sorted.
    private struct Body: Encodable {
        var appID: String
        var event: String
        var loginTime: String
        var logoutTime: String?
        var nonce: String
        var reason: String?
        var roomID: String
        var roomSeq: String
        var sessionID: String
        var signature: String
        var timestamp: String
        var userAccount: String
        var userNickname: String
        var userRole: String
        var userUpdateSeq: String

        enum CodingKeys: String, CodingKey {
            case appID = "appid"
            case event
            case loginTime = "login_time"
            case logoutTime = "logout_time"
            case nonce, reason
            case roomID = "room_id"
            case roomSeq = "room_seq"
            case sessionID = "session_id"
            case signature, timestamp
            case userAccount = "user_account"
            case userNickname = "user_nickname"
            case userRole = "user_role"
            case userUpdateSeq = "user_update_seq"
        }
    }

    public func request(for callback: RoomCallback, attempt: Int, sentAtMs: Int64) -> CallbackRequest {
        let timestamp = String(sentAtMs / 1000)
        // A fresh nonce for each attempt, drawn from the callback and the attempt (no shared generator to lock).
        var state = CallbackDeliveryState.hash(callback.identity, seed: UInt64(attempt) &* 0x9e37_79b9)
        let nonce = String(UInt32(CallbackDeliveryState.unit(&state) * Double(UInt32.max)))
        let left = callback.event == .left
        let body = Body(
            appID: appID,
            event: left ? "room_logout" : "room_login",
            loginTime: String(callback.joinedAtMs),
            logoutTime: left ? String(callback.atMs) : nil,
            nonce: nonce,
            reason: left ? String(Self.reason(callback.reason ?? .timeout)) : nil,
            roomID: callback.roomID,
            roomSeq: callback.roomSession,
            sessionID: callback.session,
            signature: Self.signature(secret: secret, timestamp: timestamp, nonce: nonce),
            timestamp: timestamp,
            userAccount: callback.userID,
            userNickname: callback.userID,
            userRole: "1",
            userUpdateSeq: String(callback.roomSequence)
        )
        return CallbackRequest(body: callbackJSON(body))
    }
}

/// `value` as compact JSON, its keys in declaration order, slashes unescaped.
func callbackJSON(_ value: some Encodable) -> [UInt8] {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.withoutEscapingSlashes]
    return Array((try? encoder.encode(value)) ?? Data())
}
