/// Where a client gets its tokens as an app does: from the app's own token server, or minted with the project's
/// keys. With one in its ``RoomClient/Environment``, a client asks for a token before it logs in, again when a login
/// with a token it used before is refused for its token (it expired while the client was away), and when the server
/// says the token will expire (then it renews with the new one). A failed fetch counts as a failed attempt: the
/// client's retry policy says when it asks again.
///
/// A source answers every request exactly once, from any thread, and never while the call that asked is still on
/// the stack; one that waits on a server bounds the wait itself (``TokenFetchFailure/Cause/timeout``). Time, where a
/// source needs it, is the loop's: in virtual time a modelled token server runs on the same clock as the clients.
public protocol TokenSource: Sendable {
    /// Fetches a token for `request`, for a client on `loop`, and calls `completion` with it or with why there is
    /// none.
    func fetchToken(
        for request: TokenRequest,
        on loop: any RuntimeLoop,
        completion: @escaping @Sendable (Result<String, TokenFetchFailure>) -> Void
    )
}

/// What a client asks its token source for: a token for `userID` in `roomID`, of `dialect`'s vendor.
public struct TokenRequest: Sendable, Hashable {
    public var userID: String
    public var roomID: String
    public var dialect: DialectName

    public init(userID: String, roomID: String, dialect: DialectName) {
        self.userID = userID
        self.roomID = roomID
        self.dialect = dialect
    }
}

/// Why a token fetch failed: its cause, as the report counts it, and the words that say more.
public struct TokenFetchFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// A fetch's failure, by cause.
    public enum Cause: String, Sendable, Hashable, CaseIterable, Codable {
        /// No answer within the fetch's timeout (the server hung, or was too busy to answer in time).
        case timeout
        /// The connection was refused (nothing listens there).
        case refused
        /// The TLS handshake failed, or the server's certificate did not verify.
        case tls
        /// The server answered with a status other than 200.
        case httpStatus
        /// A 200 whose body holds no token (neither `{"token": "…"}` nor a line of text).
        case badBody
        /// The connection closed before the answer was whole.
        case closed
        /// The source could not make the token (a modelled server's failure share, a minting error).
        case unavailable
    }

    public var cause: Cause
    /// More words: the status, OpenSSL's reason, what the body held.
    public var detail: String

    public init(_ cause: Cause, _ detail: String = "") {
        self.cause = cause
        self.detail = detail
    }

    public var description: String { detail.isEmpty ? cause.rawValue : "\(cause.rawValue): \(detail)" }
}

/// Sees every token fetch the clients make (a load test's token storm): called on the client's loop; one observer
/// shared by clients on several loops must be safe to call from those threads at once.
public protocol TokenFetchObserver: Sendable {
    /// A client asked its source for a token at `time`.
    func tokenFetchStarted(at time: RuntimeInstant)
    /// A fetch begun `latency` earlier ended at `time`: with a token, or with `failure`.
    func tokenFetchEnded(failure: TokenFetchFailure.Cause?, latency: Duration, at time: RuntimeInstant)
}

/// The clients' token source, and who watches its fetches.
public struct TokenSupply: Sendable {
    public var source: any TokenSource
    public var observer: (any TokenFetchObserver)?

    public init(source: any TokenSource, observer: (any TokenFetchObserver)? = nil) {
        self.source = source
        self.observer = observer
    }
}

/// How a room of a client with a token source stands with its token (``RoomConnection/tokenStep``).
enum TokenStep: UInt8, Sendable {
    /// The token in hand is used (or the client fetches none).
    case settled
    /// The next attempt fetches a token before it logs in.
    case due
    /// A fetch is on its way; the login waits for it.
    case fetching
    /// The token was just fetched, for the login now in flight: a refusal of it is the token's, not its age's.
    case fresh
    /// The room is in, and fetches the token it will renew with.
    case renewing
    /// The renewal's fetch failed; the room's renewal timer says when it asks again.
    case renewalDue
}
