internal import Foundation

extension LoadReport {
    /// An SVG picture of the run: the time series (online, reconnecting, reconnect attempts per second) above, the
    /// reconnect-duration histogram below — the storm at a glance. Plain SVG 1.1, no script, no external files.
    public func svg(title: String) -> String { svg(title: title, servers: nil) }

    /// The picture, with a third panel when the servers' capacity was modelled: logins offered and completed per
    /// second (goodput) and the queue's length, over the run.
    public func svg(title: String, servers: ServerReport?) -> String {
        svg(title: title, servers: servers, connections: nil)
    }

    /// The picture, with a panel for the servers' capacity when it was modelled, and one for the connections to a
    /// real server (attempts, opened and failed per second, and connections open) when there were any.
    public func svg(title: String, servers: ServerReport?, connections: ConnectionReport?) -> String {
        let height = 600 + (servers == nil ? 0 : 260) + (connections == nil ? 0 : 260)
        let width = 960.0
        let chart = (left: 70.0, top: 50.0, width: 860.0, height: 260.0)
        let bars = (left: 70.0, top: 380.0, width: 860.0, height: 160.0)
        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(height)" viewBox="0 0 \(Int(width)) \(height)" \
            font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(chart.left)" y="24" font-size="16">\(Self.escape(title))</text>

            """
        // The series, on one scale: connections and attempts per second.
        let seconds = max(1, timeSeries.count)
        let top = max(1, timeSeries.map { max($0.online, $0.reconnecting, $0.attempts, $0.target) }.max() ?? 1)
        func x(_ second: Int) -> Double { chart.left + chart.width * Double(second) / Double(seconds) }
        func y(_ value: Int) -> Double { chart.top + chart.height * (1 - Double(value) / Double(top)) }
        out += Self.axes(chart.left, chart.top, chart.width, chart.height)
        out += Self.label(chart.left - 8, chart.top + 4, "\(top)", anchor: "end")
        out += Self.label(chart.left - 8, chart.top + chart.height, "0", anchor: "end")
        out += Self.label(chart.left + chart.width, chart.top + chart.height + 18, "\(seconds) s", anchor: "end")
        let series: [(String, String, (Second) -> Int)] = [
            ("target", "#bdc1c6", \.target), ("online", "#2b7bba", \.online),
            ("reconnecting", "#e8710a", \.reconnecting), ("attempts / s", "#c5221f", \.attempts),
        ]
        for (index, (name, color, value)) in series.enumerated() {
            let points = timeSeries.map { String(format: "%.1f,%.1f", x($0.second), y(value($0))) }
            out +=
                "<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"1.5\" points=\"\(points.joined(separator: " "))\"/>\n"
            let legendX = chart.left + 10 + Double(index) * 130
            out += "<rect x=\"\(legendX)\" y=\"\(chart.top - 16)\" width=\"12\" height=\"4\" fill=\"\(color)\"/>\n"
            out += Self.label(legendX + 18, chart.top - 11, name)
        }
        // The reconnect-duration histogram, one bar per second of duration.
        let counts = reconnectSecondsHistogram
        let highest = max(1, counts.max() ?? 1)
        out += Self.axes(bars.left, bars.top, bars.width, bars.height)
        out += Self.label(
            bars.left,
            bars.top - 10,
            "reconnect duration (\(reconnections) reconnections; p50 \(Self.format(reconnectSecondsP50)) s, p99 \(Self.format(reconnectSecondsP99)) s)"
        )
        let barWidth = bars.width / Double(max(1, counts.count))
        for (second, count) in counts.enumerated() where count > 0 {
            let height = bars.height * Double(count) / Double(highest)
            out += String(
                format: "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#5f6368\"/>\n",
                bars.left + Double(second) * barWidth,
                bars.top + bars.height - height,
                max(1, barWidth - 1),
                height
            )
        }
        out += Self.label(bars.left - 8, bars.top + 4, "\(highest)", anchor: "end")
        out += Self.label(bars.left + bars.width, bars.top + bars.height + 18, "\(counts.count) s", anchor: "end")
        if let servers { out += Self.serverPanel(servers, top: 630) }
        if let connections { out += Self.connectionPanel(connections, top: servers == nil ? 630 : 890) }
        out += "</svg>\n"
        return out
    }

    /// Offered and completed logins per second, and the queue (its own scale, on the right), per second.
    private static func serverPanel(_ servers: ServerReport, top: Double) -> String {
        let rows = servers.timeSeries
        let logins = max(1, rows.map { max($0.offeredLogins, $0.completedLogins) }.max() ?? 1)
        let queue = max(1, rows.map(\.queue).max() ?? 1)
        let verdict =
            servers.sustainedOverload
            ? "sustained overload after the trigger"
            : servers.recovered.map { $0 ? "recovered" : "did not recover" } ?? ""
        return panel(
            rows: rows,
            second: \.second,
            series: [
                ("logins offered / s", "#9aa0a6", \.offeredLogins, logins),
                ("goodput (answered in time) / s", "#188038", \.goodputLogins, logins),
                ("queue length", "#a142f4", \.queue, queue),
            ],
            top: top,
            scales: ("\(logins)", "queue \(queue)"),
            legendSpacing: 200,
            caption: "servers: \(servers.policy)  \(verdict)"
        )
    }

    /// Connection attempts, opened and failed per second, and connections open (its own scale, on the right).
    private static func connectionPanel(_ connections: ConnectionReport, top: Double) -> String {
        let rows = connections.tally.seconds
        let rate = max(1, rows.map { max($0.attempts, $0.opened, $0.failed) }.max() ?? 1)
        let open = max(1, rows.map(\.open).max() ?? 1)
        let causes = connections.failures.filter { $0.value > 0 }.sorted { $0.key < $1.key }
            .map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        return panel(
            rows: rows,
            second: \.second,
            series: [
                ("connection attempts / s", "#9aa0a6", \.attempts, rate), ("opened / s", "#188038", \.opened, rate),
                ("failed / s", "#c5221f", \.failed, rate), ("connections open", "#2b7bba", \.open, open),
            ],
            top: top,
            scales: ("\(rate)", "open \(open)"),
            legendSpacing: 190,
            caption: "TCP connect p99 \(format(connections.tcpConnect.p99Ms)) ms, login p99 "
                + "\(format(connections.login.p99Ms)) ms, heartbeat round trip p99 "
                + "\(format(connections.heartbeatRoundTrip.p99Ms)) ms; failures: \(causes.isEmpty ? "none" : causes)"
        )
    }

    /// A panel of per-second series under the main chart, each on the scale it names (`top`): the left scale's label
    /// and the right one's, a legend, and a caption below.
    private static func panel<Row>(
        rows: [Row],
        second: (Row) -> Int,
        series: [(name: String, color: String, value: (Row) -> Int, top: Int)],
        top: Double,
        scales: (left: String, right: String),
        legendSpacing: Double,
        caption: String
    ) -> String {
        let panel = (left: 70.0, top: top, width: 860.0, height: 180.0)
        let seconds = max(1, rows.count)
        func x(_ second: Int) -> Double { panel.left + panel.width * Double(second) / Double(seconds) }
        func y(_ value: Int, _ top: Int) -> Double { panel.top + panel.height * (1 - Double(value) / Double(top)) }
        var out = axes(panel.left, panel.top, panel.width, panel.height)
        out += label(panel.left - 8, panel.top + 4, scales.left, anchor: "end")
        out += label(panel.left + panel.width + 4, panel.top + 4, scales.right)
        out += label(panel.left - 8, panel.top + panel.height, "0", anchor: "end")
        for (index, line) in series.enumerated() {
            let points = rows.map { String(format: "%.1f,%.1f", x(second($0)), y(line.value($0), line.top)) }
            out +=
                "<polyline fill=\"none\" stroke=\"\(line.color)\" stroke-width=\"1.5\" points=\"\(points.joined(separator: " "))\"/>\n"
            let legendX = panel.left + 10 + Double(index) * legendSpacing
            out += "<rect x=\"\(legendX)\" y=\"\(panel.top - 16)\" width=\"12\" height=\"4\" fill=\"\(line.color)\"/>\n"
            out += label(legendX + 18, panel.top - 11, line.name)
        }
        out += label(panel.left, panel.top + panel.height + 18, caption)
        return out
    }

    private static func axes(_ left: Double, _ top: Double, _ width: Double, _ height: Double) -> String {
        "<path d=\"M\(left) \(top) V\(top + height) H\(left + width)\" stroke=\"#444\" fill=\"none\"/>\n"
    }

    private static func label(_ x: Double, _ y: Double, _ text: String, anchor: String = "start") -> String {
        "<text x=\"\(x)\" y=\"\(y)\" text-anchor=\"\(anchor)\">\(escape(text))</text>\n"
    }

    private static func format(_ value: Double) -> String { String(format: "%.2f", value) }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
