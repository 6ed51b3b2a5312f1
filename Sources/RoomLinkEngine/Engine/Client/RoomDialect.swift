/// A vendor's vocabulary, timings and policy on RoomLink's one connection engine (``RoomClient``).
///
/// The engine decides — when a connection is lost, when to retry, when to give up, what peers see — and reports
/// each decision as a ``RoomTransition``; a dialect says what its vendor's SDK would call back for it, and which
/// defaults its vendor uses. ``Zego``, ``Agora`` and ``LiveKit`` are the three of contract §2–4; a fourth vendor is one
/// more conforming type (see the README's "Adding a dialect").
public protocol RoomDialect: Sendable {
    /// What the dialect's client publishes: its SDK's callbacks.
    associatedtype Event: EventLogRepresentable & Equatable
    /// The dialect's timings, in its vendor's names.
    associatedtype Timings: DialectTimings

    /// The dialect's name in scenarios (`"dialect"`).
    static var name: DialectName { get }
    /// The reconnection policy the vendor's SDK uses by default.
    static var defaultRetryPolicy: RetryPolicy { get }
    /// Whether every client hears of peers joining and leaving, whatever its options (Agora, LiveKit).
    static var alwaysNotifiesPeers: Bool { get }
    /// How many attempts a first join makes before it gives up; `nil` to follow the retry policy until the
    /// login timeout (LiveKit's `connect` makes one).
    static var firstJoinAttempts: Int? { get }
    /// Whether reconnections resume the session first and start a new one when that fails (LiveKit's quick and
    /// full modes); otherwise every attempt resumes the session, and the server re-adds a member it dropped.
    static var reconnectsInModes: Bool { get }
    /// The vendor's code for a login the server was too busy to take (contract §9's admission control), as the
    /// `attempt` log line's `code` shows it.
    static var busyCode: Int64 { get }

    /// Reports `transition` of `room` as the vendor's callbacks, in the order the SDK makes them.
    static func report(_ transition: RoomTransition, room: String, into emit: (Event) -> Void)

    /// Carries out `call` through the dialect's public API, as an app would (a scenario's actions arrive so).
    static func apply(_ call: AppCall, on client: isolated RoomClient<Self>)

    /// The calls only this vendor's SDK has, by the name a scenario's action gives them (empty by default): a
    /// scenario reader accepts them, ``apply(_:on:)`` receives them as ``AppCall/vendor(_:)``.
    static var vendorCalls: [String: VendorCall.Signature] { get }

    /// The engine compiled for this dialect: declare it as `public static let enginePath = EnginePath<Self>.compiled`
    /// in the dialect's concrete type (see ``EnginePath``).
    static var enginePath: EnginePath<Self> { get }
}

/// The engine's entry points (a message, a link change, a heartbeat) compiled for one dialect.
///
/// The transport and the runtime call a client through `any ClientEndpoint` and `any TimerHandler`, whose
/// witnesses run the generic, unspecialised code of ``RoomClient``, and unspecialised code looks up the generic
/// metadata of every dialect-typed value it touches (≈ 6 % of a run). `EnginePath<Zego>.compiled`, written where the
/// dialect is a concrete type, is a closure compiled for that dialect: one indirect call, then specialised code.
public struct EnginePath<Dialect: RoomDialect>: Sendable {
    /// Runs the engine for one entry; call it only on the client's loop's thread (``RoomClient`` checks first).
    let enter: @Sendable (RoomClient<Dialect>, RoomClient<Dialect>.Entry) -> Void
    /// Runs the heartbeat a loop's heartbeat batch (``HeartbeatBatch``) brings with the token given, and answers
    /// whether it beats on.
    let beat: @Sendable (RoomClient<Dialect>, UInt64) -> Bool

    /// The entry points compiled for `Dialect`; write `EnginePath<YourDialect>.compiled` with the concrete type.
    public static var compiled: EnginePath {
        let handle: @Sendable (isolated RoomClient<Dialect>, RoomClient<Dialect>.Entry) -> Void = { client, entry in
            client.handle(entry: entry)
        }
        // Made callable from the client's nonisolated entry points once, here: the same cast in the client's own
        // generic code would wrap the function in a reabstraction thunk allocated on every call. Safe by
        // `LoopPinnedActor.loopEntry(_:)`'s invariant: the client calls it only after checking it runs on its loop's
        // thread.
        let beat: @Sendable (isolated RoomClient<Dialect>, UInt64) -> Bool = { client, token in
            client.beat(token: token)
        }
        return EnginePath(enter: RoomClient.loopEntry(handle), beat: RoomClient.loopEntry(answering: beat))
    }
}

extension RoomDialect {
    public static var vendorCalls: [String: VendorCall.Signature] { [:] }

    /// The names of this dialect's `timings`.
    public static var timingNames: Set<String> { Timings.names }
}

/// What an app asks of its SDK, in the engine's terms: a scenario's actions reach a client through its dialect's
/// API as these (``RoomDialect/apply(_:on:)``).
public enum AppCall: Sendable, Equatable {
    /// Join `room` (ZEGO `loginRoom`, Agora `joinChannel`, LiveKit `connect`).
    case join(room: String, options: JoinOptions)
    /// Leave `room`, or every room (ZEGO `logoutRoom`, Agora `leaveChannel`, LiveKit `disconnect`).
    case leave(room: String?)
    /// Leave `from` and join `to` with the same options.
    case switchRoom(from: String, to: String)
    /// Give the server a new token.
    case renewToken(String)
    /// A call only one vendor's SDK has (``RoomDialect/vendorCalls``); other dialects ignore it.
    case vendor(VendorCall)
}
