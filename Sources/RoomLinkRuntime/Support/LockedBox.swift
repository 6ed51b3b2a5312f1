#if canImport(Glibc)
public import Glibc
#elseif canImport(Darwin)
public import Darwin
#endif

/// A value guarded by a pthread mutex, with an optional condition variable.
///
/// `Synchronization.Mutex` is invisible to ThreadSanitizer on Linux (every guarded access is reported as a race),
/// so the runtime uses this box wherever state crosses threads.
///
/// Inlinable, so that generic code of other modules (an event queue of a client's events) is specialised through it.
@usableFromInline
package final class LockedBox<Value>: @unchecked Sendable {
    // Safe: `value` is only read or written between `pthread_mutex_lock` and `pthread_mutex_unlock` of `mutex`,
    // and the mutex and condition live at stable heap addresses for the box's lifetime.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline let condition: UnsafeMutablePointer<pthread_cond_t>
    @usableFromInline var value: Value

    @inlinable
    package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    @inlinable
    package func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// Waits, with the lock held, until `ready` returns true; then runs `body`.
    package func wait<R>(until ready: (Value) -> Bool, then body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !ready(value) { pthread_cond_wait(condition, mutex) }
        return try body(&value)
    }

    /// Wakes every thread waiting in ``wait(until:then:)``. Call it after changing the value.
    package func broadcast() {
        pthread_cond_broadcast(condition)
    }
}
