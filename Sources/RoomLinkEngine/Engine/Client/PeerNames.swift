/// The names of the peers a client has reported present in one room, in string order: what a client that hears of
/// its peers keeps per room (a room of a hundred, 99 names).
///
/// While every name is short — at most eight bytes of ASCII, no NUL, as the population's `u<i>` and most user IDs
/// are — each is kept as one word: its bytes big-endian, zero-padded, so that the words sort as the names do (a
/// shorter name that is a prefix of a longer one is smaller either way). The first other name turns the list into
/// the names' text. Eight bytes a name, where its text took sixteen, and eight bytes in all where the room kept an
/// array of strings (both lists are one reference: the enum keeps its case in the pointer's spare bits).
struct PeerNames: Sendable, Equatable {
    private enum Storage: Sendable, Equatable {
        case words([UInt64])
        case names([String])
    }

    private var storage = Storage.words([])

    /// No names.
    init() {}

    /// `names`, sorted (duplicates kept, as sorting them keeps them).
    init(_ names: [String]) {
        var words: [UInt64] = []
        words.reserveCapacity(names.count)
        for name in names {
            guard let word = Self.word(name) else {
                storage = .names(names.sorted())
                return
            }
            words.append(word)
        }
        storage = .words(words.sorted())
    }

    var isEmpty: Bool {
        switch storage {
        case .words(let words): words.isEmpty
        case .names(let names): names.isEmpty
        }
    }

    /// Every name, in string order.
    var names: [String] {
        switch storage {
        case .words(let words): words.map(Self.name(of:))
        case .names(let names): names
        }
    }

    /// What changed between these names and `present` (a server's list): the names not in it, in string order, and
    /// those of it not here, in its order. Compared as words when every name on both sides is one.
    func changes(to present: [String]) -> (gone: [String], new: [String]) {
        if case .words(let words) = storage {
            var presentWords: [UInt64] = []
            presentWords.reserveCapacity(present.count)
            for name in present {
                guard let word = Self.word(name) else { break }
                presentWords.append(word)
            }
            if presentWords.count == present.count {
                let current = Set(presentWords)
                let known = Set(words)
                let gone = words.filter { !current.contains($0) }.map(Self.name(of:))
                let new = zip(present, presentWords).filter { !known.contains($0.1) }.map(\.0)
                return (gone, new)
            }
        }
        let names = self.names
        let current = Set(present)
        let known = Set(names)
        return (names.filter { !current.contains($0) }, present.filter { !known.contains($0) })
    }

    /// Adds `name` if it is not there; returns whether it was not.
    @discardableResult
    mutating func insert(_ name: String) -> Bool {
        if case .words(var words) = storage, let word = Self.word(name) {
            let index = words.partitioningIndex { $0 >= word }
            guard index == words.count || words[index] != word else { return false }
            storage = .names([])  // drops the reference, so the insertion does not copy the words
            words.insert(word, at: index)
            storage = .words(words)
            return true
        }
        var names = self.names
        let index = names.partitioningIndex { $0 >= name }
        guard index == names.count || names[index] != name else { return false }
        storage = .names([])
        names.insert(name, at: index)
        storage = .names(names)
        return true
    }

    /// Removes `name` if it is there; returns whether it was.
    @discardableResult
    mutating func remove(_ name: String) -> Bool {
        switch storage {
        case .words(var words):
            guard let word = Self.word(name) else { return false }  // a long name was never kept as a word
            let index = words.partitioningIndex { $0 >= word }
            guard index < words.count, words[index] == word else { return false }
            storage = .names([])
            words.remove(at: index)
            storage = .words(words)
            return true
        case .names(var names):
            let index = names.partitioningIndex { $0 >= name }
            guard index < names.count, names[index] == name else { return false }
            storage = .names([])
            names.remove(at: index)
            storage = .names(names)
            return true
        }
    }

    /// `name` as a word, when it is at most eight bytes of ASCII without NUL.
    private static func word(_ name: String) -> UInt64? {
        var name = name
        return name.withUTF8 { bytes -> UInt64? in
            guard bytes.count <= 8 else { return nil }
            var word: UInt64 = 0
            for (position, byte) in bytes.enumerated() {
                guard byte != 0, byte < 0x80 else { return nil }
                word |= UInt64(byte) << (56 - 8 * position)
            }
            return word
        }
    }

    /// The name a word keeps.
    private static func name(of word: UInt64) -> String {
        let length = (64 - word.trailingZeroBitCount + 7) / 8
        return String(unsafeUninitializedCapacity: length) { buffer in
            for position in 0..<length { buffer[position] = UInt8(truncatingIfNeeded: word >> (56 - 8 * position)) }
            return length
        }
    }
}

extension Array {
    /// The first index whose element satisfies `belongs`, for a predicate that is false then true along the array.
    fileprivate func partitioningIndex(where belongs: (Element) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if belongs(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
