import Foundation
public import RoomLinkNetwork
import RoomLinkRuntime
public import RoomLinkScenarios

/// `roomlink load|run --dashboard`: one self-contained page that shows the run live — the figures of the progress
/// line and the same panels as `--plot`, redrawn every second — and `--html`: the finished run as one HTML file.
///
/// Nothing is fetched from anywhere but the generator itself: the page's script and style are inline, and the
/// panels are the plot's SVG, drawn by the generator from the run's tallies (``LiveRunSnapshot/loadReport``).
///
/// | Path | Answer |
/// | --- | --- |
/// | `/` | the page |
/// | `/live.json` | the figures now (``LiveFigures``) |
/// | `/plot.svg` | the panels now |
public struct RunDashboard: Sendable {
    private let live: LiveRun
    private let title: String
    /// When a page last asked for the figures, whether it has been told the run finished, and whether it has fetched
    /// the last panels since (it does, once told).
    private let pages = LockedBox(
        (lastPoll: ContinuousClock.Instant?.none, toldFinished: false, fetchedLastPanels: false)
    )

    /// The dashboard of the run `live` watches, headed `title`.
    public init(live: LiveRun, title: String) {
        self.live = live
        self.title = title
    }

    /// Answers the page's requests.
    public func respond(to request: MonitorRequest) -> MonitorResponse {
        switch request.path {
        case "/", "/index.html":
            return MonitorResponse(contentType: "text/html; charset=utf-8", text: Self.page(title: title))
        case "/live.json":
            let figures = live.snapshot().map(LiveFigures.init) ?? LiveFigures()
            pages.withLock { page in
                page.lastPoll = ContinuousClock.now
                page.toldFinished = page.toldFinished || figures.finished
            }
            let data = (try? JSONEncoder().encode(figures)) ?? Data("{}".utf8)
            return MonitorResponse(contentType: "application/json", body: Array(data))
        case "/plot.svg":
            let panels = Self.panels(live.snapshot(), title: title)
            pages.withLock { page in
                if page.toldFinished { page.fetchedLastPanels = true }
            }
            return MonitorResponse(contentType: "image/svg+xml", text: panels)
        default:
            return .error(404, "no \(request.path) here: the dashboard is /")
        }
    }

    /// Once the run has returned: waits, at most `limit`, for a page that was following the run to be told it
    /// finished and to fetch the last panels, so that it shows the end and stops asking (rather than finding the
    /// generator gone). Returns at once when no page asked in the last three seconds.
    public func letPagesSeeTheEnd(within limit: Duration = .seconds(5)) async {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            let page = pages.withLock { $0 }
            guard let lastPoll = page.lastPoll, ContinuousClock.now - lastPoll < .seconds(3), !page.fetchedLastPanels
            else { return }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// The panels of `snapshot`: the plot `--plot` draws, up to the scenario time reached.
    static func panels(_ snapshot: LiveRunSnapshot?, title: String) -> String {
        guard let snapshot, let load = snapshot.loadReport else {
            return #"<svg xmlns="http://www.w3.org/2000/svg" width="960" height="60"><text x="10" y="30">"#
                + "waiting for the run to start</text></svg>"
        }
        return load.svg(
            title: title,
            servers: nil,
            connections: snapshot.connections.map(ConnectionReport.init),
            tokens: snapshot.tokens.map(TokenReport.init)
        )
    }

    /// The live page: figures and panels, fetched from the generator every second until the run has finished.
    static func page(title: String) -> String {
        HTML.document(
            title: title,
            body: """
                        <p id="status" class="status">waiting for the run…</p>
                <table class="figures"><tbody id="figures"></tbody></table>
                <div id="panels" class="panels"></div>
                <script>
                "use strict";
                const rows = [
                  ["scenario", f => f.scenarioSeconds.toFixed(1) + " / " + f.scenarioEnd.toFixed(0) + " s (" + f.clock + " clock)"],
                  ["wall", f => f.wallSeconds.toFixed(1) + " s"],
                  ["clients", f => f.clients],
                  ["online", f => f.online],
                  ["reconnecting", f => f.reconnecting],
                  ["failed", f => f.failed],
                  ["offline", f => f.offline],
                  ["logins sent / accepted", f => f.loginsSent + " / " + f.loginsAccepted],
                  ["reconnect attempts", f => f.attempts],
                  ["reconnections p50 / p99", f => f.reconnectP50Seconds.toFixed(2) + " / " + f.reconnectP99Seconds.toFixed(2) + " s"],
                  ["events", f => f.events + " (" + Math.round(f.eventsPerSecond) + "/s)"],
                  ["memory", f => (f.rssBytes / 1048576).toFixed(0) + " MiB"],
                ];
                function show(f) {
                  const body = document.getElementById("figures");
                  body.replaceChildren(...rows.map(([name, value]) => {
                    const row = document.createElement("tr");
                    const key = document.createElement("th");
                    key.textContent = name;
                    const cell = document.createElement("td");
                    cell.textContent = String(value(f));
                    cell.dataset.figure = name;
                    row.append(key, cell);
                    return row;
                  }));
                }
                async function tick() {
                  const status = document.getElementById("status");
                  try {
                    const figures = await (await fetch("live.json", {cache: "no-store"})).json();
                    if (!figures.started) {
                      status.textContent = "waiting for the run to start…";
                    } else {
                      show(figures);
                      const panels = await (await fetch("plot.svg", {cache: "no-store"})).text();
                      document.getElementById("panels").innerHTML = panels;
                      status.textContent = figures.finished ? "finished" : "running — updated every second";
                      status.dataset.state = figures.finished ? "finished" : "running";
                      if (figures.finished) return;
                    }
                  } catch (error) {
                    status.textContent = "the generator is gone (the run ended)";
                    status.dataset.state = "gone";
                    return;
                  }
                  setTimeout(tick, 1000);
                }
                tick();
                </script>
                """
        )
    }

    /// The finished run as one HTML file that opens from disk: its verdict, summary, every panel, the violations,
    /// and the report itself.
    public static func report(_ result: RunReport, title: String) -> String {
        let verdict: String
        let verdictClass: String
        if result.interrupted {
            verdict = "interrupted at \(String(format: "%.1f", result.scenarioSeconds)) s: judged on a log cut short"
            verdictClass = "warn"
        } else if result.violations > 0 {
            verdict = "\(result.violations) spec violations"
            verdictClass = "fail"
        } else {
            verdict = "no spec violations"
            verdictClass = "pass"
        }
        let panels =
            result.load.map {
                $0.svg(title: title, servers: result.servers, connections: result.connections, tokens: result.tokens)
            } ?? "<p>No load statistics were gathered in this run.</p>"
        let violations =
            result.violationSample.isEmpty
            ? "<p>None.</p>"
            : "<ol>" + result.violationSample.map { "<li><code>\(HTML.escape($0))</code></li>" }.joined() + "</ol>"
                + (result.violations > result.violationSample.count
                    ? "<p>… and \(result.violations - result.violationSample.count) more.</p>" : "")
        let lacking =
            result.lacks.map { lines in
                "<h2>Lacking</h2>\n<ul id=\"lacks\">" + lines.map { "<li>\(HTML.escape($0))</li>" }.joined() + "</ul>\n"
            } ?? ""
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let json = (try? encoder.encode(result)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return HTML.document(
            title: title,
            body: """
                    <p class="verdict \(verdictClass)" id="verdict">\(HTML.escape(verdict))</p>
                <h2>Summary</h2>
                <pre id="summary">\(HTML.escape(result.summary))</pre>
                <h2>Panels</h2>
                <div class="panels" id="panels">\(panels)</div>
                \(lacking)<h2>Violations</h2>
                <div id="violations">\(violations)</div>
                <details><summary>The report (JSON)</summary><pre>\(HTML.escape(json))</pre></details>
                """
        )
    }
}

/// What the live page shows, as `/live.json` gives it.
public struct LiveFigures: Sendable, Codable, Equatable {
    public var started = false
    public var finished = false
    public var clock = ""
    public var scenarioSeconds = 0.0
    public var scenarioEnd = 0.0
    public var wallSeconds = 0.0
    public var clients = 0
    public var online = 0
    public var reconnecting = 0
    public var failed = 0
    public var offline = 0
    public var loginsSent = 0
    public var loginsAccepted = 0
    public var attempts = 0
    public var reconnectP50Seconds = 0.0
    public var reconnectP99Seconds = 0.0
    public var events = 0
    public var eventsPerSecond = 0.0
    public var rssBytes = 0
    /// Generators that make up these figures (a fleet's), 1 for one run.
    public var generators = 1

    public init() {}

    public init(_ snapshot: LiveRunSnapshot) {
        started = true
        finished = snapshot.finished
        clock = snapshot.clock
        let progress = snapshot.progress
        scenarioSeconds = progress.scenarioSeconds
        scenarioEnd = progress.scenarioEnd
        wallSeconds = progress.wallSeconds
        clients = snapshot.clients
        online = snapshot.load?.online ?? progress.online
        reconnecting = snapshot.load?.reconnecting ?? progress.reconnecting
        failed = snapshot.load?.failed ?? progress.failed
        offline = max(0, clients - online - reconnecting - failed)
        loginsSent = snapshot.load?.seconds.reduce(0) { $0 + $1.logins } ?? 0
        loginsAccepted = snapshot.load?.seconds.reduce(0) { $0 + $1.accepted } ?? 0
        attempts = progress.attempts
        let durations = snapshot.load?.durations.summary
        reconnectP50Seconds = (durations?.p50Ms ?? 0) / 1000
        reconnectP99Seconds = (durations?.p99Ms ?? 0) / 1000
        events = progress.events
        eventsPerSecond = progress.eventsPerSecond
        rssBytes = progress.rssBytes
        generators = snapshot.parts
    }
}

/// HTML's escapes, the pages' one style sheet, and their frame.
enum HTML {
    /// A whole page headed `title`: nothing to fetch (no icon either), the style inline.
    static func document(title: String, body: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <link rel="icon" href="data:,">
        <title>\(escape(title))</title>
        <style>\(style)</style>
        </head>
        <body>
        <h1>\(escape(title))</h1>
        \(body)
        </body>
        </html>

        """
    }

    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    static let style = """
        body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
        h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.5em; }
        .status, .verdict { font-weight: 600; } .pass { color: #1a7f37; } .fail { color: #cf222e; } .warn { color: #9a6700; }
        table.figures { border-collapse: collapse; margin: 0.5em 0 1em; }
        table.figures th { text-align: left; font-weight: normal; color: #555; padding: 0.1em 1em 0.1em 0; }
        table.figures td { font-variant-numeric: tabular-nums; text-align: right; }
        .panels svg { max-width: 100%; height: auto; }
        pre { background: #f6f8fa; padding: 0.8em; overflow-x: auto; }
        """
}
