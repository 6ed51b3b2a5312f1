import RoomLinkEngine
import RoomLinkRuntime
import RoomLinkTestSupport
import Testing

@testable import RoomLinkWire

/// Thousands of hostile frames, seeded: every one decodes or is refused with a ``WireError``; none crashes, hangs or
/// yields a value the engine could not take.
@Suite(.hangLimit(minutes: 10)) struct WireFuzzTests {
    @Test(arguments: [UInt64(1), 2, 3])
    func randomAndMutatedFramesNeverCrash(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        let valid =
            WireFrameTests.clientMessages.map {
                Array(ClientFrame.room("room-1", $0).encoded(at: WireFrameTests.now).dropFirst(4))
            }
        var decoded = 0
        var refused = 0
        for round in 0..<4_000 {
            var body: [UInt8]
            if round % 2 == 0 {
                // Random bytes of random length.
                body = (0..<Int(random.next() % 96)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            } else {
                // A valid frame with a few bytes flipped, dropped or added.
                body = valid[Int(random.next() % UInt64(valid.count))]
                for _ in 0..<(1 + Int(random.next() % 4)) where !body.isEmpty {
                    let index = Int(random.next() % UInt64(body.count))
                    switch random.next() % 3 {
                    case 0: body[index] ^= UInt8(truncatingIfNeeded: random.next() | 1)
                    case 1: body.remove(at: index)
                    default: body.insert(UInt8(truncatingIfNeeded: random.next()), at: index)
                    }
                }
            }
            do {
                let frame = try ClientFrame(body: body, receivedAt: WireFrameTests.now)
                decoded += 1
                if case .room(let room, _) = frame {
                    #expect(!room.isEmpty && room.utf8.count <= WireProtocol.maximumIdentifierLength)
                }
            } catch {
                refused += 1
            }
            _ = try? ServerFrame(body: body)
        }
        #expect(decoded + refused == 4_000)
        // Both outcomes happen: the fuzzer reaches the decoder's checks, not only its first byte.
        #expect(decoded > 0 && refused > 0)
    }
}
