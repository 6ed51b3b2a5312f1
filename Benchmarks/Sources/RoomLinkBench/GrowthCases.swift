import ArgumentParser
import Foundation

/// `roomlink-bench growth`: the virtual storm at several population sizes, through one build or several side by side,
/// alternating — how wall time, CPU and memory per client grow from a million clients to ten.
struct Growth: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "growth",
        abstract: "The virtual storm at 1M, 3M and 10M clients per build: wall, CPU and memory per client, growth.",
        discussion: """
            For each size (--clients, comma-separated), each round and each build (--roomlink, repeatable: the build \
            before and after a change, say), alternating: `roomlink load --clients N --rooms N/100 --duration 30m \
            --storm 0.5@10m:60s` in virtual time, its report's wall and CPU seconds and memory per client (peak RSS \
            less the RSS at the start, over the clients), and violations. Then per build the medians, and how each \
            size's wall and CPU per client compare with the smallest size's (1.00 is linear growth).
            """
    )

    @Option(help: "A roomlink executable (repeatable): each is run in turn, in every round.")
    var roomlink: [String] = ["../.build/release/roomlink"]
    @Option(help: "Population sizes, comma-separated.") var clients = "1000000,3000000,10000000"
    @Option(help: "Rounds at each size.") var rounds = 1

    struct Run {
        var wall: Double
        var cpu: Double
        var bytesPerClient: Double
        var violations: Int
    }

    func run() async throws {
        let sizes = try clients.split(separator: ",").map { word -> Int in
            guard let size = Int(word.trimmingCharacters(in: .whitespaces)), size > 0 else {
                throw ValidationError("--clients: expected sizes like 1000000,3000000, got '\(word)'")
            }
            return size
        }
        guard rounds > 0 else { throw ValidationError("--rounds: at least 1") }
        var runs: [String: [Int: [Run]]] = [:]
        for size in sizes {
            for round in 1...rounds {
                for path in roomlink {
                    let result = try measure(path, clients: size)
                    runs[path, default: [:]][size, default: []].append(result)
                    say(
                        String(
                            format:
                                "%@ — %d clients, round %d: wall %.1f s, CPU %.0f s, %.0f B a client, %d violations",
                            path,
                            size,
                            round,
                            result.wall,
                            result.cpu,
                            result.bytesPerClient,
                            result.violations
                        )
                    )
                }
            }
        }
        say("medians (wall and CPU per client relative to \(sizes[0]) clients: 1.00 is linear):")
        for path in roomlink {
            let first = median(runs[path]?[sizes[0]] ?? [])
            for size in sizes {
                let m = median(runs[path]?[size] ?? [])
                let scale = Double(size) / Double(sizes[0])
                say(
                    String(
                        format: "%@ %10d: wall %7.1f s (%.2f), CPU %7.0f s (%.2f), %5.0f B a client",
                        path,
                        size,
                        m.wall,
                        m.wall / first.wall / scale,
                        m.cpu,
                        m.cpu / first.cpu / scale,
                        m.bytesPerClient
                    )
                )
            }
        }
    }

    private func median(_ runs: [Run]) -> Run {
        func middle(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            guard !sorted.isEmpty else { return .nan }
            let half = sorted.count / 2
            return sorted.count % 2 == 1 ? sorted[half] : (sorted[half - 1] + sorted[half]) / 2
        }
        return Run(
            wall: middle(runs.map(\.wall)),
            cpu: middle(runs.map(\.cpu)),
            bytesPerClient: middle(runs.map(\.bytesPerClient)),
            violations: runs.map(\.violations).max() ?? 0
        )
    }

    private func measure(_ path: String, clients: Int) throws -> Run {
        let report = FileManager.default.temporaryDirectory
            .appendingPathComponent("roomlink-growth-\(getpid())-\(clients).json")
        defer { try? FileManager.default.removeItem(at: report) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = [
            "load", "--clients", "\(clients)", "--rooms", "\(max(1, clients / 100))", "--duration", "30m",
            "--storm", "0.5@10m:60s", "--quiet", "--report", report.path,
        ]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ValidationError("\(path) load --clients \(clients) exited \(process.terminationStatus)")
        }
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [String: Any] ?? [:]
        func number(_ key: String) throws -> Double {
            guard let value = object[key] as? NSNumber else {
                throw ValidationError("\(path)'s report has no '\(key)'")
            }
            return value.doubleValue
        }
        return Run(
            wall: try number("wallSeconds"),
            cpu: try number("cpuSeconds"),
            bytesPerClient: try number("bytesPerClient"),
            violations: Int(try number("violations"))
        )
    }

    private func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
