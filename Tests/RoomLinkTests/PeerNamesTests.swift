import RoomLinkTestSupport
import Testing

@testable import RoomLinkEngine

/// The peers a room keeps: in string order whatever they are kept as, short names packed, the first long one
/// turning the list into text.
@Suite(.hangLimit(minutes: 10))
struct PeerNamesTests {
    /// Short names (the population's, and look-alikes whose word order could differ from their string order if the
    /// packing were wrong: prefixes, the empty name, the widest byte).
    static let short = ["u1", "u10", "u2", "u100", "", "a", "A", "~~~~~~~~", "u1 ", "alice", "12345678", "`"]
    /// Names that cannot be a word: too long, not ASCII, with a NUL.
    static let long = ["u123456789", "émile", "a\u{0}b", "room-member-1"]

    @Test(arguments: [short, short + long, long])
    func namesComeOutInStringOrder(names: [String]) {
        #expect(PeerNames(names).names == names.sorted())
        var added = PeerNames()
        for name in names.reversed() { added.insert(name) }
        #expect(added.names == names.sorted())
        #expect(added == PeerNames(names))
    }

    @Test func insertingAndRemovingKeepsEachNameOnce() {
        var peers = PeerNames(["u3", "u1"])
        peers.insert("u1")
        peers.insert("u2")
        #expect(peers.names == ["u1", "u2", "u3"])
        peers.remove("u9")
        peers.remove("u123456789")  // a long name never kept as a word
        peers.remove("u2")
        #expect(peers.names == ["u1", "u3"])
        peers.insert("u123456789")  // the first long name: the list becomes text, in the same order
        #expect(peers.names == ["u1", "u123456789", "u3"])
        peers.insert("u3")
        peers.remove("u1")
        #expect(peers.names == ["u123456789", "u3"])
        peers.remove("u123456789")
        peers.remove("u3")
        #expect(peers.isEmpty && peers.names.isEmpty)
    }

    /// The changes to a server's list are the same whether compared as words or as text: the names gone in string
    /// order, the new ones in the list's order.
    @Test(arguments: [
        (["u1", "u2", "u10"], ["u10", "u3", "u1"]), (["u1", "u123456789"], ["u2", "u123456789", "u1"]),
        (["u1", "u2"], ["émile", "u2"]), ([], ["u1"]), (["u1"], []),
    ])
    func changesAreTheListsDifference(known: [String], present: [String]) {
        let (gone, new) = PeerNames(known).changes(to: present)
        #expect(gone == known.sorted().filter { !present.contains($0) })
        #expect(new == present.filter { !known.contains($0) })
    }

    /// A room keeps its peers in one word (the list's reference), as the array of strings it replaced did.
    @Test func theListIsOneWord() {
        #expect(MemoryLayout<PeerNames>.size == 8)
    }
}
