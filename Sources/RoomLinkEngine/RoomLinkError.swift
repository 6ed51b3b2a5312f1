/// An error from RoomLink's engine and tools: what kind of thing went wrong, the field or path it concerns, and a
/// message for a person.
///
/// Branch on ``code`` — the kinds a caller handles differently: bad input to fix and retry
/// (``Code/invalidInput``), a failure of the file system or a pipe (``Code/ioFailure``), a request this build or
/// platform cannot do (``Code/unsupported``), and a broken promise inside RoomLink (``Code/internalError``).
/// ``field`` names the scenario field, argument or path at fault when there is one; ``message`` says the rest.
///
/// ```swift
/// do {
///     let scenario = try Scenario(json: data)
/// } catch let error as RoomLinkError where error.code == .invalidInput {
///     print("fix \(error.field ?? "the scenario"): \(error.message)")
/// }
/// ```
///
/// Equality compares the code only (as swift-nio's and swift-service-lifecycle's errors do), so
/// `#expect(throws: RoomLinkError.invalidInput)`-style checks read plainly.
public struct RoomLinkError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case invalidInput
            case ioFailure
            case unsupported
            case internalError
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A value given to RoomLink — a scenario field, an argument, an event log line, an API call's parameter —
        /// is not one it can use. Fix the input; trying again unchanged fails again.
        public static let invalidInput = Code(.invalidInput)
        /// Reading or writing a file, a pipe or a device failed (not found, no permission, disk full, closed pipe).
        /// The input may be fine; the place it goes to or comes from is not.
        public static let ioFailure = Code(.ioFailure)
        /// The request is well formed but this build, platform or mode cannot do it.
        public static let unsupported = Code(.unsupported)
        /// RoomLink broke one of its own promises: a bug to report, with ``RoomLinkError/location``.
        public static let internalError = Code(.internalError)

        /// The former name of ``invalidInput``.
        @available(*, deprecated, renamed: "invalidInput")
        public static var invalidArgument: Code { .invalidInput }

        public var description: String { String(describing: base) }

        /// The exit status `roomlink` ends with for an error of this kind (docs/cli.md, "Exit status"): 2 for
        /// invalid input, 74 for an I/O failure (`EX_IOERR`), 69 for unsupported (`EX_UNAVAILABLE`) and 70 for an
        /// internal error (`EX_SOFTWARE`), after sysexits(3). A run whose log breaks the spec ends with 1.
        public var exitStatus: Int32 {
            switch base {
            case .invalidInput: 2
            case .ioFailure: 74
            case .unsupported: 69
            case .internalError: 70
            }
        }
    }

    /// What kind of failure this is.
    public var code: Code
    /// The scenario field (a path such as `timeline[2].at`), argument or file path at fault, when there is one.
    public var field: String?
    /// What was wrong, naming the field or path and what was expected.
    public var message: String
    /// The underlying error, when this one wraps another (a system call's or Foundation's).
    public var cause: (any Error)?
    /// Where the error was created (`#fileID:#line`).
    public var location: String

    /// Makes an error of kind `code`; prefer the static factories, which write the message in RoomLink's form.
    public init(
        code: Code,
        field: String? = nil,
        message: String,
        cause: (any Error)? = nil,
        file: String = #fileID,
        line: Int = #line
    ) {
        self.code = code
        self.field = field
        self.message = message
        self.cause = cause
        self.location = "\(file):\(line)"
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    public var description: String { message }

    /// The same error, naming `newField` where it named its field: a tool built on RoomLink names a library field
    /// by its own name for it (`roomlink` says `--clients` where `LoadPlan` says `clients`). The message's
    /// leading "`field`:" changes with it.
    public func naming(_ newField: String) -> Self {
        var renamed = self
        if let field, message.hasPrefix(field + ":") { renamed.message = newField + message.dropFirst(field.count) }
        renamed.field = newField
        return renamed
    }

    /// The same error with its field renamed by `names` (a library field to a tool's name for it); unchanged when
    /// it names no field in `names`.
    public func naming(fields names: [String: String]) -> Self {
        guard let field, let newField = names[field] else { return self }
        return naming(newField)
    }

    /// An error of kind ``Code/invalidInput`` with no details, for comparisons: `error == .invalidInput`.
    public static var invalidInput: Self { Self(code: .invalidInput, message: "invalid input") }
    /// An error of kind ``Code/ioFailure`` with no details, for comparisons.
    public static var ioFailure: Self { Self(code: .ioFailure, message: "I/O failure") }

    /// The field or argument `name` had a value that is not what was expected (kind ``Code/invalidInput``).
    ///
    /// The message reads "`name`: expected `expected`, got `value`".
    public static func invalidArgument(
        _ name: String,
        _ expected: String,
        got value: String,
        file: String = #fileID,
        line: Int = #line
    ) -> Self {
        Self(
            code: .invalidInput,
            field: name,
            message: "\(name): expected \(expected), got \(value)",
            file: file,
            line: line
        )
    }

    /// `operation` on `path` failed with the system's error number `errno` (kind ``Code/ioFailure``).
    ///
    /// The message reads "`path`: cannot `operation` (`strerror`)", for example
    /// "report.json: cannot write (No space left on device)".
    public static func ioFailure(
        _ path: String,
        cannot operation: String,
        errno: Int32,
        file: String = #fileID,
        line: Int = #line
    ) -> Self {
        Self(
            code: .ioFailure,
            field: path,
            message: "\(path): cannot \(operation) (\(systemErrorText(errno)))",
            file: file,
            line: line
        )
    }

    /// `operation` on `path` failed with `cause` (kind ``Code/ioFailure``).
    public static func ioFailure(
        _ path: String,
        cannot operation: String,
        cause: any Error,
        file: String = #fileID,
        line: Int = #line
    ) -> Self {
        Self(
            code: .ioFailure,
            field: path,
            message: "\(path): cannot \(operation) (\(cause))",
            cause: cause,
            file: file,
            line: line
        )
    }

    /// `what` is not supported (kind ``Code/unsupported``); `because` says why or what to use instead.
    public static func unsupported(
        _ what: String,
        because reason: String,
        file: String = #fileID,
        line: Int = #line
    ) -> Self {
        Self(code: .unsupported, field: nil, message: "\(what) is not supported: \(reason)", file: file, line: line)
    }

    /// RoomLink broke its own promise `what` (kind ``Code/internalError``).
    public static func internalError(_ what: String, file: String = #fileID, line: Int = #line) -> Self {
        Self(code: .internalError, message: "internal error: \(what)", file: file, line: line)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The system's text for an error number.
func systemErrorText(_ number: Int32) -> String {
    String(cString: strerror(number))
}
