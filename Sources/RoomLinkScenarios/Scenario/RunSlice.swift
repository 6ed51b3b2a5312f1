/// One slice of a population shared by several processes: slice `index` of `count` (`roomlink load --shard I/N`,
/// written `I/N` with `I` from 0).
public struct RunSlice: Sendable, Codable, Hashable, CustomStringConvertible {
    public var index: Int
    public var count: Int

    /// - Precondition: `0 <= index < count`.
    public init(index: Int, count: Int) {
        precondition(count >= 1 && (0..<count).contains(index), "a slice is I/N with 0 <= I < N")
        self.index = index
        self.count = count
    }

    /// Parses `I/N`.
    ///
    /// - Throws: `RoomLinkError` naming `field` when the text is not `I/N` with `0 <= I < N <= 1000`.
    public init(parsing text: String, field: String) throws(RoomLinkError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]), (1...1000).contains(count),
            (0..<count).contains(index)
        else {
            throw RoomLinkError(
                code: .invalidInput,
                field: field,
                message: "\(field): expected I/N with 0 <= I < N <= 1000 (slice I of N, from 0), got '\(text)'"
            )
        }
        self.init(index: index, count: count)
    }

    public var description: String { "\(index)/\(count)" }
}
