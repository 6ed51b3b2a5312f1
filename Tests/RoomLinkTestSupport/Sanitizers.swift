package import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the test process was built with.
package enum Sanitizers {
    /// Whether ThreadSanitizer's runtime is in the process (`swift test --sanitize=thread`). Long virtual-time runs
    /// skip themselves then: a simulation plays on one thread, so ThreadSanitizer has nothing to find in them, and
    /// its ×30 cost on their millions of events would push the suite past its time limits.
    package static let threadSanitizerIsOn: Bool = {
        // `RTLD_DEFAULT`: every object of the process.
        #if canImport(Darwin)
        let everywhere = UnsafeMutableRawPointer(bitPattern: -2)
        #else
        let everywhere: UnsafeMutableRawPointer? = nil
        #endif
        return dlsym(everywhere, "__tsan_init") != nil
    }()
}

extension Trait where Self == ConditionTrait {
    /// Skips a single-threaded test on pure values under ThreadSanitizer, which has nothing to find there and only
    /// multiplies its length.
    package static var skippedUnderThreadSanitizer: Self {
        .enabled(if: !Sanitizers.threadSanitizerIsOn, "one thread, pure values: nothing for ThreadSanitizer")
    }
}
