import CHTTPParser
import Foundation

/// One HTTP/1.1 request, as it arrived — or, read by a reader of responses, the head and body of a response.
struct HTTPRequest: Sendable {
    /// `GET`, `POST`, …
    var method = ""
    /// A response's status code (`101`, `401`, …); 0 for a request.
    var status = 0
    /// The request target: the path and its query.
    var target = ""
    /// Header names in lower case, in the order they came.
    var headers: [(name: String, value: String)] = []
    var body: [UInt8] = []
    /// Whether it asks to switch protocols (`Upgrade`), as a WebSocket handshake does.
    var isUpgrade = false

    /// The target's path, without its query.
    var path: Substring { target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0] }

    /// The target's query parameters, percent-decoded (the last of a name given twice).
    var query: [String: String] {
        guard let mark = target.firstIndex(of: "?") else { return [:] }
        var parameters: [String: String] = [:]
        for pair in target[target.index(after: mark)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.percentDecoded(parts[0]) else { continue }
            parameters[name] = parts.count > 1 ? Self.percentDecoded(parts[1]) ?? "" : ""
        }
        return parameters
    }

    /// The value of the header `name` (lower case), if it came.
    func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }

    /// Whether the comma-separated header `name` lists `token`, case-insensitively (`Connection: keep-alive, Upgrade`).
    func header(_ name: String, contains token: String) -> Bool {
        headers.contains { header in
            header.name == name
                && header.value.split(separator: ",").contains {
                    $0.trimmingCharacters(in: .whitespaces).lowercased() == token
                }
        }
    }

    private static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var index = text.utf8.startIndex
        let utf8 = text.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") {
                let first = utf8.index(after: index)
                guard first < utf8.endIndex, utf8.index(after: first) < utf8.endIndex,
                    let value = UInt8(
                        String(decoding: utf8[first...utf8.index(after: first)], as: UTF8.self),
                        radix: 16
                    )
                else { return nil }
                bytes.append(value)
                index = utf8.index(first, offsetBy: 2)
            } else {
                bytes.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                index = utf8.index(after: index)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

/// Reads a connection's HTTP/1.1 requests as their bytes arrive, one at a time, with Node's http-parser (libhttp-
/// parser): it stops after each whole request, and after the head of a request that switches protocols, whose
/// following bytes are the new protocol's. A reader of responses (a client's) reads answers the same way: a `101`
/// ends with its head.
final class HTTPRequestReader {
    /// What the bytes given so far make.
    enum Next {
        /// Not a whole request yet: all the bytes were taken.
        case incomplete
        /// A whole request, from the first `consumed` bytes given in this call.
        case request(HTTPRequest, consumed: Int)
        /// Not HTTP, or over a limit: what was wrong.
        case invalid(String)
    }

    /// The most a request's body may hold (a room service request is a few hundred bytes).
    static let maximumBody = 1 << 20

    private var parser = http_parser()
    private var settings = http_parser_settings()
    private var request = HTTPRequest()
    private var headerName = ""
    private var headerValue = ""
    private var inValue = false
    private var complete = false
    private var tooLarge = false

    /// A reader of requests (a server's), or of `responses` (a client's).
    init(responses: Bool = false) {
        http_parser_init(&parser, responses ? HTTP_RESPONSE : HTTP_REQUEST)
        settings.on_message_begin = { parser in
            reader(of: parser).request = HTTPRequest()
            return 0
        }
        settings.on_url = { parser, bytes, count in
            reader(of: parser).request.target += string(bytes, count)
            return 0
        }
        settings.on_header_field = { parser, bytes, count in
            let reader = reader(of: parser)
            if reader.inValue { reader.endHeader() }
            reader.headerName += string(bytes, count)
            return 0
        }
        settings.on_header_value = { parser, bytes, count in
            let reader = reader(of: parser)
            reader.inValue = true
            reader.headerValue += string(bytes, count)
            return 0
        }
        settings.on_headers_complete = { parser in
            let reader = reader(of: parser)
            if reader.inValue { reader.endHeader() }
            if parser!.pointee.type == HTTP_RESPONSE.rawValue {
                reader.request.status = Int(parser!.pointee.status_code)
            } else {
                reader.request.method = String(cString: http_method_str(http_method(UInt32(parser!.pointee.method))))
            }
            return 0
        }
        settings.on_body = { parser, bytes, count in
            let reader = reader(of: parser)
            guard reader.request.body.count + count <= HTTPRequestReader.maximumBody else {
                reader.tooLarge = true
                return 1
            }
            reader.request.body.append(contentsOf: UnsafeRawBufferPointer(start: bytes, count: count))
            return 0
        }
        settings.on_message_complete = { parser in
            reader(of: parser).complete = true
            // Stop after this request: the connection answers it before it reads the next.
            http_parser_pause(parser, 1)
            return 0
        }
    }

    private func endHeader() {
        request.headers.append((headerName.lowercased(), headerValue.trimmingCharacters(in: .whitespaces)))
        headerName = ""
        headerValue = ""
        inValue = false
    }

    /// Reads `bytes`, the ones that followed those given before.
    func read(_ bytes: UnsafeRawBufferPointer) -> Next {
        complete = false
        let consumed = withUnsafeMutablePointer(to: &parser) { parser in
            parser.pointee.data = Unmanaged.passUnretained(self).toOpaque()
            return withUnsafePointer(to: &settings) { settings in
                http_parser_execute(
                    parser,
                    settings,
                    bytes.baseAddress?.assumingMemoryBound(to: CChar.self),
                    bytes.count
                )
            }
        }
        let error = CHTTPParser_errno(&parser)
        if complete {
            if error == HPE_PAUSED { http_parser_pause(&parser, 0) }
            request.isUpgrade = CHTTPParser_isUpgrade(&parser) != 0
            return .request(request, consumed: consumed)
        }
        if tooLarge { return .invalid("a body larger than \(Self.maximumBody) bytes") }
        guard error == HPE_OK else { return .invalid(String(cString: http_errno_description(error))) }
        return .incomplete
    }
}

private func reader(of parser: UnsafeMutablePointer<http_parser>?) -> HTTPRequestReader {
    Unmanaged<HTTPRequestReader>.fromOpaque(parser!.pointee.data).takeUnretainedValue()
}

private func string(_ bytes: UnsafePointer<CChar>?, _ count: Int) -> String {
    String(decoding: UnsafeRawBufferPointer(start: bytes, count: count), as: UTF8.self)
}
