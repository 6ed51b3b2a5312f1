/// A JSON parser that accepts exactly RFC 8259 and refuses a key written twice in one object, naming where.
///
/// Foundation's readers are lenient in ways that hide mistakes in a hand-written scenario: they accept trailing
/// commas, and of two values for one key they silently keep one. A scenario is a contract, so RoomLink reads it
/// strictly: no trailing commas, comments, single quotes, `NaN`, leading zeros or control characters in strings;
/// one value and nothing after it but whitespace; nesting at most ``maximumDepth`` deep (a hostile file cannot
/// exhaust the stack).
package struct StrictJSONParser {
    /// Objects and arrays nested deeper than this are refused.
    package static let maximumDepth = 256

    /// Why the text is not JSON, and where (1-based line and column), or which key was duplicated.
    package enum Failure: Error, Equatable {
        case syntax(String, line: Int, column: Int)
        case duplicateKey(path: String)
    }

    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0

    private init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Parses `bytes` as one JSON document. Paths in duplicate-key failures start at `root` (`""` for keys named
    /// bare, as `end` or `timeline[2].at`).
    package static func parse(_ bytes: [UInt8], root: String = "") throws(Failure) -> JSONValue {
        var parser = StrictJSONParser(bytes)
        // A byte-order mark is not JSON, but editors write one; skip it rather than reject the file.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.index = 3 }
        parser.skipWhitespace()
        let value = try parser.value(path: root)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.failure("text after the JSON value") }
        return value
    }

    // MARK: - Values

    private mutating func value(path: String) throws(Failure) -> JSONValue {
        guard index < bytes.count else { throw failure("the text ends where a value should be") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object(path: path)
        case UInt8(ascii: "["): return try array(path: path)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw failure("unexpected character \(describe(bytes[index]))")
        }
    }

    private mutating func object(path: String) throws(Failure) -> JSONValue {
        try enter()
        index += 1  // {
        var fields: [String: JSONValue] = [:]
        skipWhitespace()
        if peek == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(fields)
        }
        while true {
            skipWhitespace()
            guard peek == UInt8(ascii: "\"") else {
                throw failure(peek == UInt8(ascii: "}") ? "a trailing comma before }" : "expected a key in quotes")
            }
            let key = try string()
            let keyPath = path.isEmpty ? key : "\(path).\(key)"
            skipWhitespace()
            guard peek == UInt8(ascii: ":") else { throw failure("expected : after the key \"\(key)\"") }
            index += 1
            skipWhitespace()
            let item = try value(path: keyPath)
            guard fields.updateValue(item, forKey: key) == nil else { throw .duplicateKey(path: keyPath) }
            skipWhitespace()
            switch peek {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                depth -= 1
                return .object(fields)
            default: throw failure("expected , or } in an object")
            }
        }
    }

    private mutating func array(path: String) throws(Failure) -> JSONValue {
        try enter()
        index += 1  // [
        var items: [JSONValue] = []
        skipWhitespace()
        if peek == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            if peek == UInt8(ascii: "]") { throw failure("a trailing comma before ]") }
            items.append(try value(path: "\(path)[\(items.count)]"))
            skipWhitespace()
            switch peek {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                depth -= 1
                return .array(items)
            default: throw failure("expected , or ] in an array")
            }
        }
    }

    private mutating func enter() throws(Failure) {
        depth += 1
        guard depth <= Self.maximumDepth else { throw failure("nesting deeper than \(Self.maximumDepth) levels") }
    }

    private mutating func literal(_ word: String, _ value: JSONValue) throws(Failure) -> JSONValue {
        let utf8 = Array(word.utf8)
        guard bytes.count - index >= utf8.count, Array(bytes[index..<index + utf8.count]) == utf8 else {
            throw failure("unexpected character \(describe(bytes[index]))")
        }
        index += utf8.count
        return value
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    private mutating func number() throws(Failure) -> Double {
        let start = index
        if peek == UInt8(ascii: "-") { index += 1 }
        guard let first = peek, isDigit(first) else { throw failure("a number needs a digit") }
        index += 1
        if first == UInt8(ascii: "0"), let next = peek, isDigit(next) { throw failure("a number with a leading zero") }
        while let next = peek, isDigit(next) { index += 1 }
        if peek == UInt8(ascii: ".") {
            index += 1
            guard let next = peek, isDigit(next) else { throw failure("a digit must follow the decimal point") }
            while let next = peek, isDigit(next) { index += 1 }
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            index += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
            guard let next = peek, isDigit(next) else { throw failure("a digit must follow the exponent") }
            while let next = peek, isDigit(next) { index += 1 }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        // Every text of this grammar is a Double: too large becomes ±infinity, which the fields that read numbers
        // refuse by name ("a number", "a whole number of at least 0").
        return Double(text) ?? .infinity
    }

    private mutating func string() throws(Failure) -> String {
        index += 1  // "
        var scalars = String.UnicodeScalarView()
        var runStart = index
        func flushRun(
            _ parser: StrictJSONParser,
            upTo end: Int,
            into scalars: inout String.UnicodeScalarView
        )
            throws(Failure)
        {
            guard runStart < end else { return }
            // Validates the UTF-8 of the unescaped run.
            guard let run = String(validating: parser.bytes[runStart..<end], as: UTF8.self) else {
                throw parser.failure("a string that is not valid UTF-8")
            }
            scalars.append(contentsOf: run.unicodeScalars)
        }
        while true {
            guard index < bytes.count else { throw failure("a string that never ends") }
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                try flushRun(self, upTo: index, into: &scalars)
                index += 1
                return String(scalars)
            case UInt8(ascii: "\\"):
                try flushRun(self, upTo: index, into: &scalars)
                index += 1
                scalars.append(try escape())
                runStart = index
            case 0..<0x20:
                throw failure("a control character (\(describe(byte))) inside a string; write it escaped")
            default:
                index += 1
            }
        }
    }

    private mutating func escape() throws(Failure) -> Unicode.Scalar {
        guard let byte = peek else { throw failure("a string that never ends") }
        index += 1
        switch byte {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            let high = try hex4()
            if (0xD800..<0xDC00).contains(high) {
                // A surrogate pair: \uD83D\uDE00.
                guard peek == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") else {
                    throw failure("a lone surrogate \\u\(String(high, radix: 16))")
                }
                index += 2
                let low = try hex4()
                guard (0xDC00..<0xE000).contains(low) else {
                    throw failure("a lone surrogate \\u\(String(high, radix: 16))")
                }
                return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))!
            }
            guard let scalar = Unicode.Scalar(high) else {
                throw failure("a lone surrogate \\u\(String(high, radix: 16))")
            }
            return scalar
        default:
            index -= 1
            throw failure("an unknown escape \\\(describe(byte))")
        }
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard bytes.count - index >= 4 else { throw failure("\\u needs four hex digits") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = hexValue(bytes[index]) else { throw failure("\\u needs four hex digits") }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    // MARK: - Bytes

    private var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = peek,
            byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\t")
                || byte == UInt8(ascii: "\r")
        {
            index += 1
        }
    }

    private func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    private func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    private func describe(_ byte: UInt8) -> String {
        (0x21..<0x7F).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
    }

    /// A syntax failure at the current position.
    private func failure(_ reason: String) -> Failure {
        var line = 1
        var column = 1
        for byte in bytes[..<min(index, bytes.count)] {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1  // count characters, not UTF-8 continuation bytes
            }
        }
        return .syntax(reason, line: line, column: column)
    }
}
