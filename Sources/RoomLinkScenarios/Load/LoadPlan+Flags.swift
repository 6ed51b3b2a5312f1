import Foundation

/// The text forms of `roomlink load`'s fault and retry flags, read into a ``LoadPlan``. Every error names the form it
/// expects and the field it read: by default the ``LoadPlan`` name (`outages`), or what the caller passes as `field`
/// (`roomlink` passes its flag, `--outages`).
extension LoadPlan {
    /// `SHARE@AT:LENGTH[/OVER]` — LENGTH is `30s`, `10s..2m` (uniform) or `~30s` (exponential with that mean).
    public static func outages(_ text: String, field: String = "outages") throws(RoomLinkError) -> Fault {
        let flag = field
        let form = "SHARE@AT:LENGTH[/OVER], e.g. 0.1@5m:10s..2m/30s (LENGTH 30s, 10s..2m or ~30s)"
        let (head, over) = try splitOver(text, flag: flag, form: form)
        let (share, at, length) = try shareAtLength(head, flag: flag, form: form)
        return .outages(fraction: share, at: at, length: length, over: over)
    }

    /// `SHARE@AT:LENGTH`, e.g. `0.5@10m:60s`.
    public static func storm(_ text: String, field: String = "storm") throws(RoomLinkError) -> Fault {
        let flag = field
        let form = "SHARE@AT:LENGTH, e.g. 0.5@10m:60s"
        let (share, rest) = try splitShare(text, flag: flag, form: form)
        let parts = rest.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2 else { throw .invalidArgument(flag, form, got: text) }
        return .storm(
            fraction: share,
            at: try duration(parts[0], flag: flag, form: form),
            length: try duration(parts[1], flag: flag, form: form)
        )
    }

    /// `SHARE@AT:LENGTH` — SHARE of the rooms, LENGTH as for ``outages(_:field:)`` (drawn per room), e.g. `0.1@5m:60s`.
    public static func partition(_ text: String, field: String = "partition") throws(RoomLinkError) -> Fault {
        let flag = field
        let form = "SHARE@AT:LENGTH (a share of the rooms), e.g. 0.1@5m:60s (LENGTH 60s, 30s..2m or ~60s)"
        let (share, at, length) = try shareAtLength(text, flag: flag, form: form)
        return .partition(fraction: share, at: at, length: length)
    }

    /// `SHARE:PERIOD:DUTY[@FROM..UNTIL]`, e.g. `0.05:20s:0.3@2m..8m` (the whole run when no window is given).
    public static func flapping(
        _ text: String,
        end: Duration,
        field: String = "flapping"
    ) throws(RoomLinkError) -> Fault {
        let flag = field
        let form = "SHARE:PERIOD:DUTY[@FROM..UNTIL], e.g. 0.05:20s:0.3@2m..8m"
        let pieces = text.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let parts = pieces[0].split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let share = Double(parts[0]), share > 0, share <= 1, let duty = Double(parts[2]),
            duty > 0, duty < 1
        else { throw .invalidArgument(flag, form, got: text) }
        let period = try duration(parts[1], flag: flag, form: form)
        guard period >= ScenarioLimits.minimumFlappingPeriod else {
            throw .invalidArgument(
                flag,
                form + " (PERIOD at least \(ScenarioLimits.minimumFlappingPeriod.roomLinkText))",
                got: text
            )
        }
        let (from, until) = pieces.count == 2 ? try window(pieces[1], flag: flag, form: form) : (.zero, end)
        return .flapping(fraction: share, period: period, duty: duty, from: from, until: until)
    }

    /// `SHARE@AT[/OVER]`, e.g. `0.2@12m/10s`.
    public static func kickStorm(_ text: String, field: String = "kickStorm") throws(RoomLinkError) -> Fault {
        let (share, at, over) = try shareAtOver(text, flag: field)
        return .kickStorm(fraction: share, at: at, over: over)
    }

    /// `SHARE@AT[/OVER]`, e.g. `0.3@15m/1m`.
    public static func tokenWave(_ text: String, field: String = "tokenWave") throws(RoomLinkError) -> Fault {
        let (share, at, over) = try shareAtOver(text, flag: field)
        return .tokenWave(fraction: share, at: at, over: over)
    }

    /// `RATE[:AWAY][@FROM..UNTIL]`: RATE clients log out every second and back in AWAY later (default 30 s), e.g.
    /// `50:20s@1m..20m` (from the end of the login window to the end when no window is given).
    public static func churn(
        _ text: String,
        start: Duration,
        end: Duration,
        field: String = "churn"
    ) throws(RoomLinkError) -> Fault {
        let flag = field
        let form = "RATE[:AWAY][@FROM..UNTIL], e.g. 50:20s@1m..20m"
        let pieces = text.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let parts = pieces[0].split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard (1...2).contains(parts.count), let rate = Int(parts[0]), rate > 0 else {
            throw .invalidArgument(flag, form, got: text)
        }
        let away = parts.count == 2 ? try duration(parts[1], flag: flag, form: form) : .seconds(30)
        let (from, until) = pieces.count == 2 ? try window(pieces[1], flag: flag, form: form) : (start, end)
        return .churn(perSecond: rate, away: away, from: from, until: until)
    }

    /// `NAME=DURATION`, e.g. `heartbeatInterval=5s` (a timing of the dialect; the scenario reader checks the name).
    public static func timing(_ text: String, field: String = "timing") throws(RoomLinkError) -> (String, Duration) {
        let flag = field
        let form = "NAME=DURATION, e.g. heartbeatInterval=5s"
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, !parts[0].isEmpty else { throw .invalidArgument(flag, form, got: text) }
        return (parts[0], try duration(parts[1], flag: flag, form: form))
    }

    /// A preset name (`liveKitJS`), a parameterised preset (`fullJitter:100ms:10s`), or a JSON retry object.
    public static func retryJSON(_ text: String, field: String = "retry") throws(RoomLinkError) -> String {
        let flag = field
        let names = (RetryPolicy.presets.keys.sorted() + RetryPolicy.parameterizedPresets.sorted())
        let form = "a preset (\(names.joined(separator: ", "))), NAME:BASE:CAP for the AWS ones, or a JSON object"
        if text.hasPrefix("{") { return text }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        if parts.count == 1, RetryPolicy.presets[parts[0]] != nil { return #"{ "preset": "\#(parts[0])" }"# }
        guard parts.count == 3, RetryPolicy.parameterizedPresets.contains(parts[0]) else {
            throw .invalidArgument(flag, form, got: text)
        }
        let base = try duration(parts[1], flag: flag, form: form)
        let cap = try duration(parts[2], flag: flag, form: form)
        return #"{ "preset": "\#(parts[0])", "base": "\#(base.roomLinkText)", "cap": "\#(cap.roomLinkText)" }"#
    }

    // MARK: - Pieces

    private static func shareAtOver(_ text: String, flag: String) throws(RoomLinkError) -> (Double, Duration, Duration)
    {
        let form = "SHARE@AT[/OVER], e.g. 0.2@12m/10s"
        let (head, over) = try splitOver(text, flag: flag, form: form)
        let (share, at) = try splitShare(head, flag: flag, form: form)
        return (share, try duration(at, flag: flag, form: form), over)
    }

    /// `SHARE@AT:LENGTH`, LENGTH fixed, uniform or exponential.
    private static func shareAtLength(
        _ text: String,
        flag: String,
        form: String
    ) throws(RoomLinkError) -> (Double, Duration, OutageLength) {
        let (share, rest) = try splitShare(text, flag: flag, form: form)
        let parts = rest.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2 else { throw .invalidArgument(flag, form, got: text) }
        return (share, try duration(parts[0], flag: flag, form: form), try length(parts[1], flag: flag, form: form))
    }

    private static func splitOver(
        _ text: String,
        flag: String,
        form: String
    ) throws(RoomLinkError) -> (String, Duration) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        return (parts[0], parts.count == 2 ? try duration(parts[1], flag: flag, form: form) : .zero)
    }

    private static func splitShare(_ text: String, flag: String, form: String) throws(RoomLinkError) -> (Double, String)
    {
        let parts = text.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, let share = Double(parts[0]), share > 0, share <= 1 else {
            throw .invalidArgument(flag, form + " (SHARE in (0, 1])", got: text)
        }
        return (share, parts[1])
    }

    private static func window(_ text: String, flag: String, form: String) throws(RoomLinkError) -> (Duration, Duration)
    {
        let parts = text.components(separatedBy: "..")
        guard parts.count == 2 else { throw .invalidArgument(flag, form, got: text) }
        let from = try duration(parts[0], flag: flag, form: form)
        let until = try duration(parts[1], flag: flag, form: form)
        guard from < until else { throw .invalidArgument(flag, form + " (FROM before UNTIL)", got: text) }
        return (from, until)
    }

    private static func length(_ text: String, flag: String, form: String) throws(RoomLinkError) -> OutageLength {
        if text.hasPrefix("~") {
            let mean = try duration(String(text.dropFirst()), flag: flag, form: form)
            guard mean > .zero else { throw .invalidArgument(flag, form, got: text) }
            return .exponential(mean: mean)
        }
        let parts = text.components(separatedBy: "..")
        if parts.count == 2 {
            let lower = try duration(parts[0], flag: flag, form: form)
            let upper = try duration(parts[1], flag: flag, form: form)
            guard lower <= upper else { throw .invalidArgument(flag, form + " (shortest first)", got: text) }
            return .uniform(lower, upper)
        }
        return .fixed(try duration(text, flag: flag, form: form))
    }

    private static func duration(_ text: String, flag: String, form: String) throws(RoomLinkError) -> Duration {
        guard let value = Duration(roomLinkText: text) else {
            throw .invalidArgument(flag, form + " — \"\(text)\" is not a duration like 90s", got: text)
        }
        guard value <= ScenarioLimits.maximumDuration else {
            throw .invalidArgument(
                flag,
                form + " — durations are at most \(ScenarioLimits.maximumDuration.roomLinkText)",
                got: text
            )
        }
        return value
    }
}
