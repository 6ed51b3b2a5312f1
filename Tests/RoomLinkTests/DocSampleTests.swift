import Foundation
import RoomLinkTestSupport
import Testing

/// The code samples in the README and the DocC articles are compiled and run as tests; this suite checks that each
/// page still shows what its test runs, so neither can change without the other.
///
/// A sample's code lines must each appear in its test file, after trimming and dropping trailing `//` comments.
/// Exempt are blank and comment-only lines and the lines that print (the tests collect or `#expect` instead).
@Suite(.hangLimit(minutes: 10))
struct DocSampleTests {
    struct Pair: CustomTestStringConvertible, Sendable {
        var page: String
        var heading: String
        var test: String
        /// Lines of the page that the test writes otherwise, each for a reason given where the pair is made.
        var exempt: Set<String> = []
        var testDescription: String { "\(page) (\(heading))" }
    }

    static let pairs = [
        Pair(page: "README.md", heading: "## A short sample", test: "Tests/RoomLinkTests/ReadmeSampleTests.swift"),
        Pair(
            page: "Sources/RoomLinkEngine/Docs.docc/Embedding.md",
            heading: "## Overview",
            test: "Tests/RoomLinkLibeventTests/EmbeddingSampleTests.swift",
            // The test's function returns what the page's prints.
            exempt: ["func aliceLosesHerNetwork(on group: some RuntimeLoopGroup) async throws {"]
        ),
        Pair(
            page: "Sources/RoomLinkEngine/Docs.docc/RuntimeGuide.md",
            heading: "## Overview",
            test: "Tests/RoomLinkLibeventTests/RuntimeGuideSampleTests.swift"
        ),
        Pair(
            page: "Sources/RoomLinkNetwork/Docs.docc/NetworkGuide.md",
            heading: "## Overview",
            test: "Tests/RoomLinkNetworkTests/NetworkGuideSampleTests.swift",
            // The test's function returns the members the page prints, and the page's last lines call it.
            exempt: [
                "func aliceOverTCP(on group: LibeventLoopGroup) async throws -> [ZegoEvent] {", "return told",
                "try await LibeventLoopGroup.withLoopGroup { group in", "_ = try await aliceOverTCP(on: group)", "}",
            ]
        ),
    ]

    /// The package's root, from this file's path.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The first ```swift block after `heading`.
    static func sample(in page: String, after heading: String) throws -> [String] {
        let lines = try String(contentsOf: root.appendingPathComponent(page), encoding: .utf8)
            .components(separatedBy: "\n")
        let start = try #require(lines.firstIndex(of: heading), "\(page) has no '\(heading)'")
        let open = try #require(lines[start...].firstIndex(of: "```swift"), "no swift sample after \(heading)")
        let close = try #require(lines[(open + 1)...].firstIndex(of: "```"))
        return Array(lines[(open + 1)..<close])
    }

    /// A line without its indentation and trailing comment; `nil` for lines the check exempts.
    static func code(_ line: String) -> String? {
        var text = line.trimmingCharacters(in: .whitespaces)
        if let comment = text.range(of: "  //") { text = String(text[..<comment.lowerBound]) }
        guard !text.isEmpty, !text.hasPrefix("//"), !text.contains("print(") else { return nil }
        return text
    }

    @Test(arguments: pairs)
    func everyCodeLineOfThePagesSampleIsInItsTest(_ pair: Pair) throws {
        let sample = try Self.sample(in: pair.page, after: pair.heading).compactMap(Self.code)
        #expect(sample.count >= 10, "the sample was not found whole")
        let test = try String(contentsOf: Self.root.appendingPathComponent(pair.test), encoding: .utf8)
            .components(separatedBy: "\n").compactMap(Self.code)
        for line in sample where !pair.exempt.contains(line) {
            #expect(test.contains { $0.contains(line) }, "\(pair.page): '\(line)' is not in \(pair.test)")
        }
    }
}
