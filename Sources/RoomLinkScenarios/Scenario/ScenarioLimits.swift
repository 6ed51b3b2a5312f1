/// The bounds RoomLink puts on scenarios, load plans and heartbeat loads, so that a typo cannot ask for a run that
/// never ends or tables that cannot fit (docs/cli.md, "Limits"). A value outside them is refused by name before
/// anything is allocated.
public enum ScenarioLimits {
    /// The longest scenario (`end`, `--duration`) and the longest duration any field may hold: one day of scenario
    /// time. A load test's statistics keep a bucket per 100 ms of it.
    public static let maximumDuration: Duration = .seconds(24 * 3_600)

    /// The shortest interval or timeout a timing may have (`heartbeatInterval`, `attemptTimeout`, …) and the
    /// shortest heartbeat period of `roomlink heartbeats`: 1 ms. Below it a client would do nothing but beat.
    public static let minimumPeriod: Duration = .milliseconds(1)

    /// The timings that are delays rather than intervals or timeouts, and so may be zero (a server that answers at
    /// once, peers told at once).
    public static let zeroTimings: Set<String> = [
        "loginProcessing", "joinProcessing", "userUpdateDelay", "peerJoinDelay", "participantUpdateDelay",
        "tokenRenewalGrace",
    ]

    /// The shortest flapping period (`--flapping SHARE:PERIOD:DUTY`): a timeline entry is written per period.
    public static let minimumFlappingPeriod: Duration = .seconds(1)

    /// The most clients a population may have whatever the memory: far past what one process holds.
    public static let maximumClients = 100_000_000

    /// Memory a ZEGO population client costs, rounded up from the measured ≈ 1.0 KB per client at a million
    /// (BENCHMARKS.md, issue 31), with room for the event log's buffers, the oracle's tables and rooms larger than a
    /// hundred.
    public static let estimatedBytesPerClient: UInt64 = 2_048

    /// Memory a population client of `dialect` costs: Agora's and LiveKit's clients keep their peers' names (≈ 3.0 KB
    /// a client at 300,000 in rooms of 100, BENCHMARKS.md, issue 31's seventh part), so twice a ZEGO client's.
    public static func estimatedBytesPerClient(for dialect: Scenario.Dialect) -> UInt64 {
        switch dialect {
        case .zego: estimatedBytesPerClient
        case .agora, .livekit: 2 * estimatedBytesPerClient
        }
    }

    /// The memory a run may plan to use by default: 90 % of this machine's physical memory.
    public static var defaultMemoryLimit: UInt64 { physicalMemoryBytes / 10 * 9 }

    /// This machine's physical memory in bytes.
    public static var physicalMemoryBytes: UInt64 {
        let pages = sysconf(Int32(_SC_PHYS_PAGES))
        let size = sysconf(Int32(_SC_PAGESIZE))
        return pages > 0 && size > 0 ? UInt64(pages) * UInt64(size) : 8 << 30
    }

    /// Refuses a population of `clients` whose estimated memory, `bytesPerClient` each, exceeds `limit` bytes,
    /// naming `field`.
    ///
    /// - Throws: `RoomLinkError.Code.invalidInput` with the estimate and the limit.
    public static func checkMemory(
        clients: Int,
        limit: UInt64,
        field: String,
        bytesPerClient: UInt64 = estimatedBytesPerClient
    ) throws(RoomLinkError) {
        guard clients <= maximumClients else {
            throw .invalidArgument(field, "at most \(maximumClients) clients", got: "\(clients)")
        }
        let estimate = UInt64(max(0, clients)) * bytesPerClient
        guard estimate <= limit else {
            let fitting = limit / bytesPerClient
            throw .invalidArgument(
                field,
                "a population that fits in the memory limit of \(bytesText(limit)) (at most \(fitting) clients at "
                    + "≈ \(bytesPerClient) B each; the limit can be raised)",
                got: "\(clients) clients (≈ \(bytesText(estimate)))"
            )
        }
    }

    /// `1.5 GiB`, `200.0 MiB`.
    static func bytesText(_ bytes: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1_024, unit < units.count - 1 {
            value /= 1_024
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : "\((value * 10).rounded() / 10) \(units[unit])"
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
