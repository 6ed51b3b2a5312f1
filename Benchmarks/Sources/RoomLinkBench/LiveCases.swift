import ArgumentParser
import Foundation
import RoomLink
import Synchronization

/// `roomlink-bench live`: what watching a run costs it. The same `roomlink load` runs with nothing watching and with
/// `--metrics` and `--dashboard` on, scraped and polled once a second the whole run (as Prometheus and a browser
/// would), in alternation; the generator's own report gives its CPU time and wall time. A million clients in virtual
/// time, and a real-clock run of about 20,000 connections against two `serve` processes.
struct Live: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "live",
        abstract: "What --metrics and --dashboard cost a run: CPU and wall time, side by side with them off."
    )

    @Option(help: "The roomlink executable (a release build).") var roomlink = "../.build/release/roomlink"
    @Option(help: "Pairs of runs (off, on) per case; medians are quoted.") var rounds = 3
    @Option(help: "Clients of the virtual-time case (0 skips it).") var virtualClients = 1_000_000
    @Option(help: "Connections of the real-clock case (0 skips it).") var realClients = 19_500
    @Option(help: "How often the scraper and the page ask, in seconds.") var every = 1.0

    struct Run: Codable {
        var watched: Bool
        var cpuSeconds: Double
        /// Of `cpuSeconds`, the live servers' threads' (the report's `liveViewCPUSeconds`; 0 off).
        var liveViewCPUSeconds: Double
        var wallSeconds: Double
        var scrapes: Int
        var failedScrapes: Int
    }

    struct Case: Codable {
        var name: String
        var runs: [Run]
        var cpuOff: Double
        var cpuOn: Double
        var cpuRatio: Double
        /// The median of the watched runs' `liveViewCPUSeconds`, and its share of the median CPU time off: the cost
        /// measured on the servers' own threads, which the machine's noise between two runs does not blur.
        var liveViewCPU: Double
        var liveViewShare: Double
        var wallOff: Double
        var wallOn: Double
    }

    func run() async throws {
        var cases: [Case] = []
        if virtualClients > 0 {
            let flags = [
                "load", "--clients", "\(virtualClients)", "--rooms", "\(virtualClients / 100)", "--duration", "10m",
                "--login-over", "60s", "--storm", "0.5@4m:60s", "--seed", "1", "--quiet",
            ]
            cases.append(try await measure("virtual, \(virtualClients) clients", flags: flags, servers: nil))
        }
        if realClients > 0 {
            // Two serve processes, each holding half: one process holds at most about 19,900 connections here.
            let servers = try (0..<2).map { _ in try Child.serve(roomlink, []) }
            defer { for server in servers { server.stop() } }
            let addresses = try servers.map { try $0.servedAddress().description }.joined(separator: ",")
            let flags = [
                "load", "--clients", "\(realClients)", "--rooms", "\(realClients / 100)", "--duration", "90s",
                "--login-over", "30s", "--storm", "0.5@45s:10s", "--server", addresses, "--clock", "real", "--seed",
                "1", "--quiet",
            ]
            cases.append(try await measure("real clock, \(realClients) connections", flags: flags, servers: servers))
        }
        print("roomlink-bench live — \(ProcessInfo.processInfo.activeProcessorCount) cores; medians of \(rounds) pairs")
        for result in cases {
            print(
                String(
                    format: "%@: CPU %.2f s off, %.2f s watched (×%.4f, %+.2f %%); wall %.2f s off, %.2f s watched",
                    result.name,
                    result.cpuOff,
                    result.cpuOn,
                    result.cpuRatio,
                    (result.cpuRatio - 1) * 100,
                    result.wallOff,
                    result.wallOn
                )
            )
            print(
                String(
                    format: "  the live servers' own threads: %.3f s of CPU (%.2f %% of the run's CPU off)",
                    result.liveViewCPU,
                    result.liveViewShare * 100
                )
            )
            for run in result.runs {
                print(
                    String(
                        format: "  %@ CPU %.2f s (live view %.3f s), wall %.2f s, %d scrapes and polls (%d failed)",
                        run.watched ? "watched" : "off    ",
                        run.cpuSeconds,
                        run.liveViewCPUSeconds,
                        run.wallSeconds,
                        run.scrapes,
                        run.failedScrapes
                    )
                )
            }
        }
    }

    /// Runs the load with `flags` `rounds` times each way, alternating, and compares the medians.
    private func measure(_ name: String, flags: [String], servers: [Child]?) async throws -> Case {
        var runs: [Run] = []
        for round in 0..<rounds * 2 {
            // Off first in even rounds, on first in odd ones: neither way always gets the warmer machine.
            let watched = (round % 2 == 0) == (round / 2 % 2 == 1)
            runs.append(try await once(flags: flags, watched: watched))
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        let off = runs.filter { !$0.watched }
        let on = runs.filter(\.watched)
        let cpuOff = median(off.map(\.cpuSeconds))
        let cpuOn = median(on.map(\.cpuSeconds))
        return Case(
            name: name,
            runs: runs,
            cpuOff: cpuOff,
            cpuOn: cpuOn,
            cpuRatio: cpuOn / cpuOff,
            liveViewCPU: median(on.map(\.liveViewCPUSeconds)),
            liveViewShare: median(on.map(\.liveViewCPUSeconds)) / cpuOff,
            wallOff: median(off.map(\.wallSeconds)),
            wallOn: median(on.map(\.wallSeconds))
        )
    }

    private func once(flags: [String], watched: Bool) async throws -> Run {
        let report = FileManager.default.temporaryDirectory.appendingPathComponent("live-bench-\(UUID()).json").path
        defer { try? FileManager.default.removeItem(atPath: report) }
        var arguments = flags + ["--report", report]
        var ports: [UInt16] = []
        if watched {
            ports = [try freeLoopbackPort(), try freeLoopbackPort()]
            arguments += ["--metrics", "127.0.0.1:\(ports[0])", "--dashboard", "127.0.0.1:\(ports[1])"]
        }
        let child = try Child.launch(roomlink, arguments)
        let counts = Mutex((scrapes: 0, failed: 0))
        let scraper: Task<Void, Never>? =
            watched
            ? Task.detached { [every] in
                guard let group = try? LibeventLoopGroup(configuration: .init(loopCount: 1)) else { return }
                defer { group.shutdown() }
                let metrics = AdminClient(
                    address: SocketAddress(host: "127.0.0.1", port: ports[0]),
                    token: nil,
                    loop: group.eventLoops[0]
                )
                let page = AdminClient(
                    address: SocketAddress(host: "127.0.0.1", port: ports[1]),
                    token: nil,
                    loop: group.eventLoops[0]
                )
                while !Task.isCancelled {
                    for (client, path) in [(metrics, "/metrics"), (page, "/live.json"), (page, "/plot.svg")] {
                        let answer = await client.request("GET", path)
                        counts.withLock { counts in
                            if answer.status == 200 { counts.scrapes += 1 } else { counts.failed += 1 }
                        }
                    }
                    try? await Task.sleep(for: .seconds(every))
                }
            } : nil
        // Polled, not `waitUntilExit()`: that one runs a run loop on a thread of the pool beside the scraper.
        while child.process.isRunning { try? await Task.sleep(for: .milliseconds(50)) }
        ChildRegistry.ended(child.process.processIdentifier)
        scraper?.cancel()
        await scraper?.value
        guard child.process.terminationStatus == 0 else {
            throw ValidationError(
                "roomlink \(arguments.joined(separator: " ")) exited \(child.process.terminationStatus)"
            )
        }
        let result = try JSONDecoder().decode(RunReport.self, from: Data(contentsOf: URL(fileURLWithPath: report)))
        let (scrapes, failed) = counts.withLock { ($0.scrapes, $0.failed) }
        return Run(
            watched: watched,
            cpuSeconds: result.cpuSeconds,
            liveViewCPUSeconds: result.liveViewCPUSeconds ?? 0,
            wallSeconds: result.wallSeconds,
            scrapes: scrapes,
            failedScrapes: failed
        )
    }
}

/// A loopback port nobody listens on now (bound, read, closed).
func freeLoopbackPort() throws -> UInt16 {
    let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(probe) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, length) }
    }
    guard bound == 0 else { throw ValidationError("no free loopback port") }
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(probe, $0, &length) }
    }
    return UInt16(bigEndian: address.sin_port)
}
