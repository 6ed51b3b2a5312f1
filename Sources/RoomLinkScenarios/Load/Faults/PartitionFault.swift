/// A share of the rooms are cut off from their clients at `at`, each healing after its own drawn length; only
/// silence tells the clients, and no network-up event makes them all retry at once (`--partition SHARE@AT:LENGTH`).
public struct PartitionFault: LoadFault, Equatable {
    public static let name = "partition"
    public static let form = "SHARE@AT:LENGTH (a share of the rooms), e.g. 0.1@5m:60s (LENGTH 60s, 30s..2m or ~60s)"

    public var fraction: Double
    public var at: Duration
    public var length: OutageLength

    public init(fraction: Double, at: Duration, length: OutageLength) {
        self.fraction = fraction
        self.at = at
        self.length = length
    }

    public init(spec: String, field: String, run: LoadPlan.Span) throws(RoomLinkError) {
        let (share, at, length) = try FaultSpec.shareAtLength(spec, field: field, form: Self.form)
        self.init(fraction: share, at: at, length: length)
    }

    public var description: String { "\(fraction)@\(at.roomLinkText):\(FaultSpec.text(length))" }

    public var window: (start: Duration, end: Duration?) { (at, nil) }

    public var recoveryWindow: LoadReport.FaultWindow? {
        guard let longest = FaultSpec.longest(length) else { return nil }
        return LoadReport.FaultWindow(
            fault: "partition \(fraction)@\(at.roomLinkText)",
            startSeconds: at.seconds,
            endSeconds: (at + longest).seconds
        )
    }

    public func entries(slices: inout LoadPlan.Slices, plan: LoadPlan) -> [Scenario.Entry] {
        [
            Scenario.Entry(
                at: at,
                target: .populationRooms(fraction: fraction, offset: slices.rooms(fraction)),
                action: .partition,
                length: length
            )
        ]
    }
}
