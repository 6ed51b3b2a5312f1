internal import Foundation

/// A pattern of trouble a load test plays over its population (`roomlink load --storm`, `--fault NAME=SPEC`).
///
/// A kind of fault is one type in a file of its own, registered in ``LoadPlan/faultKinds``: it reads its spec,
/// says when it strikes, and turns itself into timeline entries on the slices of the population it takes. The plan,
/// the CLI's `--fault` and the report's recoveries know it through this protocol alone.
public protocol LoadFault: Sendable, CustomStringConvertible {
    /// Its name: the plan field errors name, and the `--fault NAME=SPEC` that picks it (`storm`).
    static var name: String { get }
    /// How its spec is written, for help and errors (`SHARE@AT:LENGTH, e.g. 0.5@10m:60s`).
    static var form: String { get }
    /// Reads a spec (a flag's value), naming `field` in errors; `run` is the plan's span, for specs whose window
    /// defaults to it.
    init(spec: String, field: String, run: LoadPlan.Span) throws(RoomLinkError)
    /// When it starts, and when its last action is taken where the plan fixes it (a spread's end); drawn lengths may
    /// outlast the run, as a real outage outlasts a test.
    var window: (start: Duration, end: Duration?) { get }
    /// For a fault that ends (a storm, outages and partitions of a bounded length): the window the load report
    /// measures recovery after (``LoadReport/measureRecoveries(after:)``).
    var recoveryWindow: LoadReport.FaultWindow? { get }
    /// Its timeline entries, on the next slices of the population's shuffles (``LoadPlan/Slices``).
    func entries(slices: inout LoadPlan.Slices, plan: LoadPlan) -> [Scenario.Entry]
}

extension LoadFault {
    /// Reads `spec`, naming `field` (the fault's ``name`` by default) in errors; a window a spec leaves out spans
    /// `run` (the longest run by default).
    public init(
        _ spec: String,
        field: String? = nil,
        run: LoadPlan.Span = LoadPlan.Span(start: .zero, end: ScenarioLimits.maximumDuration)
    ) throws(RoomLinkError) {
        try self.init(spec: spec, field: field ?? Self.name, run: run)
    }

    public var recoveryWindow: LoadReport.FaultWindow? { nil }

    /// `name`: the plan field errors name.
    public var field: String { Self.name }

    /// Whether `other` is the same fault (the same kind, the same spec).
    func isSame(as other: any LoadFault) -> Bool {
        type(of: other) == Self.self && other.description == description
    }
}

extension LoadPlan {
    /// Every kind of fault a plan knows, for `--fault NAME=SPEC`: a new kind is a type and a line here.
    public static let faultKinds: [any LoadFault.Type] = [
        OutagesFault.self, StormFault.self, PartitionFault.self, FlappingFault.self, KickStormFault.self,
        TokenWaveFault.self, ChurnFault.self,
    ]

    /// Reads `NAME=SPEC` (`storm=0.5@10m:60s`) into the fault of that name.
    ///
    /// - Throws: `RoomLinkError` naming `field` for an unknown name or a spec the fault cannot read.
    public static func fault(_ text: String, field: String = "fault", run: Span) throws(RoomLinkError) -> any LoadFault
    {
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let names = faultKinds.map { $0.name }
        guard parts.count == 2, let kind = faultKinds.first(where: { $0.name == parts[0] }) else {
            throw .invalidArgument(field, "NAME=SPEC, NAME one of \(names.joined(separator: ", "))", got: text)
        }
        return try read(kind, parts[1], field: field, run: run)
    }

    /// Reads `spec` as a fault of `kind` (a generic function: the kind's metatype is opened here).
    public static func read<Kind: LoadFault>(
        _ kind: Kind.Type,
        _ spec: String,
        field: String,
        run: Span
    ) throws(RoomLinkError) -> any LoadFault {
        try Kind(spec: spec, field: field, run: run)
    }

    /// The plan's span, for faults whose window defaults to it: the population logs in until `start`, and the run
    /// ends at `end`.
    public struct Span: Sendable {
        public var start: Duration
        public var end: Duration

        public init(start: Duration, end: Duration) {
            self.start = start
            self.end = end
        }
    }

    /// Where the next fault's share of the population starts: faults take consecutive slices of the users' one
    /// seeded shuffle (wrapping around), so that two faults strike different users while the population allows;
    /// partitions take the rooms' shuffle the same way.
    public struct Slices: Sendable {
        var users = 0.0
        var rooms = 0.0

        /// The offset of the next `fraction` of the users.
        public mutating func users(_ fraction: Double) -> Double { Self.next(fraction, from: &users) }

        /// The offset of the next `fraction` of the rooms.
        public mutating func rooms(_ fraction: Double) -> Double { Self.next(fraction, from: &rooms) }

        private static func next(_ fraction: Double, from offset: inout Double) -> Double {
            if offset + fraction > 1 + 1e-9 { offset = 0 }
            defer { offset += fraction }
            return offset
        }
    }
}

extension Scenario.Entry {
    /// An entry on a `fraction` of the population starting `offset` into its shuffle, spread over `over`.
    static func population(
        _ at: Duration,
        _ action: Scenario.Action,
        fraction: Double,
        offset: Double,
        over: Duration = .zero,
        length: OutageLength? = nil
    ) -> Scenario.Entry {
        Scenario.Entry(
            at: at,
            target: .population(fraction: fraction, over: over, offset: offset),
            action: action,
            length: length
        )
    }
}

/// The pieces fault specs are written in: shares, durations, windows, lengths; every error names the form.
enum FaultSpec {
    /// `SHARE@AT[/OVER]`.
    static func shareAtOver(
        _ text: String,
        field: String,
        form: String
    ) throws(RoomLinkError) -> (
        Double, Duration, Duration
    ) {
        let (head, over) = try splitOver(text, field: field, form: form)
        let (share, at) = try splitShare(head, field: field, form: form)
        return (share, try duration(at, field: field, form: form), over)
    }

    /// `SHARE@AT:LENGTH`, LENGTH fixed, uniform or exponential.
    static func shareAtLength(
        _ text: String,
        field: String,
        form: String
    ) throws(RoomLinkError) -> (
        Double, Duration, OutageLength
    ) {
        let (share, rest) = try splitShare(text, field: field, form: form)
        let parts = rest.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2 else { throw .invalidArgument(field, form, got: text) }
        return (share, try duration(parts[0], field: field, form: form), try length(parts[1], field: field, form: form))
    }

    static func splitOver(_ text: String, field: String, form: String) throws(RoomLinkError) -> (String, Duration) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        return (parts[0], parts.count == 2 ? try duration(parts[1], field: field, form: form) : .zero)
    }

    static func splitShare(_ text: String, field: String, form: String) throws(RoomLinkError) -> (Double, String) {
        let parts = text.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, let share = Double(parts[0]), share > 0, share <= 1 else {
            throw .invalidArgument(field, form + " (SHARE in (0, 1])", got: text)
        }
        return (share, parts[1])
    }

    static func window(_ text: String, field: String, form: String) throws(RoomLinkError) -> (Duration, Duration) {
        let parts = text.components(separatedBy: "..")
        guard parts.count == 2 else { throw .invalidArgument(field, form, got: text) }
        let from = try duration(parts[0], field: field, form: form)
        let until = try duration(parts[1], field: field, form: form)
        guard from < until else { throw .invalidArgument(field, form + " (FROM before UNTIL)", got: text) }
        return (from, until)
    }

    static func length(_ text: String, field: String, form: String) throws(RoomLinkError) -> OutageLength {
        if text.hasPrefix("~") {
            let mean = try duration(String(text.dropFirst()), field: field, form: form)
            guard mean > .zero else { throw .invalidArgument(field, form, got: text) }
            return .exponential(mean: mean)
        }
        let parts = text.components(separatedBy: "..")
        if parts.count == 2 {
            let lower = try duration(parts[0], field: field, form: form)
            let upper = try duration(parts[1], field: field, form: form)
            guard lower <= upper else { throw .invalidArgument(field, form + " (shortest first)", got: text) }
            return .uniform(lower, upper)
        }
        return .fixed(try duration(text, field: field, form: form))
    }

    static func duration(_ text: String, field: String, form: String) throws(RoomLinkError) -> Duration {
        guard let value = Duration(roomLinkText: text) else {
            throw .invalidArgument(field, form + " — \"\(text)\" is not a duration like 90s", got: text)
        }
        guard value <= ScenarioLimits.maximumDuration else {
            throw .invalidArgument(
                field,
                form + " — durations are at most \(ScenarioLimits.maximumDuration.roomLinkText)",
                got: text
            )
        }
        return value
    }

    /// The longest an outage length can last, or `nil` when it has no end to speak of (exponential).
    static func longest(_ length: OutageLength) -> Duration? {
        switch length {
        case .fixed(let length): length
        case .uniform(_, let upper): upper
        case .exponential: nil
        }
    }

    /// A length as a spec writes it (`30s`, `10s..2m`, `~30s`).
    static func text(_ length: OutageLength) -> String {
        switch length {
        case .fixed(let length): length.roomLinkText
        case .uniform(let lower, let upper): "\(lower.roomLinkText)..\(upper.roomLinkText)"
        case .exponential(let mean): "~\(mean.roomLinkText)"
        }
    }
}
