import Foundation
import Testing

@testable import RoomLink
@testable import RoomLinkEngine
@testable import RoomLinkScenarios

/// Errors say what kind of thing went wrong (so a caller can branch), name the field or path, and map to the CLI's
/// documented exit statuses; whole outputs are written through the path given, never replacing it.
@Suite
struct RoomLinkErrorTests {
    @Test
    func aMalformedScenarioIsInvalidInputNamingTheFieldPath() {
        let json = """
            { "users": [ { "id": "A" } ], "end": "1m",
              "timeline": [ { "at": "0s", "user": "A", "action": "login", "room": "r1" }, { "at": "soon" } ] }
            """
        let error = #expect(throws: RoomLinkError.self) { try Scenario(json: Data(json.utf8)) }
        #expect(error?.code == .invalidInput)
        #expect(error?.field == "timeline[1].at")
        #expect(error?.message.hasPrefix("timeline[1].at: expected a duration") == true, "\(String(describing: error))")
    }

    @Test
    func eachKindHasItsOwnExitStatusAndOnlyTheCodeDecidesEquality() {
        let kinds: [RoomLinkError.Code] = [.invalidInput, .ioFailure, .unsupported, .internalError]
        #expect(kinds.map(\.exitStatus) == [2, 74, 69, 70])
        #expect(Set(kinds).count == 4)
        #expect(RoomLinkError.invalidArgument("a", "b", got: "c") == .invalidInput)
        #expect(RoomLinkError.ioFailure("x", cannot: "write", errno: ENOSPC) == .ioFailure)
        #expect(RoomLinkError.ioFailure("x", cannot: "write", errno: ENOSPC) != .invalidInput)
        let unsupported = RoomLinkError.unsupported("--clock real on this platform", because: "no libevent")
        #expect(unsupported.code == .unsupported && unsupported.field == nil)
        #expect(RoomLinkError.internalError("a queue lost an entry").message.hasPrefix("internal error: "))
    }

    @Test
    func anIOFailureKeepsItsCauseAndSaysWhatCouldNotBeDone() {
        struct Broken: Error, CustomStringConvertible { var description: String { "broken pipe" } }
        let error = RoomLinkError.ioFailure("out.csv", cannot: "write", cause: Broken())
        #expect(error.message == "out.csv: cannot write (broken pipe)")
        #expect(error.cause is Broken)
        #expect(error.location.hasPrefix("RoomLinkTests/RoomLinkErrorTests.swift:"))
    }

    @Test
    func anOutputFileIsWrittenThroughASymbolicLinkAndTruncated() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("roomlink-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("target.json").path
        let link = directory.appendingPathComponent("link.json").path
        try Data("a longer old content\n".utf8).write(to: URL(fileURLWithPath: target))
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)

        try OutputFile(link).checkWritable()
        let unchanged = try String(contentsOfFile: target, encoding: .utf8)
        #expect(unchanged == "a longer old content\n", "a check changes nothing")
        try OutputFile(link).write("new\n")

        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == target, "the link is kept")
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "new\n")
    }

    @Test
    func anOutputFileThatCannotBeOpenedOrWrittenIsAnIOFailure() {
        let missing = #expect(throws: RoomLinkError.self) { try OutputFile("/nonexistent-directory/r.json").write("x") }
        #expect(missing?.code == .ioFailure && missing?.field == "/nonexistent-directory/r.json")
        let full = #expect(throws: RoomLinkError.self) { try OutputFile("/dev/full").write("x") }
        #expect(full?.message == "/dev/full: cannot write (No space left on device)")
        #expect(throws: RoomLinkError.ioFailure) { try OutputFile("/nonexistent-directory/r.json").checkWritable() }
    }
}
