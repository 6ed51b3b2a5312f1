import RoomLink
import RoomLinkTestSupport
import Testing

@Suite(.hangLimit(minutes: 10))
struct ZegoVocabularyTests {
    @Test
    func reasonsHaveZegosRawValuesAndLowerCamelNames() {
        let expected: [(String, Int)] = [
            ("logining", 0), ("logined", 1), ("loginFailed", 2), ("reconnecting", 3), ("reconnected", 4),
            ("reconnectFailed", 5), ("kickOut", 6), ("logout", 7), ("logoutFailed", 8),
        ]
        #expect(
            ZegoRoomStateChangedReason.allCases.map { ($0.description, $0.rawValue) }.elementsEqual(expected) {
                $0 == $1
            }
        )
    }

    @Test
    func errorCodesAreSpecsTable() {
        #expect(
            ZegoErrorCode.allKnown.map(\.rawValue)
                == [
                    0, 1_002_001, 1_002_002, 1_002_011, 1_002_033, 1_002_034, 1_002_050, 1_002_051, 1_002_053,
                    1_002_055, 1_002_056,
                ]
        )
    }
}
