/// The Agora RTC dialect (contract §3): `connectionChangedToState(state, reason)`, `didJoinChannel`,
/// `didRejoinChannel`, `rtcEngineConnectionDidLost`, `didJoinedOfUid`, `didOfflineOfUid`.
///
/// The engine's differences for Agora are switches and timings: no heartbeats (media flows continuously, and both
/// sides notice when it stops: ``AgoraTimings``), peers always announced, a second notice (`lost`) 10 s into a
/// reconnection, and a 20-minute limit on joins and rejoins alike.
public enum Agora: RoomDialect {
    public typealias Event = AgoraEvent
    public typealias Timings = AgoraTimings

    public static let name = DialectName.agora
    public static var defaultRetryPolicy: RetryPolicy { .agoraDefault }
    public static let alwaysNotifiesPeers = true
    public static let firstJoinAttempts: Int? = nil
    /// `CONNECTION_CHANGED_REJECTED_BY_SERVER` (10): the server turned the connection down.
    public static let busyCode: Int64 = 10
    public static let reconnectsInModes = false

    public static func report(_ transition: RoomTransition, room: String, into emit: (AgoraEvent) -> Void) {
        func state(_ reason: AgoraConnectionChangedReason) {
            emit(.connectionStateChanged(channel: room, state: reason.state, reason: reason))
        }
        switch transition {
        case .joining: state(.connecting)
        case .joined:
            state(.joinSuccess)
            emit(.joinChannelSuccess(channel: room))
        case .lost(.closed), .lost(.silent), .lost(.serverRequest): state(.interrupted)
        case .lost(.sessionGone): state(.keepAliveTimeout)
        case .lost(.addressChanged): state(.clientIpAddressChanged)
        case .lost(.proxyChanged): state(.settingProxyServer)
        case .stillLost:
            state(.lost)
            emit(.connectionLost(channel: room))
        case .tokenRenewedWhileReconnecting: state(.renewToken)
        case .rejoined:
            state(.rejoinSuccess)
            emit(.rejoinChannelSuccess(channel: room))
        case .peersChanged(.add, let users, _):
            for peer in users { emit(.userJoined(channel: room, peer: peer)) }
        case .peersChanged(.delete, let users, let reason):
            let offline: AgoraUserOfflineReason =
                switch reason {
                case .quit: .quit
                case .becomeAudience: .becomeAudience
                case .dropped, nil: .dropped
                }
            for peer in users { emit(.userOffline(channel: room, peer: peer, reason: offline)) }
        case .gaveUp: state(.joinFailed)
        case .rejected(.tokenInvalid, .reconnecting): state(.tokenExpired)
        case .rejected(.tokenInvalid, _): state(.invalidToken)
        case .rejected(.memberCapReached, _): state(.rejectedByServer)
        case .kicked(.duplicateLogin, _): state(.sameUidLogin)
        case .kicked(.admin, _): state(.bannedByServer)
        case .kicked(.tokenExpired, _): state(.tokenExpired)
        case .left: state(.leaveChannel)
        case .tokenWillExpire: emit(.tokenPrivilegeWillExpire(channel: room))
        case .reconnectMode, .peersCleared:
            return  // Agora reconnects one way and reports no modes
        }
    }

    public static let enginePath = EnginePath<Agora>.compiled

    public static func apply(_ call: AppCall, on client: isolated AgoraClient) {
        switch call {
        case .join(let room, let options):
            client.joinChannel(room, token: options.token, role: options.hidden ? .audience : .broadcaster)
        case .leave(let room):
            if room == nil || client.roomIDs.first == room { client.leaveChannel() }
        case .switchRoom(let from, let to):
            guard let current = client.rooms.first, current.roomID == from else { return }
            client.leaveChannel()
            client.joinChannel(
                to,
                token: current.options.token,
                role: current.options.hidden ? .audience : .broadcaster
            )
        case .renewToken(let token): client.renewToken(token)
        case .vendor(let call):
            switch call.name {
            case "setClientRole":
                guard let role = call.arguments["role"].flatMap(AgoraClientRole.init(rawValue:)) else { return }
                client.setClientRole(role)
            case "setCloudProxy": client.setCloudProxy()
            default: return  // another vendor's call
            }
        }
    }

    /// `setClientRole` (`role`: `broadcaster` or `audience`) and `setCloudProxy`.
    public static var vendorCalls: [String: VendorCall.Signature] {
        [
            "setClientRole": VendorCall.Signature(arguments: ["role": AgoraClientRole.allCases.map(\.rawValue)]),
            "setCloudProxy": VendorCall.Signature(),
        ]
    }

    /// Whether `name` is a valid Agora channel name: 1–64 bytes of ASCII letters, digits, space and
    /// `!#$%&()+-:;<=.>?@[]^_{|}~,`.
    public static func isValidChannelName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.unicodeScalars.allSatisfy {
                ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)))
                    || channelNamePunctuation.contains($0)
            }
    }

    /// The punctuation a channel name may use besides letters and digits (built once, not per join).
    private static let channelNamePunctuation = Set("!#$%&()+-:;<=.>?@[]^_{|}~, ".unicodeScalars)

    /// Whether `appID` has the form of an Agora App ID: 32 hexadecimal digits.
    public static func isValidAppID(_ appID: String) -> Bool {
        appID.utf8.count == 32 && appID.unicodeScalars.allSatisfy { $0.properties.isASCIIHexDigit }
    }

    /// The App ID a client uses when none is given.
    public static let defaultAppID = "0123456789abcdef0123456789abcdef"
}

/// One simulated Agora RTC engine (contract §3) on RoomLink's connection engine: one channel at a time.
///
/// ```swift
/// let client = AgoraClient(id: "A", loop: group.loop(for: "A"), environment: AgoraClient.Environment(transport: network))
/// await client.joinChannel("c1")
/// // connectionState connecting/connecting, then ≈ 200 ms later connected/joinSuccess and joinChannelSuccess
/// ```
///
/// Methods return Agora's codes: 0 on success, a negative error otherwise (`-17` join rejected, `-101` invalid App
/// ID, `-102` invalid channel name, `-7` engine shut down), and report the state change Agora reports with them.
public typealias AgoraClient = RoomClient<Agora>

extension RoomClient where Dialect == Agora {
    /// `joinChannelByToken(token, channelId, uid)`: starts joining; the outcome arrives as state changes.
    ///
    /// - Returns: 0; `-17` when the client is already in (or joining) a channel — reported as
    ///   `failed/rejectedByServer` on that channel, which the client leaves; `-102` (`failed/invalidChannelName`)
    ///   or `-101` (`failed/invalidAppId`) for a malformed name or App ID; `-7` after ``shutdown()``.
    @discardableResult
    public func joinChannel(
        _ channel: String,
        token: String? = nil,
        role: AgoraClientRole = .broadcaster,
        appID: String = Agora.defaultAppID
    ) -> Int32 {
        guard !isShutDown else { return -7 }
        guard Agora.isValidAppID(appID) else {
            publish(.connectionStateChanged(channel: channel, state: .failed, reason: .invalidAppId))
            return -101
        }
        guard Agora.isValidChannelName(channel) else {
            publish(.connectionStateChanged(channel: channel, state: .failed, reason: .invalidChannelName))
            return -102
        }
        if let current = rooms.first?.roomID {
            // Joining twice: the server refuses, and the connection fails; the app must leave and join again.
            abandon(current)
            publish(.connectionStateChanged(channel: current, state: .failed, reason: .rejectedByServer))
            return -17
        }
        join(channel, options: JoinOptions(token: token, notifiesPeers: true, hidden: role == .audience))
        return 0
    }

    /// `leaveChannel()`: leaves at once (`disconnected/leaveChannel`); peers see the user `quit`. Nothing happens
    /// when the client is in no channel.
    @discardableResult
    public func leaveChannel() -> Int32 {
        if let channel = rooms.first?.roomID { leave(channel) }
        return 0
    }

    /// `renewToken(token)`: gives the server a new token; during a reconnection, reported as
    /// `reconnecting/renewToken`.
    ///
    /// - Returns: 0, or `-2` when the client is in no channel.
    @discardableResult
    public func renewToken(_ token: String) -> Int32 {
        guard let channel = rooms.first?.roomID else { return -2 }
        renew(token, roomID: channel)
        return 0
    }

    /// `setClientRole(role)`: an audience member is not seen by peers; switching a broadcaster to audience shows
    /// peers `userOffline(becomeAudience)`, and back `userJoined`. Applies to the current channel, if any.
    @discardableResult
    public func setClientRole(_ role: AgoraClientRole) -> Int32 {
        guard let channel = rooms.first?.roomID else { return 0 }
        setHidden(role == .audience, roomID: channel)
        return 0
    }

    /// `setCloudProxy(type)`: the connection moves to the proxy — `reconnecting/settingProxyServer`, then
    /// `connected/rejoinSuccess`.
    @discardableResult
    public func setCloudProxy() -> Int32 {
        reconnectAll(cause: .proxyChanged)
        return 0
    }
}
