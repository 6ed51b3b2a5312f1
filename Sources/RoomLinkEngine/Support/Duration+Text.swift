extension Duration {
    /// Parses a duration written as a number and a unit: `"120ms"`, `"90s"`, `"20m"`, `"1.5h"`, `"250us"`,
    /// `"10ns"`; a bare `"0"` is zero.
    ///
    /// This is the form of every duration in a scenario file and on the command line.
    ///
    /// - Returns: `nil` if `text` is not of that form or is negative.
    public init?(roomLinkText text: String) {
        let trimmed = String(text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
        if trimmed == "0" {
            self = .zero
            return
        }
        let units: [(String, Double)] = [
            ("ns", 1), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9), ("m", 60e9), ("h", 3_600e9),
        ]
        // Longest suffix first, so that "ms" is not read as "s" and "m".
        for (suffix, nanosecondsPerUnit) in units.sorted(by: { $0.0.count > $1.0.count })
        where trimmed.hasSuffix(suffix) {
            guard let value = Double(trimmed.dropLast(suffix.count)), value.isFinite, value >= 0 else { return nil }
            let nanoseconds = (value * nanosecondsPerUnit).rounded()
            guard nanoseconds < Double(Int64.max) else { return nil }
            self = .nanoseconds(Int64(nanoseconds))
            return
        }
        return nil
    }

    /// The duration as `init(roomLinkText:)` reads it, in the largest unit that divides it exactly: `"90s"`, `"20m"`,
    /// `"1500ms"`.
    public var roomLinkText: String {
        let nanoseconds = nanosecondsClamped
        guard nanoseconds != 0 else { return "0" }
        let units: [(String, Int64)] = [
            ("h", 3_600_000_000_000), ("m", 60_000_000_000), ("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000),
        ]
        for (suffix, size) in units where nanoseconds % size == 0 { return "\(nanoseconds / size)\(suffix)" }
        return "\(nanoseconds)ns"
    }

    /// The duration in seconds, as a floating-point number.
    public var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// The duration in milliseconds, as a floating-point number.
    /// (Whole seconds and the rest converted apart: `520.2 * 1_000` is 520200.00000000006, which put a scenario's
    /// call at 520.2 s after the event it caused, logged at exactly 520200.0 ms.)
    public var milliseconds: Double { Double(components.seconds) * 1_000 + Double(components.attoseconds) / 1e15 }
}
