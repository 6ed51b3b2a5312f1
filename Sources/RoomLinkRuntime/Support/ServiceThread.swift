import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An OS thread owned by a loop or a simulation, which knows whether it is the calling thread.
package final class ServiceThread: Sendable {
    private let threadID = Atomic<UInt>(0)
    private let handle = LockedBox<pthread_t?>(nil)

    private init() {}

    /// Starts a thread that runs `body`; `name` identifies it in diagnostics.
    ///
    /// - Throws: ``RuntimeError/Code/invalidConfiguration`` when the system refuses another thread.
    package static func start(
        name: String,
        _ body: @escaping @Sendable () -> Void
    ) throws(RuntimeError)
        -> ServiceThread
    {
        let thread = ServiceThread()
        let context = Context(thread: thread, name: name, body: body)
        // The new thread takes over this +1 retain and releases it when `body` returns.
        let argument = Unmanaged.passRetained(context).toOpaque()
        var tid = pthread_t()
        let result = pthread_create(
            &tid,
            nil,
            { argument in
                let context = Unmanaged<Context>.fromOpaque(argument!).takeRetainedValue()
                context.thread.threadID.store(UInt(pthread_self()), ordering: .releasing)
                context.body()
                // glibc reuses an ended thread's stack, and with it its `pthread_t`, for the next thread it starts:
                // left set, the ID would make that unrelated thread pass for this one (a job enqueued there on a
                // stopped loop would sit in its run queue for ever instead of going to the retired executor).
                context.thread.threadID.store(0, ordering: .releasing)
                return nil
            },
            argument
        )
        guard result == 0 else {
            Unmanaged<Context>.fromOpaque(argument).release()
            throw .invalidConfiguration("could not start thread \(name): pthread_create returned \(result)")
        }
        thread.handle.withLock { $0 = tid }
        return thread
    }

    /// Whether the calling thread is this thread.
    package var isCurrent: Bool {
        threadID.load(ordering: .acquiring) == UInt(pthread_self())
    }

    /// Waits for the thread to end. From the thread itself it returns at once (the thread is detached instead).
    package func join() {
        guard
            let tid = handle.withLock({ value -> pthread_t? in
                defer { value = nil }
                return value
            })
        else { return }
        if isCurrent {
            pthread_detach(tid)
        } else {
            pthread_join(tid, nil)
        }
    }

    private final class Context: Sendable {
        let thread: ServiceThread
        let name: String
        let body: @Sendable () -> Void
        init(thread: ServiceThread, name: String, body: @escaping @Sendable () -> Void) {
            self.thread = thread
            self.name = name
            self.body = body
        }
    }
}
