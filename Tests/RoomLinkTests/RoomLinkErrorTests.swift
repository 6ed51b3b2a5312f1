import Foundation
import RoomLinkTestSupport
import Testing

@testable import RoomLink
@testable import RoomLinkEngine
@testable import RoomLinkScenarios

/// Errors say what kind of thing went wrong (so a caller can branch), name the field or path, and map to the CLI's
/// documented exit statuses; whole outputs are written through the path given, never replacing it.
@Suite(.hangLimit(minutes: 10))
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

/// Inputs and outputs that are not plain files: nothing hangs, nothing is read without end, a failed run leaves no
/// empty file behind.
@Suite(.hangLimit(minutes: 10))
struct InputAndOutputFileTests {
    static func withFolder(_ body: (String) throws -> Void) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("roomlink-\(UUID())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try body(folder)
    }

    @Test
    func aFIFOOrADeviceIsRefusedAsInputWithoutWaitingOrReading() throws {
        try Self.withFolder { folder in
            let fifo = folder + "/f"
            #expect(mkfifo(fifo, 0o600) == 0)
            // No process writes it: opening it for reading the ordinary way would wait for ever.
            let error = #expect(throws: RoomLinkError.self) {
                try InputFile(fifo, as: "the scenario", limit: InputFile.scenarioLimit).read()
            }
            #expect(error?.code == .invalidInput && error?.message.contains("a FIFO") == true)
            for device in ["/dev/zero", "/dev/urandom"] {
                let error = #expect(throws: RoomLinkError.self) {
                    try InputFile(device, as: "the event log", limit: InputFile.eventLogLimit).read()
                }
                #expect(
                    error?.message == "\(device): the event log must be a regular file, and this is a character "
                        + "device; to read a stream, give '-' and redirect it to standard input"
                )
            }
        }
    }

    @Test
    func anInputLargerThanItsLimitIsRefusedAndAFolderOrAMissingFileIsAnIOFailure() throws {
        try Self.withFolder { folder in
            let path = folder + "/big.json"
            try Data(repeating: 0x20, count: 3 << 20).write(to: URL(fileURLWithPath: path))
            let error = #expect(throws: RoomLinkError.self) {
                try InputFile(path, as: "the scenario", limit: 2 << 20).read()
            }
            #expect(error?.message == "\(path): the scenario is larger than 2 MiB, the most RoomLink reads")
            #expect(try InputFile(path, as: "the scenario", limit: 3 << 20).read().count == 3 << 20)
            #expect(throws: RoomLinkError.ioFailure) { try InputFile(folder, as: "x", limit: 10).read() }
            #expect(throws: RoomLinkError.ioFailure) { try InputFile(folder + "/none", as: "x", limit: 10).read() }
            #expect(throws: RoomLinkError.invalidInput) { try InputFile("", as: "x", limit: 10).read() }
        }
    }

    @Test
    func checkingAnOutputCreatesNothingAndAFIFOWithNoReaderFailsAtOnce() throws {
        try Self.withFolder { folder in
            let report = folder + "/report.json"
            try OutputFile(report).checkWritable()
            #expect(!FileManager.default.fileExists(atPath: report), "a check leaves no empty file behind")
            #expect(throws: RoomLinkError.ioFailure) { try OutputFile(folder).checkWritable() }
            #expect(throws: RoomLinkError.ioFailure) { try OutputFile(folder + "/none/r.json").checkWritable() }

            let fifo = folder + "/f"
            #expect(mkfifo(fifo, 0o600) == 0)
            try OutputFile(fifo).checkWritable()  // not opened: a reader would see its end of file
            let error = #expect(throws: RoomLinkError.self) { try OutputFile(fifo).write("{}\n") }
            #expect(error?.message.contains("no process reads this FIFO") == true)
            let events = #expect(throws: RoomLinkError.self) { try EventLogWriter<EventLogLine>(path: fifo) }
            #expect(events?.code == .ioFailure)
        }
    }
}
