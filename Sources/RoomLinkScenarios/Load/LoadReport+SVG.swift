internal import Foundation

extension LoadReport {
    /// An SVG picture of the run: the time series (connections on the left scale, reconnect attempts per second on
    /// their own, right, scale) above, the reconnect-duration histogram below — the storm at a glance. Every axis has
    /// ticks and a title, every label stays inside the picture. Plain SVG 1.1, no script, no external files.
    public func svg(title: String) -> String { svg(title: title, servers: nil) }

    /// The picture, with a third panel when the servers' capacity was modelled: logins offered and goodput per
    /// second, and the queue's length (its own scale), over the run.
    public func svg(title: String, servers: ServerReport?) -> String {
        svg(title: title, servers: servers, connections: nil)
    }

    /// The picture, with a panel for the servers' capacity when it was modelled, and one for the connections to a
    /// real server (attempts, opened and failed per second, and connections open) when there were any.
    public func svg(title: String, servers: ServerReport?, connections: ConnectionReport?) -> String {
        svg(title: title, servers: servers, connections: connections, tokens: nil)
    }

    /// The picture, with the servers' and connections' panels when they apply, and one for the token storm when the
    /// clients fetched their tokens: fetches begun, brought and failed per second.
    public func svg(
        title: String,
        servers: ServerReport?,
        connections: ConnectionReport?,
        tokens: TokenReport?
    ) -> String {
        let plot = Plot.self
        let mainHeight = 250.0
        let histogramTop = plot.top + mainHeight + 110
        var nextTop = histogramTop + 150 + 90
        let panels = [servers != nil, connections != nil, tokens != nil].filter { $0 }.count
        let height = Int(nextTop + Double(panels * 300))
        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(plot.width))" height="\(height)" \
            viewBox="0 0 \(Int(plot.width)) \(height)" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(plot.left)" y="24" font-size="16">\(plot.escape(title))</text>

            """
        // Connections on the left scale; attempts per second, orders of magnitude apart from them, on the right.
        let clients = max(1, timeSeries.map { max($0.online, $0.reconnecting, $0.failed, $0.target) }.max() ?? 1)
        let attemptsTop = max(1, timeSeries.map(\.attempts).max() ?? 1)
        // Every panel over the same span: the run's (a server's last logins may complete after it).
        let span = max(1, (timeSeries.map(\.second).max() ?? 0) + 1)
        out += plot.panel(
            rows: timeSeries,
            second: \.second,
            span: span,
            top: plot.top,
            height: mainHeight,
            left: ("clients", clients),
            right: ("reconnect attempts / s", attemptsTop),
            series: [
                .init("want to be in", "#bdc1c6", \.target, right: false),
                .init("online", "#2b7bba", \.online, right: false),
                .init("reconnecting", "#e8710a", \.reconnecting, right: false),
                .init("failed or given up", "#5f6368", \.failed, right: false, dashed: true),
                .init("reconnect attempts / s (right)", "#c5221f", \.attempts, right: true),
            ],
            caption: "\(online) online, \(reconnecting) reconnecting, \(failed) failed or given up at the end; "
                + (secondsUntil99PercentBack.map { "99 % back \(plot.number($0)) s after the peak" }
                    ?? "99 % never back")
        )
        // The reconnect-duration histogram, one bar per second of duration.
        out += histogram(top: histogramTop)
        if let servers {
            out += Self.serverPanel(servers, span: span, top: nextTop)
            nextTop += 300
        }
        if let connections {
            out += Self.connectionPanel(connections, span: span, top: nextTop)
            nextTop += 300
        }
        if let tokens { out += Self.tokenPanel(tokens, span: span, top: nextTop) }
        out += "</svg>\n"
        return out
    }

    /// Reconnections by how long they took, one bar per second.
    private func histogram(top: Double) -> String {
        let plot = Plot.self
        let counts = reconnectSecondsHistogram
        let height = 150.0
        let highest = max(1, counts.max() ?? 1)
        let yTicks = plot.ticks(upTo: highest)
        let xMax = max(1, counts.count)
        func x(_ second: Double) -> Double { plot.left + plot.chartWidth * second / Double(xMax) }
        func y(_ value: Double) -> Double { top + height * (1 - value / Double(yTicks.last ?? 1)) }
        var out = plot.label(
            plot.left,
            top - 14,
            "reconnect duration: \(reconnections) reconnections; p50 \(plot.number(reconnectSecondsP50)) s, "
                + "p99 \(plot.number(reconnectSecondsP99)) s"
        )
        out += plot.grid(ticks: yTicks, y: { y(Double($0)) }, side: .left, title: "reconnections")
        let barWidth = plot.chartWidth / Double(xMax)
        for (second, count) in counts.enumerated() where count > 0 {
            out += String(
                format: "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#5f6368\"/>\n",
                x(Double(second)),
                y(Double(count)),
                max(1, barWidth - 1),
                top + height - y(Double(count))
            )
        }
        out += plot.timeAxis(seconds: xMax, top: top, height: height, title: "seconds to reconnect")
        return out
    }

    /// Logins offered and goodput per second, and the queue (its own scale, on the right), per second.
    private static func serverPanel(_ servers: ServerReport, span: Int, top: Double) -> String {
        let rows = servers.timeSeries.filter { $0.second < span }
        let logins = max(1, rows.map { max($0.offeredLogins, $0.goodputLogins) }.max() ?? 1)
        let queue = max(1, rows.map(\.queue).max() ?? 1)
        let verdict =
            servers.sustainedOverload
            ? "sustained overload after the trigger"
            : servers.recovered.map { $0 ? "recovered" : "did not recover" } ?? ""
        return Plot.panel(
            rows: rows,
            second: \.second,
            span: span,
            top: top,
            height: 180,
            left: ("logins / s", logins),
            right: ("queue length", queue),
            series: [
                .init("logins offered / s", "#9aa0a6", \.offeredLogins, right: false),
                .init("goodput (answered in time) / s", "#188038", \.goodputLogins, right: false),
                .init("queue length (right)", "#a142f4", \.queue, right: true),
            ],
            caption: "servers: \(servers.policy)  \(verdict)"
        )
    }

    /// Token fetches begun and brought per second, and those failed (their own scale, on the right).
    private static func tokenPanel(_ tokens: TokenReport, span: Int, top: Double) -> String {
        let rows = tokens.tally.seconds.filter { $0.second < span }
        let rate = max(1, rows.map { max($0.fetches, $0.fetched) }.max() ?? 1)
        let failed = max(1, rows.map(\.failed).max() ?? 1)
        let causes = tokens.failures.filter { $0.value > 0 }.sorted { $0.key < $1.key }
            .map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        return Plot.panel(
            rows: rows,
            second: \.second,
            span: span,
            top: top,
            height: 180,
            left: ("token fetches / s", rate),
            right: ("failed / s", failed),
            series: [
                .init("fetches begun / s", "#9aa0a6", \.fetches, right: false),
                .init("tokens brought / s", "#188038", \.fetched, right: false),
                .init("failed / s (right)", "#c5221f", \.failed, right: true),
            ],
            caption: "token server: \(tokens.fetches) fetches, peak \(tokens.fetchesPerSecondPeak)/s; p50 "
                + "\(Plot.number(tokens.latency.p50Ms)) ms, p99 \(Plot.number(tokens.latency.p99Ms)) ms"
                + (causes.isEmpty ? "" : "; failed: \(causes)")
        )
    }

    /// Connection attempts, opened and failed per second, and connections open (its own scale, on the right).
    private static func connectionPanel(_ connections: ConnectionReport, span: Int, top: Double) -> String {
        let rows = connections.tally.seconds.filter { $0.second < span }
        let rate = max(1, rows.map { max($0.attempts, $0.opened, $0.failed) }.max() ?? 1)
        let open = max(1, rows.map(\.open).max() ?? 1)
        let causes = connections.failures.filter { $0.value > 0 }.sorted { $0.key < $1.key }
            .map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        return Plot.panel(
            rows: rows,
            second: \.second,
            span: span,
            top: top,
            height: 180,
            left: ("connections / s", rate),
            right: ("connections open", open),
            series: [
                .init("attempts / s", "#9aa0a6", \.attempts, right: false),
                .init("opened / s", "#188038", \.opened, right: false),
                .init("failed / s", "#c5221f", \.failed, right: false),
                .init("open (right)", "#2b7bba", \.open, right: true),
            ],
            caption: "TCP connect p99 \(Plot.number(connections.tcpConnect.p99Ms)) ms, login p99 "
                + "\(Plot.number(connections.login.p99Ms)) ms, heartbeat round trip p99 "
                + "\(Plot.number(connections.heartbeatRoundTrip.p99Ms)) ms; failures: \(causes.isEmpty ? "none" : causes)"
        )
    }
}

/// The pieces the load pictures are drawn with: panels of series over time with ticked, titled axes on both sides,
/// legends that wrap instead of overlapping, and labels kept inside the canvas.
enum Plot {
    static let width = 1000.0
    static let left = 90.0
    static let chartWidth = 800.0
    static let top = 80.0
    /// The right edge of the charts; the right axis's labels and title live between it and the canvas's edge.
    static var right: Double { left + chartWidth }

    /// One line of a panel: its name, colour, value, and which scale it is drawn on.
    struct Series<Row> {
        var name: String
        var color: String
        var value: (Row) -> Int
        var right: Bool
        var dashed: Bool

        init(_ name: String, _ color: String, _ value: @escaping (Row) -> Int, right: Bool, dashed: Bool = false) {
            self.name = name
            self.color = color
            self.value = value
            self.right = right
            self.dashed = dashed
        }
    }

    enum Side { case left, right }

    /// A panel of per-second series: a left scale and a right one, each ticked and titled, a time axis, a legend above
    /// (wrapping onto a second row when it must) and a caption below.
    static func panel<Row>(
        rows: [Row],
        second: (Row) -> Int,
        span: Int,
        top: Double,
        height: Double,
        left: (title: String, top: Int),
        right: (title: String, top: Int),
        series: [Series<Row>],
        caption: String
    ) -> String {
        let seconds = max(1, span)
        let leftTicks = ticks(upTo: left.top)
        let rightTicks = ticks(upTo: right.top)
        func x(_ second: Int) -> Double { Self.left + chartWidth * Double(second) / Double(seconds) }
        func y(_ value: Int, _ scale: [Int]) -> Double {
            top + height * (1 - Double(value) / Double(scale.last ?? 1))
        }
        var out = legend(series.map { ($0.name, $0.color, $0.dashed) }, top: top - 34)
        out += grid(ticks: leftTicks, y: { y($0, leftTicks) }, side: .left, title: left.title)
        out += grid(ticks: rightTicks, y: { y($0, rightTicks) }, side: .right, title: right.title, lines: false)
        for line in series {
            let scale = line.right ? rightTicks : leftTicks
            let points = rows.map {
                fixed(x(second($0)), digits: 1) + "," + fixed(y(line.value($0), scale), digits: 1)
            }
            out += "<polyline fill=\"none\" stroke=\"\(line.color)\" stroke-width=\"1.5\""
            out += line.dashed ? " stroke-dasharray=\"5 3\"" : ""
            out += " points=\"\(points.joined(separator: " "))\"/>\n"
        }
        out += timeAxis(seconds: seconds, top: top, height: height, title: "seconds since the start")
        out += label(Self.left, top + height + 56, fitting(caption, width: width - Self.left - 10))
        return out
    }

    /// Horizontal grid lines (or none) and tick labels for `ticks` on one side, with the axis's title turned along it.
    static func grid(ticks: [Int], y: (Int) -> Double, side: Side, title: String, lines: Bool = true) -> String {
        var out = ""
        let top = y(ticks.last ?? 0)
        let bottom = y(0)
        let x = side == .left ? left : right
        out += "<path d=\"M\(x) \(top) V\(bottom)\" stroke=\"#444\" fill=\"none\"/>\n"
        for tick in ticks {
            let at = y(tick)
            if lines, tick > 0 {
                out += "<path d=\"M\(left) \(at) H\(right)\" stroke=\"#e8eaed\" fill=\"none\"/>\n"
            }
            let mark = side == .left ? "M\(x - 4) \(at) H\(x)" : "M\(x) \(at) H\(x + 4)"
            out += "<path d=\"\(mark)\" stroke=\"#444\" fill=\"none\"/>\n"
            out +=
                side == .left
                ? label(x - 7, at + 4, compact(tick), anchor: "end") : label(x + 7, at + 4, compact(tick))
        }
        // The title, turned to run up the axis, beside its labels and inside the canvas.
        let titleX = side == .left ? 16.0 : width - 12
        let middle = (top + bottom) / 2
        out += "<text x=\"\(titleX)\" y=\"\(middle)\" text-anchor=\"middle\" fill=\"#3c4043\" "
        out += "transform=\"rotate(\(side == .left ? -90 : 90) \(titleX) \(middle))\">\(escape(title))</text>\n"
        return out
    }

    /// The time axis under a chart: ticks at round seconds (or minutes), and its title.
    static func timeAxis(seconds: Int, top: Double, height: Double, title: String) -> String {
        let bottom = top + height
        var out = "<path d=\"M\(left) \(bottom) H\(right)\" stroke=\"#444\" fill=\"none\"/>\n"
        for tick in ticks(upTo: seconds, count: 8) where tick <= seconds {
            let x = left + chartWidth * Double(tick) / Double(max(1, seconds))
            out += "<path d=\"M\(x) \(bottom) V\(bottom + 4)\" stroke=\"#444\" fill=\"none\"/>\n"
            let text = seconds >= 600 && tick % 60 == 0 ? "\(tick / 60) min" : "\(tick)"
            out += label(x, bottom + 18, text, anchor: "middle")
        }
        out += label(left + chartWidth / 2, bottom + 36, title, anchor: "middle", color: "#3c4043")
        return out
    }

    /// A legend: a swatch and a name each, laid out by the names' widths, wrapping onto a second row.
    static func legend(_ entries: [(name: String, color: String, dashed: Bool)], top: Double) -> String {
        var out = ""
        var x = left
        var y = top
        for entry in entries {
            let width = 26 + textWidth(entry.name) + 18
            if x + width > Self.width - 10, x > left {
                x = left
                y += 16
            }
            out += "<path d=\"M\(x) \(y - 4) H\(x + 18)\" stroke=\"\(entry.color)\" stroke-width=\"3\""
            out += entry.dashed ? " stroke-dasharray=\"5 3\"" : ""
            out += "/>\n"
            out += label(x + 24, y, entry.name)
            x += width
        }
        return out
    }

    /// Round tick values from 0 up to at least `top`: steps of 1, 2 or 5 × 10^k, about `count` of them.
    static func ticks(upTo top: Int, count: Int = 5) -> [Int] {
        let top = max(1, top)
        let raw = Double(top) / Double(count)
        let magnitude = pow(10, floor(log10(max(1, raw))))
        let step = max(1, Int([1.0, 2, 5, 10].first { $0 * magnitude >= raw }.map { $0 * magnitude } ?? magnitude))
        let last = (top + step - 1) / step * step
        return Array(stride(from: 0, through: last, by: step))
    }

    /// `12,000` as `12k`, `1,500,000` as `1.5M`.
    static func compact(_ value: Int) -> String {
        switch value {
        case 1_000_000...: String(format: value % 1_000_000 == 0 ? "%.0fM" : "%.1fM", Double(value) / 1e6)
        case 10_000...: String(format: value % 1_000 == 0 ? "%.0fk" : "%.1fk", Double(value) / 1e3)
        default: "\(value)"
        }
    }

    /// About how wide `text` is at 12 px (sans-serif averages a little over half the size per character).
    static func textWidth(_ text: String) -> Double { Double(text.count) * 6.6 }

    /// `text`, shortened with an ellipsis if it would not fit in `width`.
    static func fitting(_ text: String, width: Double) -> String {
        let fits = Int(width / 6.6)
        return text.count <= fits ? text : String(text.prefix(max(1, fits - 1))) + "…"
    }

    static func label(
        _ x: Double,
        _ y: Double,
        _ text: String,
        anchor: String = "start",
        color: String? = nil
    ) -> String {
        "<text x=\"\(x)\" y=\"\(y)\" text-anchor=\"\(anchor)\"\(color.map { " fill=\"\($0)\"" } ?? "")>\(escape(text))</text>\n"
    }

    static func number(_ value: Double) -> String { fixed(value, digits: 2) }

    /// `value` with `digits` (1 or 2) decimals, character for character as `String(format: "%.2f")` writes it —
    /// rounded to nearest from the exact binary value, ties to even — without Foundation's formatter, which a page
    /// following a run paid for thousands of times a second (a panel is a few hundred coordinates).
    static func fixed(_ value: Double, digits: Int) -> String {
        let scale = digits == 1 ? 10.0 : 100.0
        let scaled = value * scale
        guard digits == 1 || digits == 2, value.isFinite, abs(scaled) < 1e15 else {
            return String(format: "%.\(digits)f", value)
        }
        // `scaled` is the product rounded; `error` what rounding it lost, exactly. Only a product that is exactly a
        // half can round the other way from the exact value: the lost part decides it, and a true tie goes to even.
        let error = (-scaled).addingProduct(value, scale)
        var rounded = scaled.rounded(.toNearestOrEven)
        if abs(scaled - rounded) == 0.5, error != 0 {
            rounded = error > 0 ? scaled.rounded(.up) : scaled.rounded(.down)
        }
        let units = Int64(abs(rounded))
        let whole = units / Int64(scale)
        let fraction = units % Int64(scale)
        let decimals = digits == 2 && fraction < 10 ? "0\(fraction)" : "\(fraction)"
        return (value.sign == .minus ? "-" : "") + "\(whole)." + decimals
    }

    /// `text` with `&`, `<` and `>` written as entities (in one pass, and none when there is nothing to escape).
    static func escape(_ text: String) -> String {
        guard
            text.utf8.contains(where: { $0 == UInt8(ascii: "&") || $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: ">") })
        else { return text }
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count + 16)
        for character in text.unicodeScalars {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }
}
