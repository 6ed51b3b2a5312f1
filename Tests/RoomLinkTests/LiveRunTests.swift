import Foundation
import RoomLink
import RoomLinkRuntime
import RoomLinkTestSupport
import Testing

/// A run watched while it goes (`--metrics`, `--dashboard`, `--html`): the live figures are the report's, the
/// metrics count each thing once however often they are scraped, and the servers answer and refuse as documented.
@Suite struct LiveRunTests {
    /// A storm on 400 clients in virtual time, watched.
    static func watchedStorm(
        seed: UInt64 = 3,
        progress: (@Sendable (LoadProgress) -> Void)? = nil
    ) async throws -> (RunReport, LiveRun) {
        var plan = LoadPlan(clients: 400, rooms: 8, duration: .seconds(120))
        plan.loginOver = .seconds(10)
        plan.faults = [try StormFault("0.5@30s:10s")]
        var runner = try ScenarioRunner(scenario: try plan.scenario())
        runner.collectsLoadStatistics = true
        let live = LiveRun()
        runner.live = live
        let report = try await SimulationRuntime.withSimulation(seed: seed) {
            try await runner.run(on: $0, progress: progress, progressInterval: .seconds(60))
        }
        return (report, live)
    }

    /// `name{labels} value` lines of a Prometheus exposition: value by series.
    static func samples(_ text: String) -> [String: Double] {
        var found: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                continue
            }
            found[String(line[..<space])] = value
        }
        return found
    }

    @Test(.skippedUnderThreadSanitizer)
    func theLastSnapshotIsTheReportsAndTheMetricsSayTheSame() async throws {
        let (report, live) = try await Self.watchedStorm()
        let load = try #require(report.load)
        let snapshot = try #require(live.snapshot())
        #expect(live.isFinished && snapshot.finished)
        #expect(snapshot.clock == "virtual" && snapshot.clients == 400)
        #expect(snapshot.progress.scenarioSeconds == 120)
        let mirrored = try #require(snapshot.loadReport)
        #expect(mirrored.online == load.online && mirrored.reconnections == load.reconnections)
        #expect(mirrored.reconnectSecondsP99 == load.reconnectSecondsP99)
        #expect(load.reconnections > 100, "the storm made reconnections to count")

        let metrics = RunMetrics(live: live)
        let first = Self.samples(metrics.render())
        #expect(first[#"roomlink_clients{state="online"}"#] == Double(load.online))
        #expect(first["roomlink_client_reconnect_duration_seconds_count"] == Double(load.reconnections))
        let accepted = load.timeSeries.reduce(0) { $0 + $1.accepted }
        #expect(first[#"roomlink_client_logins_total{outcome="accepted"}"#] == Double(accepted))
        #expect(first[#"roomlink_scenario_seconds{clock="virtual",dialect="zego"}"#] == 120)
        #expect(first["roomlink_run_finished"] == 1)
        // Every bucket counts what the report's histogram says lies at or under it (the HDR value of a reconnection
        // of exactly 3 s may round into the next bucket: compare away from the bounds).
        let underTen = load.reconnectSecondsHistogram.prefix(10).reduce(0, +)
        let tenBucket = try #require(first[#"roomlink_client_reconnect_duration_seconds_bucket{le="13.0"}"#])
        #expect(tenBucket >= Double(underTen))
        #expect(first[#"roomlink_client_reconnect_duration_seconds_bucket{le="+Inf"}"#] == Double(load.reconnections))
        // A second scrape of the same figures counts nothing twice.
        #expect(Self.samples(metrics.render()) == first)
    }

    @Test(.skippedUnderThreadSanitizer)
    func refusalsAreCountedByReasonAndCode() async throws {
        var plan = LoadPlan(clients: 200, rooms: 4, duration: .seconds(60))
        plan.loginOver = .seconds(5)
        plan.faults = [try KickStormFault("0.25@20s")]
        var runner = try ScenarioRunner(scenario: try plan.scenario())
        runner.collectsLoadStatistics = true
        let live = LiveRun()
        runner.live = live
        let report = try await SimulationRuntime.withSimulation(seed: 2) { try await runner.run(on: $0) }
        let kicked = try #require(report.eventsByReason["kickOut"])
        #expect(kicked == 50)
        let samples = Self.samples(RunMetrics(live: live).render())
        let refusals = samples.filter { $0.key.hasPrefix("roomlink_client_refusals_total{") }
        #expect(refusals.count == 1, "\(refusals)")
        let (series, count) = try #require(refusals.first)
        #expect(series.contains(#"reason="kickOut""#) && series.contains(#"code=""#))
        #expect(count == Double(kicked))
        // Logged-in clients' own events are no refusals.
        #expect(report.eventsByReason["logined", default: 0] > 0)
    }

    @Test(.skippedUnderThreadSanitizer)
    func aSnapshotTakenWhileTheRunGoesIsNotFinishedAndAgreesWithTheReport() async throws {
        // At the run's end the progress line is reported before the run returns: a snapshot taken then is live.
        let during = LockedBox<LiveRunSnapshot?>(nil)
        var plan = LoadPlan(clients: 200, rooms: 4, duration: .seconds(60))
        plan.loginOver = .seconds(5)
        var runner = try ScenarioRunner(scenario: try plan.scenario())
        runner.collectsLoadStatistics = true
        let handle = LiveRun()
        runner.live = handle
        #expect(handle.snapshot() == nil, "nothing before the run has built its world")
        #expect(RunMetrics(live: handle).render(openMetrics: true) == "# EOF\n")
        let report = try await SimulationRuntime.withSimulation(seed: 1) {
            try await runner.run(on: $0, progress: { _ in during.withLock { $0 = handle.snapshot() } })
        }
        let snapshot = try #require(during.withLock { $0 })
        #expect(!snapshot.finished)
        #expect(snapshot.load?.online == report.load?.online)
        #expect(snapshot.progress.events == report.events)
        #expect(handle.snapshot()?.finished == true)
    }

    @Test
    func aStartGateSetsTheRealClocksZeroAndATooSoonOneIsRefused() async throws {
        var plan = LoadPlan(clients: 20, rooms: 2, duration: .seconds(1))
        plan.loginOver = .milliseconds(100)
        var runner = try ScenarioRunner(scenario: try plan.scenario())
        let gate = LockedBox<ContinuousClock.Instant?>(nil)
        runner.startGate = {
            let start = ContinuousClock.now + .milliseconds(400)
            gate.withLock { $0 = start }
            return start
        }
        let first = FirstEventClock()
        let collector = first
        let report = try await LibeventLoopGroup.withLoopGroup { group in
            try await runner.run(on: group, events: collector)
        }
        #expect(report.violations == 0 && report.events > 0)
        let start = try #require(gate.withLock { $0 })
        let firstEvent = try #require(first.instant.withLock { $0 })
        // Never early: the first login's event comes after the agreed start (its first attempt is at the start).
        #expect(firstEvent >= start, "an event came \(start - firstEvent) before the start")

        runner.startGate = { ContinuousClock.now - .milliseconds(5) }
        await #expect(throws: RoomLinkError.self) {
            try await LibeventLoopGroup.withLoopGroup { group in try await runner.run(on: group) }
        }
    }

    @Test
    func snapshotsOfSlicesAddUp() throws {
        func snapshot(online: Int, reconnecting: Int, scenario: Double, finished: Bool) -> LiveRunSnapshot {
            var progress = LoadProgress(
                scenarioSeconds: scenario,
                scenarioEnd: 60,
                wallSeconds: scenario / 2,
                online: online,
                reconnecting: reconnecting,
                failed: 0,
                attempts: reconnecting,
                events: online,
                eventsPerSecond: 1,
                rssBytes: 1_000
            )
            progress.latePeakMs = nil
            var tally = LatencyRecorder()
            tally.record(nanoseconds: 1_000_000)
            return LiveRunSnapshot(
                progress: progress,
                clock: "real",
                dialect: "agora",
                clients: online + reconnecting,
                finished: finished,
                eventsByType: ["joined": online],
                timerLateness: tally
            )
        }
        var fleet = snapshot(online: 10, reconnecting: 2, scenario: 30, finished: true)
        fleet.merge(snapshot(online: 5, reconnecting: 1, scenario: 20, finished: false))
        #expect(fleet.parts == 2 && fleet.clients == 18)
        #expect(fleet.progress.online == 15 && fleet.progress.reconnecting == 3)
        #expect(fleet.progress.scenarioSeconds == 20, "the fleet is where its slowest generator is")
        #expect(!fleet.finished)
        #expect(fleet.eventsByType == ["joined": 15])
        #expect(fleet.timerLateness?.count == 2)
        let decoded = try JSONDecoder().decode(LiveRunSnapshot.self, from: JSONEncoder().encode(fleet))
        #expect(decoded == fleet)
    }

    @Test
    func openMetricsNamesCountersWithoutTotalAndEnds() {
        let text = """
            # HELP roomlink_client_logins_total Logins.
            # TYPE roomlink_client_logins_total counter
            roomlink_client_logins_total{outcome="sent"} 3.0
            # TYPE roomlink_clients gauge
            roomlink_clients{state="online"} 2.0

            """
        #expect(
            RunMetrics.openMetrics(text) == """
                # HELP roomlink_client_logins Logins.
                # TYPE roomlink_client_logins counter
                roomlink_client_logins_total{outcome="sent"} 3.0
                # TYPE roomlink_clients gauge
                roomlink_clients{state="online"} 2.0
                # EOF

                """
        )
        let live = LiveRun()
        let plain = RunMetrics(live: live).respond(to: MonitorRequest(path: "/metrics"))
        #expect(plain.contentType.hasPrefix("text/plain; version=0.0.4"))
        let open = RunMetrics(live: live).respond(
            to: MonitorRequest(path: "/metrics", accept: "application/openmetrics-text;version=1.0.0,text/plain;q=0.5")
        )
        #expect(open.contentType.hasPrefix("application/openmetrics-text"))
        #expect(RunMetrics(live: live).respond(to: MonitorRequest(path: "/other")).status == 404)
    }

    @Test(.skippedUnderThreadSanitizer)
    func theHTMLReportSaysTheVerdictAndEscapesWhatItQuotes() async throws {
        var (report, _) = try await Self.watchedStorm()
        let clean = RunDashboard.report(report, title: "a <storm> & more")
        #expect(clean.contains("<title>a &lt;storm&gt; &amp; more</title>"))
        #expect(clean.contains(#"<p class="verdict pass" id="verdict">no spec violations</p>"#))
        #expect(clean.contains("<svg"), "the panels are drawn in the page")
        #expect(!clean.contains("src=\"http") && !clean.contains("href=\"http"), "nothing to fetch")
        report.violations = 21
        report.violationSample = ["A: <joined> before it logged in"]
        let failed = RunDashboard.report(report, title: "t")
        #expect(failed.contains(#"<p class="verdict fail" id="verdict">21 spec violations</p>"#))
        #expect(failed.contains("<code>A: &lt;joined&gt; before it logged in</code>"))
        #expect(failed.contains("… and 20 more."))
        report.interrupted = true
        #expect(RunDashboard.report(report, title: "t").contains(#"class="verdict warn""#))
    }

    @Test
    func theMonitorServerAnswersGetRefusesOtherMethodsAndNamesAPortTaken() async throws {
        let server = try await MonitorServer.start(at: SocketAddress(host: "127.0.0.1", port: 0)) { request in
            MonitorResponse(contentType: "text/plain", text: "you asked for \(request.path)")
        }
        let port = server.address.port
        #expect(port != 0)
        let group = try LibeventLoopGroup(configuration: .init(loopCount: 1))
        defer { group.shutdown() }
        let client = AdminClient(address: server.address, token: nil, loop: group.eventLoops[0])
        let answer = await client.request("GET", "/metrics?x=1")
        #expect(answer.status == 200 && answer.body == "you asked for /metrics")
        let refused = await client.request("POST", "/metrics")
        #expect(refused.status == 405)
        #expect(refused.object?["error"] is String)
        await #expect(throws: NetworkError.self) {
            _ = try await MonitorServer.start(at: SocketAddress(host: "127.0.0.1", port: port)) { _ in
                MonitorResponse(contentType: "text/plain", text: "")
            }
        }
        await server.stop()
    }
}

extension LiveRunTests {
    /// What watching costs is counted on the server's own thread: at least the CPU time its handler used, and once
    /// the server has stopped, a figure that no longer moves.
    @Test
    func theMonitorServerCountsItsThreadsCPUTime() async throws {
        let burned = LockedBox(0.0)
        let server = try await MonitorServer.start(at: SocketAddress(host: "127.0.0.1", port: 0)) { _ in
            // Busy for 30 ms of this thread's CPU time, as the handler itself measures it.
            func now() -> Double {
                var time = timespec()
                clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
                return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
            }
            let start = now()
            var spin: UInt64 = 0
            while now() - start < 0.03 { spin &+= 1 }
            burned.withLock { $0 += now() - start }
            return MonitorResponse(contentType: "text/plain", text: "\(spin > 0)")
        }
        let group = try LibeventLoopGroup(configuration: .init(loopCount: 1))
        defer { group.shutdown() }
        let client = AdminClient(address: server.address, token: nil, loop: group.eventLoops[0])
        for _ in 0..<3 { #expect(await client.request("GET", "/").status == 200) }
        let used = burned.withLock { $0 }
        #expect(used >= 0.09)
        #expect(server.cpuSeconds >= used)
        await server.stop()
        let final = server.cpuSeconds
        #expect(final >= used)
        _ = await client.request("GET", "/")
        #expect(server.cpuSeconds == final)
    }
}

/// When the first event of a run reached its sink, on the continuous clock.
private final class FirstEventClock: EventSink {
    let instant = LockedBox<ContinuousClock.Instant?>(nil)

    func record(_ event: Stamped<EventLogLine>, from client: String) {
        instant.withLock { $0 = $0 ?? ContinuousClock.now }
    }
}
