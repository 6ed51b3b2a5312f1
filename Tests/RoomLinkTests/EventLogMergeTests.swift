import Foundation
import RoomLinkTestSupport
import Testing

@testable import RoomLinkEngine
@testable import RoomLinkScenarios

/// The children's event logs of a load split over processes, merged as they are read (``EventLogMerge``): in time
/// order, ties in the children's order, each child's own order kept, blank lines skipped, and a bad line or a line
/// past the limit refused by its number — whatever the files' size, one line of each in memory.
@Suite(.hangLimit(minutes: 10))
struct EventLogMergeTests {
    /// Writes `lines` to a new file in a temporary folder, returning its path.
    static func file(_ lines: [String], in folder: URL, _ name: String) throws -> String {
        let url = folder.appendingPathComponent(name)
        try Data(lines.joined(separator: "\n").utf8).write(to: url)
        return url.path
    }

    static func line(_ time: Double, _ user: String) -> String {
        #"{"t_ms":\#(time),"user":"\#(user)","room":"r","type":"roomState","reason":"logining","code":0}"#
    }

    static func withFolder<T>(_ body: (URL) throws -> T) throws -> T {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("merge-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        return try body(folder)
    }

    @Test func logsAreMergedByTimeWithTiesInTheChildrensOrder() throws {
        try Self.withFolder { folder in
            let first = try Self.file([Self.line(0, "a"), Self.line(5, "a"), "", Self.line(9, "a")], in: folder, "0")
            let second = try Self.file([Self.line(0, "b"), Self.line(3, "b"), Self.line(9, "b")], in: folder, "1")
            let out = folder.appendingPathComponent("merged").path
            let writer = try EventLogWriter<EventLogLine>(path: out)
            let count = try EventLogMerge.merge([first, second], names: ["zero", "one"], into: writer)
            try writer.close()
            #expect(count == 6)
            let merged = try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n").map(String.init)
            #expect(
                merged == [
                    Self.line(0, "a"), Self.line(0, "b"), Self.line(3, "b"), Self.line(5, "a"), Self.line(9, "a"),
                    Self.line(9, "b"),
                ]
            )
        }
    }

    @Test func aLogLargerThanTheBufferIsReadWhole() throws {
        try Self.withFolder { folder in
            // A few hundred kilobytes: several of the reader's 64 KiB blocks, lines cut across them.
            let lines = (0..<4_000).map { Self.line(Double($0), "u\($0 % 7)") }
            let path = try Self.file(lines, in: folder, "big")
            let reader = try EventLogFileReader(path: path, as: "the log")
            var read: [String] = []
            while let next = try reader.next() { read.append(String(decoding: next.line, as: UTF8.self)) }
            #expect(read == lines)
        }
    }

    @Test func aBadLineIsRefusedByItsNumberAndATooLongOneToo() throws {
        try Self.withFolder { folder in
            let bad = try Self.file([Self.line(0, "a"), "{not json", Self.line(1, "a")], in: folder, "bad")
            let reader = try EventLogFileReader(path: bad, as: "the log")
            #expect(try reader.next()?.event.user == "a", "the first line reads")
            #expect {
                _ = try reader.next()
            } throws: { error in
                (error as? RoomLinkError)?.field == "events line 2"
            }
            let long = try Self.file(
                [String(repeating: " ", count: EventLogFileReader.maximumLineLength + 10)],
                in: folder,
                "long"
            )
            #expect {
                _ = try EventLogFileReader(path: long, as: "the log").next()
            } throws: { error in
                (error as? RoomLinkError)?.field == "events line 1"
            }
            #expect(throws: RoomLinkError.self) {
                _ = try EventLogFileReader(path: folder.appendingPathComponent("none").path, as: "the log")
            }
        }
    }
}
