/// Names kept once, each a small number: a table of a million entries whose values are one of a few names (an
/// oracle's state per connection) keeps four bytes an entry instead of a sixteen-byte string.
///
/// The names are whatever the input says, so a hostile log's every distinct name is kept too (twice: as a key and in
/// the list): the interner grows with the input's distinct names, not with its entries.
struct StringInterner {
    private var numbers: [String: UInt32] = [:]
    private var names: [String] = []

    init() {}

    /// The number of `name`, given it one if it has none.
    mutating func number(of name: String) -> UInt32 {
        if let number = numbers[name] { return number }
        let number = UInt32(names.count)
        names.append(name)
        numbers[name] = number
        return number
    }

    /// The name numbered `number`.
    subscript(number: UInt32) -> String { names[Int(number)] }
}
