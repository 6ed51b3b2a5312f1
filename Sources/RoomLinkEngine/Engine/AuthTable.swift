/// The tokens a server accepts, per user ID: what the business server issued. A login and a token renewal must each
/// present one of its user's tokens that has not expired (``RoomServer/expireToken(userID:inRooms:)``).
///
/// A user may have several — the token it logged in with and the one it will renew with, as a business server issues
/// a fresh token before the old one runs out — so a scenario or `roomlink serve --auth` can renew: `{"alice": ["t1",
/// "t2"]}`. A dictionary literal gives each user one token: `["alice": "t1"]`.
public struct AuthTable: Sendable, Hashable, ExpressibleByDictionaryLiteral {
    /// Each user's tokens, in the order given.
    public var tokens: [String: [String]]

    /// A table of several tokens per user.
    public init(tokens: [String: [String]]) {
        self.tokens = tokens
    }

    /// A table of one token per user.
    public init(_ tokens: [String: String]) {
        self.tokens = tokens.mapValues { [$0] }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }

    /// Whether `token` is one of `userID`'s tokens (a missing token is none).
    public func lists(_ token: String?, for userID: String) -> Bool {
        guard let token else { return false }
        return tokens[userID]?.contains(token) ?? false
    }

    /// Whether the table names no user.
    public var isEmpty: Bool { tokens.isEmpty }
}

extension AuthTable {
    /// Reads a table written as JSON: an object of user IDs to a token or a non-empty list of tokens, `{"alice":
    /// "t1", "bob": ["t2", "t3"]}`. Errors name the entry at fault under `path` (`auth.bob[1]`).
    package init(json value: JSONValue, at path: String) throws(RoomLinkError) {
        let form = #"an object of user IDs to a token or a list of tokens, {"alice": "t1", "bob": ["t2", "t3"]}"#
        guard case .object(let fields) = value else { throw .invalidArgument(path, form, got: value.summary) }
        var tokens: [String: [String]] = [:]
        for (userID, entry) in fields.sorted(by: { $0.key < $1.key }) {
            switch entry {
            case .string(let token):
                tokens[userID] = [token]
            case .array(let list) where !list.isEmpty:
                tokens[userID] = try list.enumerated().map { (index, item) throws(RoomLinkError) -> String in
                    guard case .string(let token) = item else {
                        throw .invalidArgument("\(path).\(userID)[\(index)]", "a token (a string)", got: item.summary)
                    }
                    return token
                }
            default:
                throw .invalidArgument("\(path).\(userID)", "a token or a non-empty list of tokens", got: entry.summary)
            }
        }
        self.init(tokens: tokens)
    }
}
