/// This build's version: what `roomlink --version` prints, and what a report or a bug report should quote.
public enum RoomLinkVersion {
    /// The release, as `MAJOR.MINOR.PATCH`. Before 1.0 a minor release may change the API; the wire protocol and the
    /// event log have versions of their own (``WireProtocol/version``, `docs/contract.md` §7).
    public static let number = "0.9.0"

    /// `roomlink 0.9.0 (wire protocol 1)`.
    public static var description: String { "roomlink \(number) (wire protocol \(WireProtocol.version))" }
}
