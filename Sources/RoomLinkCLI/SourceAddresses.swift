/// `--source-addresses`: IPv4 ranges (`127.0.0.2-127.0.0.40`) and single addresses (IPv4 or IPv6), comma-separated.
enum SourceAddresses {
    /// The most addresses a list may expand to.
    static let limit = 65_536

    struct Invalid: Error, CustomStringConvertible {
        let description: String
    }

    static func expand(_ text: String) throws(Invalid) -> [String] {
        var addresses: [String] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false).map({ $0.filter { $0 != " " } }) {
            guard !part.isEmpty else { throw Invalid(description: "an empty entry in '\(text)'") }
            let bounds = part.split(separator: "-", omittingEmptySubsequences: false)
            if bounds.count == 2 {
                guard let low = ipv4(bounds[0]), let high = ipv4(bounds[1]) else {
                    throw Invalid(description: "'\(part)' is not a range of IPv4 addresses (A.B.C.D-E.F.G.H)")
                }
                guard low <= high else { throw Invalid(description: "'\(part)' runs backwards") }
                guard Int(high - low) + addresses.count < limit else {
                    throw Invalid(description: "more than \(limit) addresses")
                }
                for value in low...high { addresses.append(dotted(value)) }
            } else if ipv4(Substring(part)) != nil || (part.contains(":") && part.count <= 45) {
                addresses.append(String(part))
            } else {
                throw Invalid(description: "'\(part)' is not an IP address or a range")
            }
        }
        guard addresses.count <= limit else { throw Invalid(description: "more than \(limit) addresses") }
        return addresses
    }

    private static func ipv4(_ text: Substring) -> UInt32? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for part in parts {
            guard part.count <= 3, let byte = UInt8(part) else { return nil }
            value = value << 8 | UInt32(byte)
        }
        return value
    }

    private static func dotted(_ value: UInt32) -> String {
        "\(value >> 24).\(value >> 16 & 255).\(value >> 8 & 255).\(value & 255)"
    }
}
