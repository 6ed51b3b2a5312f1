import ArgumentParser
import Foundation
import RoomLink
import RoomLinkTokens

/// `roomlink token`: the vendors' own tokens, made as an app's token server makes them and checked as the vendor's
/// cloud checks them.
struct TokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Make and check the vendors' tokens (Agora AccessToken2 and AccessToken, ZEGO token04).",
        subcommands: [Make.self, Check.self]
    )

    /// An app's vendor and its secret: Agora's app certificate, or ZEGO's app ID (a number) and server secret.
    enum Vendor {
        case agora(certificate: String)
        case zego(appID: UInt32, secret: String)

        /// The vendor of `dialect`'s app `appID`, with `certificate` (Agora) or `secret` (ZEGO); `nil` when none of
        /// the three is given. Each flag missing or out of place is named.
        static func parse(
            dialect: String,
            appID: String?,
            certificate: String?,
            secret: String?
        ) throws(RoomLinkError) -> Vendor? {
            func invalid(_ field: String, _ message: String) -> RoomLinkError {
                RoomLinkError(code: .invalidInput, field: field, message: "\(field): \(message)")
            }
            guard appID != nil || certificate != nil || secret != nil else { return nil }
            guard let appID else { throw invalid("--app-id", "the vendor's tokens need the app's ID") }
            switch dialect {
            case "agora":
                guard secret == nil else { throw invalid("--server-secret", "is ZEGO's; Agora's is --app-certificate") }
                guard let certificate else { throw invalid("--app-certificate", "Agora's tokens need the certificate") }
                return .agora(certificate: certificate)
            case "zego":
                guard certificate == nil else {
                    throw invalid("--app-certificate", "is Agora's; ZEGO's is --server-secret")
                }
                guard let secret else { throw invalid("--server-secret", "ZEGO's tokens need the server secret") }
                guard let number = UInt32(appID) else {
                    throw invalid("--app-id", "a ZEGO app ID is a number, not '\(appID)'")
                }
                return .zego(appID: number, secret: secret)
            default:
                throw invalid(
                    "--app-id",
                    "vendor tokens are Agora's and ZEGO's (LiveKit's are JWTs: --keys), not \(dialect)'s"
                )
            }
        }

        /// The verifier of this vendor's tokens for app `appID` (Agora's; ZEGO's is in the case).
        func verifier(appID: String) -> any TokenVerifier {
            switch self {
            case .agora(let certificate): AgoraTokenVerifier(appID: appID, certificate: certificate)
            case .zego(let number, let secret): ZegoTokenVerifier(appID: number, secret: secret)
            }
        }
    }

    /// The verifier of the vendor's tokens for `dialect`'s app `appID` (``Vendor/parse(dialect:appID:certificate:secret:)``);
    /// `nil` when none of the three is given.
    static func verifier(
        dialect: String,
        appID: String?,
        certificate: String?,
        secret: String?
    ) throws(RoomLinkError) -> (any TokenVerifier)? {
        let vendor = try Vendor.parse(dialect: dialect, appID: appID, certificate: certificate, secret: secret)
        return appID.flatMap { appID in vendor?.verifier(appID: appID) }
    }

    /// The app a token is for, and its secret.
    struct AppOptions: ParsableArguments {
        @Option(help: "The vendor: agora or zego.") var dialect: String
        @Option(help: "The app's ID (Agora: 32 hexadecimal characters; ZEGO: a number).") var appID: String
        @Option(help: "Agora: the app certificate that signs tokens.") var appCertificate: String?
        @Option(help: "ZEGO: the server secret that seals tokens (32 characters).") var serverSecret: String?
        @Option(help: "The user: Agora a uid (0: any) or an account; ZEGO a user ID.") var user: String
        @Option(help: "Agora: the channel. ZEGO: the room (a checked token that names one must name this one).")
        var room: String?

        /// The vendor and its secret, checked (``TokenCommand/Vendor/parse(dialect:appID:certificate:secret:)``).
        func vendor() throws -> Vendor {
            do throws(RoomLinkError) {
                // Not nil: the app ID is required here.
                guard
                    let vendor = try Vendor.parse(
                        dialect: dialect,
                        appID: appID,
                        certificate: appCertificate,
                        secret: serverSecret
                    )
                else { throw RoomLinkError(code: .invalidInput, field: "--app-id", message: "--app-id is required") }
                return vendor
            } catch {
                throw fail(RoomLinkError(code: error.code, field: error.field, message: "token: \(error.message)"))
            }
        }
    }

    /// `roomlink token make`.
    struct Make: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a token, as the vendor's token builder makes it.",
            discussion: """
                Agora: an AccessToken2 (007) with the privilege to join --room for --privilege-lifetime (default: the \
                token's), or with --format 006 the older AccessToken. ZEGO: a token04 sealed with AES-GCM, naming \
                --room in its payload when given.
                """
        )

        @OptionGroup var app: AppOptions
        @Option(help: "How long the token lives.") var lifetime = DurationArgument("1h")
        @Option(help: "Agora: how long the join privilege lives (at most the token's).") var privilegeLifetime:
            DurationArgument?
        @Option(help: "Agora: 007 (AccessToken2) or 006 (AccessToken).") var format = "007"
        @Option(help: "When the token is made, in Unix seconds (default: now).") var issuedAt: UInt32?

        func run() throws {
            let issued = issuedAt ?? UInt32(Date().timeIntervalSince1970)
            let lifetime = try seconds(lifetime, "--lifetime")
            let token: String
            do {
                let key: VendorTokenMinter.Key
                switch try app.vendor() {
                case .agora(let certificate):
                    guard app.room != nil else {
                        throw fail("token make: --dialect agora needs --room (the channel)")
                    }
                    guard format == "007" || format == "006" else {
                        throw fail("token make: --format: 007 or 006, not '\(format)'")
                    }
                    key = .agora(appID: app.appID, certificate: certificate, legacy: format == "006")
                case .zego(let appID, let secret):
                    key = .zego(appID: appID, secret: secret)
                }
                token = try VendorTokenMinter(key).token(
                    user: app.user,
                    room: app.room,
                    issuedAt: issued,
                    lifetime: lifetime,
                    privilegeLifetime: try privilegeLifetime.map { try seconds($0, "--privilege-lifetime") }
                )
            } catch let error as TokenError {
                throw fail("token make: \(error)")
            }
            print(token)
        }

        func seconds(_ duration: DurationArgument, _ flag: String) throws -> UInt32 {
            let seconds = duration.duration.components.seconds
            guard seconds > 0, seconds <= Int64(UInt32.max) else {
                throw fail("token make: \(flag): a whole number of seconds from 1 s to 136 years, not \(duration)")
            }
            return UInt32(seconds)
        }
    }

    /// `roomlink token check`.
    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check a token as the vendor's cloud does for a join.",
            discussion: """
                Prints the token's verdict as JSON on standard output: {"valid": true, "format": …, "expires": UNIX} \
                or {"valid": false, "format": …, "reason": …}. Exit status 0 for a valid token, 1 for a refused one, \
                2 for bad flags.
                """
        )

        @OptionGroup var app: AppOptions
        @Argument(help: "The token.") var token: String
        @Option(help: "The time to check at, in Unix seconds (default: now).") var now: UInt64?

        func run() throws {
            let now = now ?? UInt64(Date().timeIntervalSince1970)
            let verifier: any TokenVerifier
            do {
                guard
                    let made = try TokenCommand.verifier(
                        dialect: app.dialect,
                        appID: app.appID,
                        certificate: app.appCertificate,
                        secret: app.serverSecret
                    )
                else { throw fail("token check: give the app's certificate or secret") }
                verifier = made
            } catch let error as RoomLinkError {
                throw fail(error)
            }
            let format =
                [AgoraAccessToken2.version, AgoraAccessToken.version, ZegoToken04.version].first {
                    token.hasPrefix($0)
                } ?? "unknown"
            let verdict = verifier.verify(
                token,
                userID: app.user,
                roomID: app.room ?? "",
                unixTime: Int64(clamping: now)
            )
            var answer: [String: Any] = ["format": format]
            switch verdict {
            case .accepted(let expiry):
                answer["valid"] = true
                answer["expires"] = expiry
            case .refused(let reason):
                answer["valid"] = false
                answer["reason"] = reason
            }
            let json = try JSONSerialization.data(withJSONObject: answer, options: [.sortedKeys])
            print(String(decoding: json, as: UTF8.self))
            if case .refused(let reason) = verdict {
                StandardStream.error.write("roomlink: token check: \(reason)\n")
                throw ExitCode(1)
            }
        }
    }
}
