internal import CLibevent
@_spi(RoomLinkInternals) import RoomLinkRuntime

/// The one place libevent calls that can fail are checked (see swift-nio's `System.swift`).
enum Libevent {
    /// libevent must be told to use pthreads once per process before any base exists; without it, `event_active`
    /// from another thread does not wake a loop.
    private static let threadingReady: Bool = evthread_use_pthreads() == 0

    /// Makes sure libevent's thread support is on.
    static func prepare() throws(RuntimeError) {
        guard threadingReady else { throw .libeventFailure("evthread_use_pthreads") }
    }

    /// Runs a libevent call that returns 0 on success, and throws a ``RuntimeError`` naming it otherwise.
    @inline(__always)
    static func check(_ name: @autoclosure () -> String, _ result: Int32) throws(RuntimeError) {
        if result != 0 { throw .libeventFailure(name()) }
    }

    /// Unwraps a pointer a libevent constructor returned.
    @inline(__always)
    static func unwrap<T>(_ name: @autoclosure () -> String, _ pointer: T?) throws(RuntimeError) -> T {
        guard let pointer else { throw .libeventFailure(name()) }
        return pointer
    }

    /// The monotonic clock, in nanoseconds.
    @inline(__always)
    static func monotonicNanoseconds() -> UInt64 {
        UInt64(CLibevent_monotonicNanoseconds())
    }

    /// A `timeval` for a relative delay in nanoseconds, rounded up to the microsecond so it is never early.
    @inline(__always)
    static func timeval(nanoseconds: UInt64) -> timeval {
        let micros = (nanoseconds &+ 999) / 1000
        return CLibevent.timeval(tv_sec: Int(micros / 1_000_000), tv_usec: Int(micros % 1_000_000))
    }
}
