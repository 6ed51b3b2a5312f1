import ArgumentParser
import Foundation
import RoomLink

/// `roomlink load --processes N`: the same load in N generator processes, each playing its slice of the population
/// (`--shard I/N`) with its own open-file limit, their reports merged into one and their event logs into one.
struct LoadProcesses {
    let count: Int
    /// The command line of this `roomlink load`, without the program's name.
    let arguments: [String]
    let events: String?
    let report: String?

    /// The options each child is not given: the parent writes the outputs, and the children stay quiet.
    private static let parentOnly: Set<String> = [
        "--processes", "--report", "--events", "--plot", "--timeseries", "--save-scenario", "--shard", "--html",
    ]
    private static let parentOnlyFlags: Set<String> = ["--quiet"]

    /// Starts the children, waits for them, and merges what they wrote; returns the merged report.
    func run() async throws -> RunReport {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("roomlink-load-\(ProcessInfo.processInfo.processIdentifier)")
        try? FileManager.default.removeItem(at: directory)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw fail(.ioFailure(directory.path, cannot: "create a folder for the generators' reports", errno: EIO))
        }
        defer { try? FileManager.default.removeItem(at: directory) }
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let base = Self.childArguments(arguments)
        let children = (0..<count).map { index in
            (
                index: index,
                report: directory.appendingPathComponent("\(index).json").path,
                events: events == nil ? nil : directory.appendingPathComponent("\(index).jsonl").path
            )
        }
        StandardStream.error.write("roomlink load: \(count) generator processes, one slice of the population each\n")
        let statuses = try await withThrowingTaskGroup(of: (Int, Int32).self) { group in
            for child in children {
                var arguments = base + ["--shard", "\(child.index)/\(count)", "--quiet", "--report", child.report]
                if let path = child.events { arguments += ["--events", path] }
                let process = Process()
                process.executableURL = executable
                process.arguments = arguments
                do {
                    try process.run()
                } catch {
                    throw fail(RoomLinkError(code: .ioFailure, message: "cannot start a generator process: \(error)"))
                }
                group.addTask {
                    await withCheckedContinuation { continuation in
                        DispatchQueue.global().async {
                            process.waitUntilExit()
                            continuation.resume(returning: (child.index, process.terminationStatus))
                        }
                    }
                }
            }
            var statuses: [Int: Int32] = [:]
            for try await (index, status) in group { statuses[index] = status }
            return statuses
        }
        // 1 is a run with violations (its report says so); anything else is a generator that failed.
        // (It said why on standard error; its status is the load's.)
        if let (index, status) = statuses.sorted(by: { $0.key < $1.key }).first(where: { $0.value > 1 }) {
            StandardStream.error.write("roomlink load: generator \(index)/\(count) failed (exit status \(status))\n")
            throw ExitCode(status)
        }
        let reports = try children.map { try Playback.readReport($0.report, as: "generator \($0.index)'s report") }
        let merged: RunReport
        do {
            merged = try RunReport.merged(reports)
        } catch {
            throw fail(error, in: "merging the generators' reports")
        }
        if let events { try Self.mergeEventLogs(children.compactMap(\.events), into: events) }
        return merged
    }

    /// The command line for a child: this one without the options only the parent takes.
    static func childArguments(_ arguments: [String]) -> [String] {
        var result: [String] = []
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
            if parentOnly.contains(name) {
                // `--name value`, or `--name=value`.
                index += argument.contains("=") ? 1 : 2
                continue
            }
            if !parentOnlyFlags.contains(argument) { result.append(argument) }
            index += 1
        }
        return result
    }

    /// Merges the children's event logs by time (a user's lines are all in one child's log, in order), into `path`
    /// (`-`: standard output), reading them as it writes (``EventLogMerge``): memory stays one line per child.
    static func mergeEventLogs(_ paths: [String], into path: String) throws {
        do {
            let writer = try path == "-" ? EventLogWriter<EventLogLine>() : EventLogWriter<EventLogLine>(path: path)
            let names = paths.indices.map { "generator \($0)'s event log" }
            do {
                try EventLogMerge.merge(paths, names: names, into: writer)
            } catch {
                try? writer.close()
                throw error
            }
            try writer.close()
        } catch {
            throw fail(error)
        }
    }
}
