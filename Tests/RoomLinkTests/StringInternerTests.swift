import RoomLinkTestSupport
import Testing

@testable import RoomLinkScenarios

@Suite(.hangLimit(minutes: 10))
struct StringInternerTests {
    @Test
    func aNameKeepsItsNumberAndEveryNumberGivesItsNameBack() {
        var interner = StringInterner()
        let names = ["logined", "reconnecting", "", "logined", "a name longer than sixteen bytes", "reconnecting"]
        let numbers = names.map { interner.number(of: $0) }
        #expect(numbers == [0, 1, 2, 0, 3, 1])
        #expect(numbers.map { interner[$0] } == names)
    }
}
