import Foundation
import RoomLink
import RoomLinkRuntime
import RoomLinkTestSupport
import Testing

@Suite(.hangLimit(minutes: 10))
struct EventLogTests {
    static func line(_ event: ZegoEvent, user: String, ms: Int64) -> String {
        event.eventLogLine.json(user: user, time: .zero.advanced(by: .milliseconds(ms)))
    }

    @Test
    func zegoEventsWriteTheSpecsLinesExactly() {
        #expect(
            Self.line(
                .roomStateChanged(roomID: "r1", reason: .logined, errorCode: .success, extendedData: [:]),
                user: "A",
                ms: 120
            )
                == #"{"t_ms":120.0,"user":"A","room":"r1","type":"roomState","reason":"logined","code":0}"#
        )
        #expect(
            Self.line(.roomUserUpdate(roomID: "r1", update: .add, users: ["A"]), user: "B", ms: 220)
                == #"{"t_ms":220.0,"user":"B","room":"r1","type":"userUpdate","update":"add","users":["A"]}"#
        )
        #expect(
            Self.line(
                .roomStateChanged(
                    roomID: "r1",
                    reason: .reconnecting,
                    errorCode: .connectionInterrupted,
                    extendedData: ["room_session_id": "s-1", "a": "b"]
                ),
                user: "A",
                ms: 10_000
            )
                == #"{"t_ms":10000.0,"user":"A","room":"r1","type":"roomState","reason":"reconnecting","code":1002051,"extendedData":{"a":"b","room_session_id":"s-1"}}"#
        )
    }

    @Test
    func awkwardNamesStillMakeValidJSON() throws {
        let user = "quote\" back\\slash\nnew\tline\u{1}ctl é 🎧"
        let text = Self.line(.roomUserUpdate(roomID: "r\"1", update: .delete, users: [user]), user: user, ms: 1)
        let object = try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["user"] as? String == user)
        #expect(object["room"] as? String == "r\"1")
        #expect(object["users"] as? [String] == [user])
    }

    @Test
    func theWriterKeepsEveryLineAndEachClientsOrderAcrossThreads() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "roomlink-events-\(UInt64.random(in: 0...UInt64.max)).jsonl"
        ).path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try EventLogWriter<ZegoEvent>(path: path)
        await withTaskGroup(of: Void.self) { group in
            for client in 0..<4 {
                group.addTask {
                    for sequence in 0..<5_000 {
                        let event = ZegoEvent.roomUserUpdate(roomID: "r", update: .add, users: ["\(sequence)"])
                        writer.record(
                            Stamped(
                                time: .zero.advanced(by: .milliseconds(Int64(sequence))),
                                sequence: UInt64(sequence),
                                event: event
                            ),
                            from: "c\(client)"
                        )
                    }
                }
            }
        }
        try writer.close()
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 20_000 && writer.lineCount == 20_000)
        var next: [String: Int] = [:]
        for line in lines {
            let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let client = try #require(object["user"] as? String)
            let users = try #require(object["users"] as? [String])
            #expect(users == ["\(next[client, default: 0])"], "client \(client) out of order")
            next[client, default: 0] += 1
        }
    }

    /// What is recorded sits in the writer's block until it fills, the run ends — or someone flushes: a real-clock
    /// run flushes a few times a second, so that a reader follows it live (`--events -`).
    @Test
    func flushingWritesWhatIsBufferedWithoutClosing() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "roomlink-flush-\(UInt64.random(in: 0...UInt64.max)).jsonl"
        ).path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try EventLogWriter<ZegoEvent>(path: path)
        func fileLines() throws -> Int {
            try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").count
        }
        for sequence in 0..<3 {
            let event = ZegoEvent.roomUserUpdate(roomID: "r", update: .add, users: ["u\(sequence)"])
            writer.record(Stamped(time: .zero, sequence: UInt64(sequence), event: event), from: "A")
        }
        #expect(try fileLines() == 0, "small writes wait for the block")
        writer.flush()
        #expect(try fileLines() == 3)
        writer.record(
            Stamped(time: .zero, sequence: 3, event: .roomUserUpdate(roomID: "r", update: .add, users: ["x"])),
            from: "A"
        )
        try writer.close()
        #expect(try fileLines() == 4)
    }

    @Test
    func anUnwritablePathIsAnIOFailureNamingThePath() {
        let error = #expect(throws: RoomLinkError.self) {
            try EventLogWriter<ZegoEvent>(path: "/nonexistent-directory/events.jsonl")
        }
        #expect(error?.code == .ioFailure)
        #expect(error?.field == "/nonexistent-directory/events.jsonl")
        #expect(error?.message.contains("No such file or directory") == true, "\(String(describing: error))")
    }

    @Test
    func aFullDiskIsAnIOFailureWhenTheLogIsClosedAndNothingTraps() throws {
        let writer = try EventLogWriter<ZegoEvent>(path: "/dev/full")
        let event = ZegoEvent.roomTokenWillExpire(roomID: "r", remainingSeconds: 30)
        writer.record(Stamped(time: .zero, sequence: 0, event: event), from: "A")
        let error = #expect(throws: RoomLinkError.self) { try writer.close() }
        #expect(error?.code == .ioFailure)
        #expect(error?.message == "/dev/full: cannot write the event log (No space left on device)")
    }
}
