/// An error thrown by a RoomLink runtime: a timer service, an event loop or a simulation.
///
/// Compare errors by ``code``; ``message`` says what was wrong in words meant for a person.
public struct RuntimeError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case loopShutDown
            case invalidDelay
            case invalidPeriod
            case invalidConfiguration
            case libeventFailure
            case simulationStalled
            case simulationTimeLimit
            case simulationBusy
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The loop or simulation was shut down; it no longer accepts timers.
        public static let loopShutDown = Code(.loopShutDown)
        /// A delay was negative.
        public static let invalidDelay = Code(.invalidDelay)
        /// A periodic timer's period was zero or negative.
        public static let invalidPeriod = Code(.invalidPeriod)
        /// A runtime was configured with a value it cannot use (a loop count of zero, a time scale of zero, …).
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// A libevent call failed.
        public static let libeventFailure = Code(.libeventFailure)
        /// A simulation's body was still waiting while nothing was runnable and no timer was pending.
        public static let simulationStalled = Code(.simulationStalled)
        /// A simulation's body had not finished when virtual time reached the run's limit.
        public static let simulationTimeLimit = Code(.simulationTimeLimit)
        /// A simulation was asked to run while another run was in progress.
        public static let simulationBusy = Code(.simulationBusy)

        public var description: String { String(describing: base) }
    }

    /// What kind of failure this is.
    public var code: Code
    /// What was wrong, for a person.
    public var message: String
    /// Where the error was created.
    public var location: String

    private init(code: Code, message: String, file: String, line: Int) {
        self.code = code
        self.message = message
        self.location = "\(file):\(line)"
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public var description: String { "\(code): \(message)" }

    package static func loopShutDown(_ what: String, file: String = #fileID, line: Int = #line) -> Self {
        Self(code: .loopShutDown, message: "\(what) was shut down and accepts no more timers", file: file, line: line)
    }

    package static func invalidDelay(_ delay: Duration, file: String = #fileID, line: Int = #line) -> Self {
        Self(code: .invalidDelay, message: "delay must not be negative, got \(delay)", file: file, line: line)
    }

    package static func invalidPeriod(_ period: Duration, file: String = #fileID, line: Int = #line) -> Self {
        Self(code: .invalidPeriod, message: "period must be positive, got \(period)", file: file, line: line)
    }

    package static func invalidConfiguration(_ message: String, file: String = #fileID, line: Int = #line) -> Self {
        Self(code: .invalidConfiguration, message: message, file: file, line: line)
    }

    package static func libeventFailure(_ call: String, file: String = #fileID, line: Int = #line) -> Self {
        Self(code: .libeventFailure, message: "libevent call \(call) failed", file: file, line: line)
    }

    package static func simulationStalled(at now: RuntimeInstant, file: String = #fileID, line: Int = #line) -> Self {
        Self(
            code: .simulationStalled,
            message: "the simulation's body is waiting at \(now), but nothing is runnable and no timer is pending "
                + "(did it await work outside the simulation?)",
            file: file,
            line: line
        )
    }

    package static func simulationTimeLimit(_ limit: RuntimeInstant, file: String = #fileID, line: Int = #line) -> Self
    {
        Self(
            code: .simulationTimeLimit,
            message: "the simulation's body had not finished when virtual time reached its limit \(limit)",
            file: file,
            line: line
        )
    }

    package static func simulationBusy(file: String = #fileID, line: Int = #line) -> Self {
        Self(code: .simulationBusy, message: "the simulation is already running a body", file: file, line: line)
    }
}
