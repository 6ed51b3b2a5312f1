extension Duration {
    /// Parses a duration written as a number and a unit: `"120ms"`, `"90s"`, `"20m"`, `"1.5h"`, `"250us"`,
    /// `"10ns"`, or as several of them from the largest unit down: `"1m30s"`, `"1h15m"`, `"2s500ms"`; a bare `"0"`
    /// is zero.
    ///
    /// This is the form of every duration in a scenario file and on the command line.
    ///
    /// A number is unsigned decimal digits with at most one decimal point: a duration is a length of time, never
    /// negative, so it takes no sign (`"+5s"` and `"-5s"` are refused, not read as 5 s), nor an exponent or a hex form
    /// (`"1e3ms"`, `"0x10s"`) that would hide how long it is.
    ///
    /// - Returns: `nil` if `text` is not of that form.
    public init?(roomLinkText text: String) {
        let trimmed = String(text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
        if trimmed == "0" {
            self = .zero
            return
        }
        if let nanoseconds = Self.nanoseconds(single: Substring(trimmed)) ?? Self.nanoseconds(compound: trimmed),
            nanoseconds < Double(Int64.max)
        {
            self = .nanoseconds(Int64(nanoseconds.rounded()))
            return
        }
        return nil
    }

    /// The units a duration is written in, largest first.
    private static let textUnits: [(suffix: String, nanoseconds: Double)] = [
        ("h", 3_600e9), ("m", 60e9), ("s", 1e9), ("ms", 1e6), ("us", 1e3), ("µs", 1e3), ("ns", 1),
    ]

    /// `"120ms"`: one unsigned decimal number and one unit.
    private static func nanoseconds(single text: Substring) -> Double? {
        // Longest suffix first, so that "ms" is not read as "s" and "m".
        for (suffix, size) in textUnits.sorted(by: { $0.suffix.count > $1.suffix.count }) where text.hasSuffix(suffix) {
            let number = text.dropLast(suffix.count)
            guard isDecimal(number), let value = Double(number), value.isFinite else { return nil }
            return value * size
        }
        return nil
    }

    /// Whether `text` is digits with at most one decimal point among them, and at least one digit.
    private static func isDecimal(_ text: Substring) -> Bool {
        text.contains { $0.isASCII && $0.isNumber } && text.allSatisfy { $0.isASCII && ($0.isNumber || $0 == ".") }
            && text.filter { $0 == "." }.count <= 1
    }

    /// `"1m30s"`: decimal numbers, each followed by a unit smaller than the one before.
    private static func nanoseconds(compound text: String) -> Double? {
        guard !text.isEmpty else { return nil }
        var total = 0.0
        var rest = Substring(text)
        var smallestSoFar = Double.infinity
        while !rest.isEmpty {
            let number = rest.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
            guard isDecimal(number), let value = Double(number) else { return nil }
            rest = rest.dropFirst(number.count)
            let unitText = rest.prefix { !($0.isASCII && ($0.isNumber || $0 == ".")) }
            guard let unit = textUnits.first(where: { $0.suffix == unitText }), unit.nanoseconds < smallestSoFar else {
                return nil
            }
            smallestSoFar = unit.nanoseconds
            rest = rest.dropFirst(unitText.count)
            total += value * unit.nanoseconds
        }
        return total.isFinite ? total : nil
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
