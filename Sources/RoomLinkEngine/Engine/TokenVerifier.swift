/// How a server checks a login's or a renewal's token as a vendor's cloud does: a signed token that says whose it
/// is, which room it is for and when it expires (Agora's AccessToken2, ZEGO's token04), in place of a table of
/// tokens (``AuthTable``).
///
/// The expiry a token carries drives what the contract says happens before and at it: the member is warned the
/// renewal grace before (``ServerTimings/tokenRenewalGrace``: Agora's privilege-will-expire, ZEGO's
/// token-will-expire) and removed at it (ZEGO 1002056, Agora `failed/tokenExpired`, LiveKit `participantRemoved`)
/// unless it renews with a token that verifies. `RoomLinkTokens` has verifiers of each vendor's format.
public protocol TokenVerifier: Sendable {
    /// Checks `token` (`nil` or empty: none was given) for `userID` joining `roomID` at `unixTime` (seconds since
    /// 1970).
    func verify(_ token: String?, userID: String, roomID: String, unixTime: Int64) -> TokenVerdict
}

/// A ``TokenVerifier``'s answer.
public enum TokenVerdict: Sendable, Hashable {
    /// The token lets the user in until `expiresAt` (Unix seconds).
    case accepted(expiresAt: Int64)
    /// The token is refused; `reason` says what was wrong with it.
    case refused(reason: String)
}

/// A server's token checks: the verifier, and where its clock stands in Unix time.
public struct VerifiedTokens: Sendable {
    public var verifier: any TokenVerifier
    /// The Unix time (seconds) of the server's clock's zero instant: a virtual-time run's start, or, on the real
    /// clock, the wall time less the loop's reading. Scenario time runs from it (at a time scale other than 1, a
    /// token's expiry is read in scenario seconds).
    public var unixTimeAtZero: Int64

    public init(verifier: any TokenVerifier, unixTimeAtZero: Int64) {
        self.verifier = verifier
        self.unixTimeAtZero = unixTimeAtZero
    }

    /// The Unix time (whole seconds) at `instant` of the server's clock.
    func unixTime(at instant: RuntimeInstant) -> Int64 {
        unixTimeAtZero + instant.nanoseconds / 1_000_000_000
    }

    /// The instant of the server's clock at which Unix time `unixTime` begins.
    func instant(atUnixTime unixTime: Int64) -> RuntimeInstant {
        let (seconds, overflow) = (unixTime - unixTimeAtZero).multipliedReportingOverflow(by: 1_000_000_000)
        return RuntimeInstant(nanoseconds: overflow ? .max : seconds)
    }
}
