/// An error from RoomLink's engine and tools: a value that does not fit, named with what was expected.
///
/// Compare by ``code``; ``message`` is for a person and names the field or argument at fault.
public struct RoomLinkError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case invalidArgument
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// An argument or field had a value that RoomLink cannot use.
        public static let invalidArgument = Code(.invalidArgument)

        public var description: String { String(describing: base) }
    }

    /// What kind of failure this is.
    public var code: Code
    /// What was wrong, naming the field or argument and what was expected.
    public var message: String
    /// Where the error was created.
    public var location: String

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    public var description: String { message }

    /// An argument named `name` had a value that is not what was expected.
    public static func invalidArgument(
        _ name: String,
        _ expected: String,
        got value: String,
        file: String = #fileID,
        line: Int = #line
    ) -> Self {
        RoomLinkError(
            code: .invalidArgument,
            message: "\(name): expected \(expected), got \(value)",
            location: "\(file):\(line)"
        )
    }
}
