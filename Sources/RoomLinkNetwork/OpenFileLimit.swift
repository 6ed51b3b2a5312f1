#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's limit on open files: every connection is one, so it bounds how many a process can hold.
public enum OpenFileLimit {
    /// Raises the soft limit to the hard limit, and returns the limit now in force.
    @discardableResult
    public static func raiseToHard() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return current }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised)
        }
        return current
    }

    /// The soft limit in force.
    public static var current: Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        return limit.rlim_cur > rlim_t(Int.max) ? Int.max : Int(limit.rlim_cur)
    }

    /// Descriptors a server never spends on clients, so that its admin API (health checks, kicks), Redis and its
    /// logs go on working when clients would take every descriptor: a server refuses a connection that would leave
    /// fewer free.
    public static let serverReserve = 64

    /// How many connections the limit leaves room for, after the files a process keeps open besides them (standard
    /// streams, each loop's internal descriptors, listeners, logs) and `reserve` descriptors kept free.
    public static func connections(loops: Int, reserve: Int = 0) -> Int {
        max(0, current - reserve - 16 - 4 * loops)
    }
}
