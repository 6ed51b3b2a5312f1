/// The rooms a connection carries, by room ID. Almost every connection carries one room (an SDK's connection carries
/// its device's rooms, and most apps are in one), so the first is kept inline and only the others in a dictionary: a
/// dictionary of one is a 200-byte allocation for every connection a server holds.
struct ConnectionRooms<Value>: Sequence {
    private var first: (key: String, value: Value)?
    private var others: [String: Value] = [:]

    init() {}

    var count: Int { (first == nil ? 0 : 1) + others.count }

    subscript(roomID: String) -> Value? {
        get { first?.key == roomID ? first?.value : others[roomID] }
        set {
            if first?.key == roomID {
                // The first goes; one of the others (if any) takes its place, so that one room stays inline.
                guard let newValue else {
                    first = others.popFirst()
                    return
                }
                first = (roomID, newValue)
            } else if first == nil, others.isEmpty, let newValue {
                first = (roomID, newValue)
            } else {
                others[roomID] = newValue
            }
        }
    }

    mutating func removeAll() {
        first = nil
        others = [:]
    }

    /// The rooms: the first, then the others in the dictionary's order.
    func makeIterator() -> Iterator {
        Iterator(first: first, others: others.makeIterator())
    }

    struct Iterator: IteratorProtocol {
        fileprivate var first: (key: String, value: Value)?
        fileprivate var others: Dictionary<String, Value>.Iterator

        mutating func next() -> (key: String, value: Value)? {
            if let next = first {
                first = nil
                return next
            }
            return others.next()
        }
    }
}

extension ConnectionRooms: Sendable where Value: Sendable {}
