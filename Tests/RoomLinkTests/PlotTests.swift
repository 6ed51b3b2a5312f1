import Foundation
import RoomLink
import RoomLinkRuntime
import RoomLinkTestSupport
import Testing

@testable import RoomLinkScenarios

#if canImport(FoundationXML)
import FoundationXML
#endif

/// The load pictures a person reads (`roomlink load --plot`, the docs' images): well-formed SVG, every axis titled,
/// every label inside the canvas, and — where Debian's `rsvg-convert` is installed (`scripts/setup` installs it) —
/// every picture the docs show renders to PNG.
@Suite(.hangLimit(minutes: 10))
struct PlotTests {
    /// The `<svg>` size and every `<text>`: where it is anchored, how, whether it is turned, and what it says.
    final class Texts: NSObject, XMLParserDelegate {
        struct Text {
            var x: Double, y: Double, anchor: String, rotated: Bool, content: String
        }
        var width = 0.0
        var height = 0.0
        var texts: [Text] = []
        private var current: Text?

        func parser(
            _ parser: XMLParser,
            didStartElement name: String,
            namespaceURI: String?,
            qualifiedName: String?,
            attributes: [String: String] = [:]
        ) {
            if name == "svg" {
                width = Double(attributes["width"] ?? "") ?? 0
                height = Double(attributes["height"] ?? "") ?? 0
            } else if name == "text" {
                current = Text(
                    x: Double(attributes["x"] ?? "") ?? .nan,
                    y: Double(attributes["y"] ?? "") ?? .nan,
                    anchor: attributes["text-anchor"] ?? "start",
                    rotated: attributes["transform"]?.hasPrefix("rotate") ?? false,
                    content: ""
                )
            }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) { current?.content += string }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            if name == "text", let text = current { texts.append(text) }
            current = nil
        }
    }

    static func texts(of svg: String) throws -> Texts {
        let texts = Texts()
        let parser = XMLParser(data: Data(svg.utf8))
        parser.delegate = texts
        #expect(parser.parse(), "well-formed SVG: \(parser.parserError.map { "\($0)" } ?? "")")
        return texts
    }

    /// The labels that would run off the canvas, judged by their anchor and a generous width per character.
    static func outside(_ texts: Texts) -> [String] {
        texts.texts.compactMap { text in
            let size = Double(text.content.count) * 6.6
            let (low, high): (Double, Double) =
                switch text.anchor {
                case "end": (-size, 0)
                case "middle": (-size / 2, size / 2)
                default: (0, size)
                }
            let inside =
                text.rotated
                ? text.x >= 0 && text.x <= texts.width && text.y + low >= 0 && text.y + high <= texts.height
                : text.x + low >= 0 && text.x + high <= texts.width && text.y >= 0 && text.y <= texts.height
            return inside ? nil : "\(text.content) at (\(text.x), \(text.y))"
        }
    }

    // One simulation thread, then pure text: nothing for ThreadSanitizer, at its ×30 cost.
    @Test(.skippedUnderThreadSanitizer)
    func aStormsPictureHasTitledTickedAxesAndEveryLabelInside() async throws {
        var plan = LoadPlan(clients: 400, rooms: 4, duration: .seconds(4 * 60))
        plan.loginOver = .seconds(10)
        plan.server = ServerPolicy(capacity: ServerCapacity(workers: 1, login: .milliseconds(100)), shedExpired: true)
        plan.faults = [try StormFault("1.0@1m:10s")]
        var runner = try ScenarioRunner(scenario: try plan.scenario())
        runner.collectsLoadStatistics = true
        let report = try await SimulationRuntime.withSimulation(seed: 1) { try await runner.run(on: $0) }
        let load = try #require(report.load)
        let svg = load.svg(title: "a storm against one node", servers: report.servers)
        let texts = try Self.texts(of: svg)
        #expect(Self.outside(texts).isEmpty, "\(Self.outside(texts))")
        let words = Set(texts.texts.map(\.content))
        for title in [
            "clients", "reconnect attempts / s", "seconds since the start", "reconnections",
            "seconds to reconnect", "logins / s", "queue length",
        ] {
            #expect(words.contains(title), "the axis titled \(title)")
        }
        // Ticks: several numbers on the time axis, not one label at its far end.
        #expect(["0", "50", "100", "150", "200"].allSatisfy(words.contains))
        #expect(words.contains("failed or given up"), "clients that failed have a series")
    }

    /// The docs' folder, and every SVG under it.
    static let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs")
    static var pictures: [String] {
        (FileManager.default.enumerator(atPath: docs.path)?.allObjects as? [String] ?? [])
            .filter { $0.hasSuffix(".svg") }.sorted()
    }

    @Test
    func everyPictureTheDocsShowIsWellFormedWithEveryLabelInside() throws {
        #expect(!Self.pictures.isEmpty)
        for file in Self.pictures {
            let svg = try String(contentsOf: Self.docs.appendingPathComponent(file), encoding: .utf8)
            let outside = Self.outside(try Self.texts(of: svg))
            #expect(outside.isEmpty, "\(file): \(outside)")
        }
    }

    /// Every SVG the docs show, where `rsvg-convert` is installed: it renders.
    @Test(.enabled(if: PlotTests.renderer != nil, "rsvg-convert is not installed (scripts/setup installs it)"))
    func everyPictureTheDocsShowRendersToPNG() throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("roomlink-plot-\(getpid()).png")
        defer { try? FileManager.default.removeItem(at: output) }
        for file in Self.pictures {
            let docs = Self.docs
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try #require(Self.renderer))
            process.arguments = ["-o", output.path, docs.appendingPathComponent(file).path]
            try process.run()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "\(file) renders")
            let png = try Data(contentsOf: output)
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]), "\(file): a PNG")
        }
    }

    /// Where `rsvg-convert` is, if it is on the PATH.
    static let renderer: String? = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
        .map { "\($0)/rsvg-convert" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}

extension PlotTests {
    /// The panels' numbers are written without Foundation's formatter, character for character as `%.1f` and `%.2f`
    /// write them: the referee is `String(format:)` itself, on pixel-like values, exact ties (0.25, 0.125), values
    /// a hair off a tie (0.05, 2.675), negatives, zeros and values too large for the fast path.
    @Test
    func numbersAreWrittenAsPrintfWritesThem() {
        var generator = SystemRandomNumberGenerator()
        var values: [Double] = [
            0, -0.0, 0.05, 0.15, 0.25, 0.35, 0.125, 0.375, 2.675, 1.005, -0.04, -0.05, -2.5, 1e15, 3e20,
        ]
        values += (0..<2_000).map { Double($0) / 1_000 }
        values += (0..<2_000).map { Double($0) / 200 + 1000 }
        values += (0..<4_000).map { _ in Double.random(in: -2_000...2_000, using: &generator) }
        values += (0..<1_000).map { _ in Double(Int.random(in: -100_000...100_000, using: &generator)) / 8 }
        for value in values {
            #expect(Plot.fixed(value, digits: 1) == String(format: "%.1f", value), "\(value)")
            #expect(Plot.fixed(value, digits: 2) == String(format: "%.2f", value), "\(value)")
        }
        #expect(Plot.escape("a < b && c > d") == "a &lt; b &amp;&amp; c &gt; d")
        #expect(Plot.escape("plain — ünïcode") == "plain — ünïcode")
    }
}
