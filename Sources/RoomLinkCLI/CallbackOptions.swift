public import ArgumentParser
import Foundation
import RoomLink
import RoomLinkLiveKit

/// `roomlink serve`'s room callbacks to the app's backend (docs/callbacks.md): Agora's NCS notifications, ZEGO's
/// `room_login`/`room_logout`, LiveKit's webhooks — each vendor's format, delivery, retries and disorder.
struct CallbackOptions: ParsableArguments {
    @Option(
        help: """
            Send the dialect's room callbacks (Agora NCS, ZEGO room_login/room_logout, LiveKit webhooks) to this \
            http:// or https:// receiver (repeatable; each gets every callback).
            """
    )
    var callback: [String] = []
    @Option(help: "Agora's NCS secret, or ZEGO's callback secret: what signs the callbacks (LiveKit's: --webhook-key).")
    var callbackSecret: String?
    @Option(help: "ZEGO's appid in the callbacks (default --app-id, else 0).") var callbackAppID: String?
    @Option(help: "Agora's channel profile: communication (events 107/108, the default) or live (103/104).")
    var callbackProfile: AgoraCallbackFormat.Profile?
    @Option(
        help: """
            The share of callbacks played out of order on purpose — Agora's duplicates and late arrivals, ZEGO's \
            reordering, as their docs say happen (default 0.01; 0: an ideal vendor). Not LiveKit's, whose queue \
            keeps each room's order.
            """
    )
    var callbackDisorder: Double?
    @Option(help: "What the disorder draws from (default 1): the same seed plays the same callbacks out of order.")
    var callbackSeed: UInt64?
    @Option(help: "Write the truth beside the callbacks, as JSON Lines (for roomlink report callbacks).")
    var callbackTruth: String?
    @Option(help: "Callbacks pending per receiver at most (default 10000); more are dropped and counted.")
    var callbackQueue: Int?
    @Option(help: "Kept-alive connections per receiver, one request at a time on each (default 16).")
    var callbackConnections: Int?

    /// The default share of disorder: the vendors publish none, so a small one — enough that a storm's few thousand
    /// callbacks show tens of them, few enough that a receiver is not judged on a vendor worse than the real one.
    static let defaultDisorder = 0.01

    /// Whether any callback flag was given.
    var isEmpty: Bool {
        callback.isEmpty && callbackSecret == nil && callbackAppID == nil && callbackProfile == nil
            && callbackDisorder == nil && callbackSeed == nil && callbackTruth == nil && callbackQueue == nil
            && callbackConnections == nil
    }

    /// The callbacks the flags ask for, for a server of `dialect`; LiveKit's `--webhook` URLs and their signing key
    /// join them. `nil` when there is no receiver.
    func settings(
        dialect: DialectName,
        appID: String?,
        webhooks: LiveKitWebhookSettings?,
        keys: LiveKitKeys?,
        ca: String?
    ) throws(RoomLinkError) -> (CallbackSettings, any CallbackFormat)? {
        func invalid(_ flag: String, _ message: String) -> RoomLinkError {
            RoomLinkError(code: .invalidInput, field: flag, message: "\(flag): \(message)")
        }
        var urls: [HTTPTokenSource.Endpoint] = []
        for text in callback { urls.append(try HTTPTokenSource.Endpoint(parsing: text, flag: "--callback")) }
        for url in webhooks?.urls ?? [] {
            urls.append(try HTTPTokenSource.Endpoint(parsing: url.description, flag: "--webhook"))
        }
        guard !urls.isEmpty else {
            if !isEmpty { throw invalid("--callback", "the other --callback-… flags need at least one --callback URL") }
            return nil
        }
        let vendor = CallbackVendor(dialect)
        if let disorder = callbackDisorder {
            guard disorder.isFinite, (0...1).contains(disorder) else {
                throw invalid("--callback-disorder", "a share from 0 to 1, not \(disorder)")
            }
            if vendor == .livekit, disorder > 0 {
                throw invalid(
                    "--callback-disorder",
                    "LiveKit delivers each room's webhooks in order, one at a time: there is no disorder to play"
                )
            }
        }
        if let queue = callbackQueue, queue < 1 { throw invalid("--callback-queue", "at least 1") }
        if let connections = callbackConnections, !(1...256).contains(connections) {
            throw invalid("--callback-connections", "1 to 256")
        }
        if callbackProfile != nil, vendor != .agora { throw invalid("--callback-profile", "Agora's (dialect agora)") }
        if callbackAppID != nil, vendor != .zego { throw invalid("--callback-app-id", "ZEGO's (dialect zego)") }
        let format: any CallbackFormat
        switch vendor {
        case .agora, .zego:
            guard let secret = callbackSecret, !secret.isEmpty else {
                throw invalid("--callback-secret", "needed: \(vendor)'s callbacks are signed with it")
            }
            format =
                vendor == .agora
                ? AgoraCallbackFormat(secret: secret, profile: callbackProfile ?? .communication)
                : ZegoCallbackFormat(appID: callbackAppID ?? appID ?? "0", secret: secret)
        case .livekit:
            if callbackSecret != nil {
                throw invalid("--callback-secret", "not LiveKit's: its webhooks are signed with --webhook-key's secret")
            }
            let names = keys?.secrets.keys.sorted() ?? []
            guard let key = webhooks?.apiKey ?? (names.count == 1 ? names[0] : nil), let secret = keys?.secrets[key]
            else {
                throw invalid(
                    "--webhook-key",
                    "one of \(names.joined(separator: ", ")) (several keys: say which signs)"
                )
            }
            format = LiveKitCallbackFormat(apiKey: key, secret: secret)
        }
        if ca != nil, !urls.contains(where: \.isSecure) {
            throw invalid("--ca", "no https:// receiver to call with it")
        }
        let rules = CallbackDeliveryRules.vendor(
            vendor,
            disorder: vendor == .livekit ? 0 : callbackDisorder ?? Self.defaultDisorder,
            seed: callbackSeed ?? 1,
            capacity: callbackQueue ?? webhooks?.queueCapacity ?? 10_000
        )
        let settings = CallbackSettings(
            urls: urls,
            rules: rules,
            truthPath: callbackTruth,
            connectionsPerURL: callbackConnections ?? 16,
            tls: TLSClientConfiguration(caFile: ca)
        )
        return (settings, format)
    }
}

extension AgoraCallbackFormat.Profile: ExpressibleByArgument {}
