extension RunReport {
    /// The report of several processes' runs of one scenario, each playing a slice of it (`roomlink load --shard`,
    /// `--processes`) or each a separate generator: counts add up, percentiles come from the merged histograms
    /// (``LoadTally``, ``timerLatenessTally``), and time series add up second by second from the scenario's start.
    /// Merging the reports of a scenario's slices gives the counts and percentiles of one run over them all, as a
    /// run split over simulations in one process (``ScenarioRunner/shards``) gives.
    ///
    /// - Throws: `RoomLinkError` when the reports are of different runs (dialect, clock, seed, length), one of them
    ///   lacks what merges (a load report from before tallies), a slice comes twice, or a server's capacity was
    ///   modelled (a node's queue is one process's and does not add up).
    public static func merged(_ reports: [RunReport]) throws(RoomLinkError) -> RunReport {
        guard var merged = reports.first else {
            throw RoomLinkError(code: .invalidInput, message: "nothing to merge: give at least one report")
        }
        guard reports.count > 1 else { return merged }
        for (index, report) in reports.enumerated().dropFirst() {
            for (what, mine, theirs) in [
                ("dialect", merged.dialect, report.dialect), ("clock", merged.clock, report.clock),
                ("seed", String(merged.seed), String(report.seed)),
            ] where mine != theirs {
                throw RoomLinkError(
                    code: .invalidInput,
                    message: "report \(index + 1) is of another run: its \(what) is \(theirs), the first's \(mine)"
                )
            }
            if !report.interrupted, !merged.interrupted, report.scenarioSeconds != merged.scenarioSeconds {
                throw RoomLinkError(
                    code: .invalidInput,
                    message: "report \(index + 1) is of another run: it lasted \(report.scenarioSeconds) s, the "
                        + "first \(merged.scenarioSeconds) s"
                )
            }
        }
        if reports.contains(where: { $0.servers != nil }) {
            throw RoomLinkError(
                code: .invalidInput,
                message: "reports of a modelled server capacity do not merge: a node's queue is one process's"
            )
        }
        let slices = reports.compactMap(\.slice)
        if Set(slices).count != slices.count {
            throw RoomLinkError(code: .invalidInput, message: "a slice comes twice: \(slices.map(\.description))")
        }
        let loads = reports.map(\.load)
        if loads.contains(where: { $0 != nil }) {
            guard loads.allSatisfy({ $0?.tally != nil }) else {
                throw RoomLinkError(
                    code: .invalidInput,
                    message: "every report must be a load report with its tally (roomlink load, this version)"
                )
            }
        }
        let others = reports.dropFirst()
        func sum(_ a: [String: Int], _ b: [String: Int]) -> [String: Int] { a.merging(b, uniquingKeysWith: +) }
        for report in others {
            merged.clients += report.clients
            merged.rooms += report.rooms
            merged.events += report.events
            merged.eventsPerPeer += report.eventsPerPeer
            merged.eventsByType = sum(merged.eventsByType, report.eventsByType)
            merged.eventsByState = sum(merged.eventsByState, report.eventsByState)
            merged.eventsByReason = sum(merged.eventsByReason, report.eventsByReason)
            merged.eventsByCode = sum(merged.eventsByCode, report.eventsByCode)
            merged.messages += report.messages
            merged.violations += report.violations
            merged.violationSample = Array((merged.violationSample + report.violationSample).prefix(20))
            merged.droppedEvents += report.droppedEvents
            merged.wallSeconds = max(merged.wallSeconds, report.wallSeconds)
            merged.scenarioSeconds = min(merged.scenarioSeconds, report.scenarioSeconds)
            merged.peakRSSBytes += report.peakRSSBytes
            merged.cpuSeconds += report.cpuSeconds
            if let live = report.liveViewCPUSeconds {
                merged.liveViewCPUSeconds = (merged.liveViewCPUSeconds ?? 0) + live
            }
            merged.shards += report.shards
            merged.interrupted = merged.interrupted || report.interrupted
            merged.parts += report.parts
            if let keptUp = report.keptUp { merged.keptUp = (merged.keptUp ?? true) && keptUp }
            if let keptUp = report.keptUpAfterFill {
                merged.keptUpAfterFill = (merged.keptUpAfterFill ?? true) && keptUp
            }
            switch (merged.timerLatenessTally, report.timerLatenessTally) {
            case (var mine?, let theirs?):
                mine.merge(theirs)
                merged.timerLatenessTally = mine
            default: merged.timerLatenessTally = nil
            }
        }
        // Per-client figures over every process's clients: memory is each process's own.
        let bytes = reports.reduce(0) { $0 + $1.bytesPerClient * $1.clients }
        merged.bytesPerClient = merged.clients > 0 ? bytes / merged.clients : 0
        merged.peakRSSBytesPerClient = merged.clients > 0 ? merged.peakRSSBytes / merged.clients : 0
        merged.eventsPerWallSecond = merged.wallSeconds > 0 ? Double(merged.events) / merged.wallSeconds : 0
        merged.timerLateness = merged.timerLatenessTally?.summary ?? merged.timerLateness
        merged.slice = nil
        let connections = reports.compactMap(\.connections?.tally)
        if connections.count == reports.count, var tally = connections.first {
            for other in connections.dropFirst() { tally.add(other) }
            merged.connections = ConnectionReport(tally)
        } else {
            merged.connections = nil
        }
        let tokens = reports.compactMap(\.tokens?.tally)
        if tokens.count == reports.count, var tally = tokens.first {
            for other in tokens.dropFirst() { tally.add(other) }
            merged.tokens = TokenReport(tally)
        } else {
            merged.tokens = nil
        }
        if let first = loads.first, first != nil {
            let tallies = loads.compactMap { $0?.tally }
            merged.load = LoadStatistics.report(merging: tallies, end: merged.scenarioSeconds, clients: merged.clients)
            merged.load?.measureRecoveries(after: first?.recoveries.map(\.window) ?? [])
        }
        return merged
    }
}
