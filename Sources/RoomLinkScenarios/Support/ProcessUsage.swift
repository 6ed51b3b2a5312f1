#if canImport(Glibc)
import Glibc
// `timeval`'s fields are declared in this module; MemberImportVisibility wants it named.
import SwiftOverlayShims
#endif

/// CPU time and peak memory of this process, from `getrusage`.
public struct ProcessUsage: Sendable {
    /// User plus system CPU time, in seconds.
    public var cpuSeconds: Double
    /// Peak resident set size, in bytes.
    public var peakRSSBytes: Int

    /// The usage so far.
    public static func current() -> ProcessUsage {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        let cpu =
            Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        // Prefer the address space's own high-water mark: ru_maxrss survives execve, so under `swift run` it would
        // report SwiftPM's peak instead of ours. (Linux reports ru_maxrss in kilobytes.)
        return ProcessUsage(cpuSeconds: cpu, peakRSSBytes: peakRSSFromProc() ?? Int(usage.ru_maxrss) * 1024)
    }

    /// `VmHWM` from `/proc/self/status`, in bytes.
    private static func peakRSSFromProc() -> Int? {
        guard let file = fopen("/proc/self/status", "r") else { return nil }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard text.hasPrefix("VmHWM:") else { continue }
            // "VmHWM:     12345 kB"
            let fields = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" })
            guard fields.count >= 2, let kilobytes = Int(fields[1]) else { return nil }
            return kilobytes * 1024
        }
        return nil
    }

    /// The current resident set size in bytes (from `/proc/self/statm`), or 0 where unavailable.
    public static func currentRSSBytes() -> Int {
        guard let file = fopen("/proc/self/statm", "r") else { return 0 }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 128)
        guard fgets(&line, Int32(line.count), file) != nil else { return 0 }
        // Fields: total program size, resident set size, … in pages.
        let fields = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            .split(separator: " ")
        guard fields.count >= 2, let pages = Int(fields[1]) else { return 0 }
        return pages * sysconf(Int32(_SC_PAGESIZE))
    }
}
