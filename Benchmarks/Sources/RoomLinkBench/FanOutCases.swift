import ArgumentParser
import Foundation
import Glibc
import RoomLink

/// `roomlink-bench fanout`: what `roomlink serve` spends per frame it sends when every login in a room of 100 is a
/// user update to each member (ZEGO with `--notify`), for one build or several side by side, alternating.
struct FanOut: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fanout",
        abstract: "serve's system calls and CPU per frame sent in a fan-out (ZEGO --notify, rooms of 100), per build.",
        discussion: """
            For each round and each build (--roomlink, repeatable: the build before and after a change, say), \
            alternating: `roomlink serve --dialect zego` and a `roomlink load --notify` of --clients clients in rooms \
            of 100 logging in over --login-over; over a --window-second window starting --from seconds into the fill it counts serve's \
            system calls (`perf stat` on the syscalls:sys_enter_* tracepoints: perf and root, or a low \
            perf_event_paranoid) and its CPU time, against the frames it sent (its /metrics).
            """
    )

    @Option(help: "A roomlink executable (repeatable): each is measured in turn, in every round.")
    var roomlink: [String] = ["../.build/release/roomlink"]
    @Option(help: "Clients, in rooms of 100.") var clients = 5_000
    @Option(help: "Seconds over which the clients log in.") var loginOver = 30
    @Option(help: "Seconds measured, from --from seconds into the fill.") var window = 10.0
    @Option(help: "When the window starts, in seconds after the load starts (a short fill is a burst: measure it).")
    var from = 8.0
    @Option(help: "Rounds.") var rounds = 3

    static let calls = ["epoll_ctl", "writev", "sendto", "write", "readv", "read", "recvfrom", "epoll_wait"]

    func run() async throws {
        OpenFileLimit.raiseToHard()
        say("fan-out: \(clients) ZEGO --notify clients in rooms of 100 over \(loginOver) s, \(rounds) rounds")
        for round in 1...rounds {
            say("— round \(round)")
            for path in roomlink { say(try await measure(path).line(path)) }
        }
    }

    private func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    struct Result {
        var frames: Double
        var calls: [String: Double]
        var cpuSeconds: Double

        func line(_ path: String) -> String {
            let perFrame = FanOut.calls.compactMap { name in
                calls[name].map { String(format: "%@ %.2f", name, $0 / max(frames, 1)) }
            }
            let all = calls.values.reduce(0, +) / max(frames, 1)
            return String(
                format: "%@: %.0f frames; per frame %@; all %.2f system calls, %.1f µs of serve's CPU",
                path,
                frames,
                perFrame.joined(separator: ", "),
                all,
                cpuSeconds / max(frames, 1) * 1e6
            )
        }
    }

    private func measure(_ path: String) async throws -> Result {
        let server = try Child.serve(path, ["--dialect", "zego"])
        defer { server.stop() }
        let address = try server.servedAddress()
        let admin = try server.adminAddress()
        let load = try Child.launch(
            path,
            [
                "load", "--clients", "\(clients)", "--rooms", "\(max(1, clients / 100))", "--dialect", "zego",
                "--notify",
                "--duration", "\(loginOver + 60)s", "--login-over", "\(loginOver)s", "--server", "\(address)",
                "--clock", "real", "--quiet", "--report", "/dev/null",
            ]
        )
        defer { load.stop(grace: 5) }
        try await Task.sleep(for: .seconds(from))
        let before = try await Self.framesSent(admin)
        let cpuBefore = server.cpuSeconds()
        let events = Self.calls.flatMap { ["-e", "syscalls:sys_enter_\($0)"] }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("roomlink-fanout-\(getpid()).txt")
        let perf = try Child.launch(
            "/usr/bin/env",
            ["perf", "stat", "-x", ",", "-o", output.path] + events
                + ["-p", "\(server.process.processIdentifier)", "--", "sleep", "\(window)"]
        )
        perf.process.waitUntilExit()
        let after = try await Self.framesSent(admin)
        let cpu = server.cpuSeconds() - cpuBefore
        var calls: [String: Double] = [:]
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            guard fields.count > 2, let range = fields[2].range(of: "sys_enter_"), let count = Double(fields[0])
            else { continue }
            calls[String(fields[2][range.upperBound...])] = count
        }
        try? FileManager.default.removeItem(at: output)
        guard !calls.isEmpty else {
            throw ValidationError("perf stat counted nothing (is perf installed, and may it trace this process?)")
        }
        return Result(frames: after - before, calls: calls, cpuSeconds: cpu)
    }

    /// serve's `roomlink_frames_total{direction="out"}`, from its admin API.
    static func framesSent(_ admin: RoomLink.SocketAddress) async throws -> Double {
        let text = try await LiveKitSignalling.fetch(admin, "/metrics")
        let line = text.split(separator: "\n").first { $0.hasPrefix("roomlink_frames_total{direction=\"out\"") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
    }
}
