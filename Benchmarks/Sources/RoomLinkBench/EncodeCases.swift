import ArgumentParser
import Foundation
import RoomLink

/// `roomlink-bench encode`: what encoding a frame costs, its body encoded in place behind the length prefix (one
/// allocation, one pass: what `encoded` does) against the way before — the body encoded into an array of its own and
/// then copied behind the prefix into a second one, which this case reproduces as the frame copied once more.
struct Encode: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Frame encoding: in place behind the prefix, against encoded and then copied (the way before).",
        discussion: """
            For each frame (a heartbeat's answer, a user update of one user, a login answer with 100 present) and \
            each way, alternating within every round: --frames encodings; the median nanoseconds per frame over \
            the rounds, and the ratio.
            """
    )

    @Option(help: "Encodings per frame, way and round.") var frames = 200_000
    @Option(help: "Rounds.") var rounds = 7

    static let session = SessionID(rawValue: 0x1234_5678_9abc_def0)
    static let cases: [(name: String, frame: ServerFrame)] = [
        ("heartbeat answer", .room("room-0042", .heartbeatAck(session: session))),
        ("user update, 1 user", .room("room-0042", .userUpdate(.add, users: ["user-004217"], reason: nil))),
        (
            "login answer, 100 present",
            .room(
                "room-0042",
                .loginAccepted(
                    session: session,
                    attempt: 1,
                    roomSessionID: "1895768004053643",
                    present: (0..<100).map { "user-0042\($0)" }
                )
            )
        ),
    ]

    func validate() throws {
        guard frames > 0, rounds > 0 else { throw ValidationError("--frames and --rounds must be positive") }
    }

    func run() async throws {
        print("roomlink-bench encode — \(frames) encodings per frame, way and round; medians of \(rounds) rounds")
        print("frame                         bytes   in place   encoded+copied   ratio")
        for (name, frame) in Self.cases {
            var inPlace: [Double] = []
            var copied: [Double] = []
            for _ in 0..<rounds {
                inPlace.append(Self.time(frames) { frame.encoded() })
                copied.append(
                    Self.time(frames) {
                        // The way before: a body array, then a second array for prefix and body.
                        let first = frame.encoded()
                        var second: [UInt8] = []
                        second.reserveCapacity(first.count)
                        second.append(contentsOf: first)
                        return second
                    }
                )
            }
            let a = inPlace.sorted()[rounds / 2]
            let b = copied.sorted()[rounds / 2]
            print(
                name.padding(toLength: 28, withPad: " ", startingAt: 0),
                String(format: "%6d %8.0f ns %12.0f ns %8.2f×", frame.encoded().count, a, b, b / a)
            )
        }
    }

    /// Nanoseconds per call of `encode`, `count` calls; the bytes are summed so that no call is optimised away.
    static func time(_ count: Int, _ encode: () -> [UInt8]) -> Double {
        var sink = 0
        let start = ContinuousClock.now
        for _ in 0..<count { sink &+= encode().count }
        let elapsed = ContinuousClock.now - start
        precondition(sink > 0)
        return Double(elapsed.components.seconds) * 1e9 / Double(count)
            + Double(elapsed.components.attoseconds) / 1e9 / Double(count)
    }
}
