import ArgumentParser
import Foundation
import RoomLink

/// Watching a run while it goes (`run` and `load`): live metrics for Prometheus, a live page, and the finished run as
/// one HTML file (docs/live.md).
struct LiveOptions: ParsableArguments {
    @Option(
        help: """
            Serve the run's live figures for Prometheus at HOST:PORT (/metrics; Prometheus text, or OpenMetrics when \
            asked), on a thread of its own (docs/live.md).
            """
    )
    var metrics: String?

    @Option(help: "Serve a live page of the run at HOST:PORT (/, updated every second; nothing fetched from outside).")
    var dashboard: String?

    @Option(help: "Write the finished run as one self-contained HTML file: verdict, summary, panels, violations.")
    var html: String?

    /// Whether the run is watched while it goes.
    var watches: Bool { metrics != nil || dashboard != nil }

    /// The addresses, read (a bad one is named by its flag).
    func addresses() throws(RoomLinkError) -> (metrics: SocketAddress?, dashboard: SocketAddress?) {
        func read(_ text: String?, _ flag: String) throws(RoomLinkError) -> SocketAddress? {
            guard let text else { return nil }
            do {
                return try SocketAddress(parsing: text)
            } catch {
                throw RoomLinkError(code: .invalidInput, field: flag, message: "\(flag): \(error.description)")
            }
        }
        let addresses = (try read(metrics, "--metrics"), try read(dashboard, "--dashboard"))
        if let first = addresses.0, let second = addresses.1, first == second, first.port != 0 {
            throw RoomLinkError(
                code: .invalidInput,
                field: "--dashboard",
                message: "--metrics and --dashboard cannot share \(first): give each its own port"
            )
        }
        return addresses
    }
}

/// The servers a watched run answers on, started before the run and stopped after it.
struct LiveServers {
    var servers: [MonitorServer] = []
    var dashboard: RunDashboard?

    /// Starts what `options` asks for on `live`; a port taken or an address that cannot be bound is named by its flag.
    static func start(_ options: LiveOptions, live: LiveRun, title: String) async throws -> LiveServers {
        let (metricsAddress, dashboardAddress) = try options.addresses()
        var started = LiveServers()
        do {
            if let metricsAddress {
                let metrics = RunMetrics(live: live)
                let server = try await start(metricsAddress, flag: "--metrics") { metrics.respond(to: $0) }
                started.servers.append(server)
                StandardStream.error.write("roomlink: metrics at http://\(server.address)/metrics\n")
            }
            if let dashboardAddress {
                let dashboard = RunDashboard(live: live, title: title)
                started.dashboard = dashboard
                let server = try await start(dashboardAddress, flag: "--dashboard") { dashboard.respond(to: $0) }
                started.servers.append(server)
                StandardStream.error.write("roomlink: dashboard at http://\(server.address)/\n")
            }
        } catch {
            await started.stop()
            throw error
        }
        return started
    }

    private static func start(
        _ address: SocketAddress,
        flag: String,
        handler: @escaping @Sendable (MonitorRequest) -> MonitorResponse
    ) async throws -> MonitorServer {
        do {
            return try await MonitorServer.start(at: address, handler: handler)
        } catch {
            throw RoomLinkError(code: .invalidInput, field: flag, message: "\(flag): \(error.description)")
        }
    }

    /// The CPU time the servers' threads have used so far (`MonitorServer.cpuSeconds`).
    var cpuSeconds: Double { servers.reduce(0) { $0 + $1.cpuSeconds } }

    /// Stops the servers once the run has returned: a page following the run is first let see its end (at most
    /// five seconds).
    func stop() async {
        await dashboard?.letPagesSeeTheEnd()
        for server in servers { await server.stop() }
    }
}
