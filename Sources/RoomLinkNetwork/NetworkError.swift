/// What can go wrong setting up the network: each case names what was wrong.
public enum NetworkError: Error, Sendable, Hashable, CustomStringConvertible {
    /// An address could not be parsed or resolved.
    case invalidAddress(String, reason: String)
    /// A listening socket could not be opened on `address` (in use, not permitted).
    case cannotListen(address: String, reason: String)
    /// The loop group is not one of libevent loops (the network runs only on them).
    case unsupportedLoopGroup
    /// A call made in the wrong state (listening twice, after shutdown).
    case misuse(String)
    /// TLS could not be set up: a certificate, key or authorities file unreadable or mismatched.
    case tls(TLSError)
    /// A file the network needs could not be written (`serve --callback-truth`).
    case cannotWrite(path: String, reason: String)

    public var description: String {
        switch self {
        case .invalidAddress(let address, let reason): "invalid address '\(address)': \(reason)"
        case .cannotListen(let address, let reason): "cannot listen on \(address): \(reason)"
        case .unsupportedLoopGroup: "the network runs on libevent loops only (a LibeventLoopGroup)"
        case .misuse(let detail): detail
        case .tls(let error): error.description
        case .cannotWrite(let path, let reason): "cannot write '\(path)': \(reason)"
        }
    }
}
