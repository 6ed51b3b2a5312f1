import ArgumentParser

/// A size on the command line: a number of bytes with an optional binary unit, `512M`, `24G`, `2GiB`, `1000000`.
struct ByteCount: ExpressibleByArgument, CustomStringConvertible {
    var bytes: UInt64

    init?(argument: String) {
        let units: [(String, UInt64)] = [
            ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40),
            ("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30), ("T", 1 << 40), ("B", 1),
        ]
        var number = Substring(argument)
        var scale: UInt64 = 1
        if let (suffix, size) = units.first(where: { argument.hasSuffix($0.0) }) {
            number = number.dropLast(suffix.count)
            scale = size
        }
        guard let value = Double(number), value.isFinite, value > 0 else { return nil }
        let total = (value * Double(scale)).rounded()
        guard total < Double(UInt64.max) else { return nil }
        bytes = UInt64(total)
    }

    var description: String { "\(bytes) B" }
}
