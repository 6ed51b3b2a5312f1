/// A call only one vendor's SDK has (Agora's `setClientRole`), as a scenario's action names it: carried as data
/// through the shared types, and read and carried out by the dialect that declares it
/// (``RoomDialect/vendorCalls``). Other dialects accept it and ignore it, as they do another dialect's timings.
public struct VendorCall: Sendable, Hashable {
    /// The action's name in a scenario (`"setClientRole"`).
    public var name: String
    /// The action's other fields, by name (`"role": "audience"`).
    public var arguments: [String: String]

    public init(_ name: String, arguments: [String: String] = [:]) {
        self.name = name
        self.arguments = arguments
    }

    /// What a dialect accepts for one of its calls: each argument's name and the values it may take. Every
    /// argument is required.
    public struct Signature: Sendable, Hashable {
        /// The values each argument may take, in the order a message lists them.
        public var arguments: [String: [String]]

        public init(arguments: [String: [String]] = [:]) {
            self.arguments = arguments
        }
    }
}
