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
    package static let threadSanitizerIsOn: Bool = runtimeIsLoaded("__tsan_init")

    /// Whether AddressSanitizer's runtime is in the process (`swift test --sanitize=address`).
    package static let addressSanitizerIsOn: Bool = runtimeIsLoaded("__asan_init")

    /// How many times longer a hang bound is than written (see ``Trait/hangLimit(minutes:)``): 3 under a sanitizer,
    /// 1 without, or `ROOMLINK_HANG_LIMIT_FACTOR` when it is set — `scripts/soak-tests` sets it, since it starves the
    /// runs on purpose.
    package static let hangLimitFactor: Int = {
        let name = "ROOMLINK_HANG_LIMIT_FACTOR"
        if let text = getenv(name).map({ String(cString: $0) }) {
            guard let factor = Int(text), (1...100).contains(factor) else {
                fatalError("\(name) must be a whole number from 1 to 100, not '\(text)'")
            }
            return factor
        }
        return threadSanitizerIsOn || addressSanitizerIsOn ? 3 : 1
    }()

    private static func runtimeIsLoaded(_ symbol: String) -> Bool {
        // `RTLD_DEFAULT`: every object of the process.
        #if canImport(Darwin)
        let everywhere = UnsafeMutableRawPointer(bitPattern: -2)
        #else
        let everywhere: UnsafeMutableRawPointer? = nil
        #endif
        return dlsym(everywhere, symbol) != nil
    }
}

extension Trait where Self == TimeLimitTrait {
    /// A time limit that fails a hung test by name: a bound for hangs, not a speed.
    ///
    /// Under a sanitizer the bound is three times `minutes` (``Sanitizers/hangLimitFactor``). Swift Testing starts
    /// every test of a run at once and counts each one's time from its start, so a test's time includes its wait for
    /// the two threads the run has — which the fuzzers and simulations hold for minutes at a time, several times
    /// longer under AddressSanitizer or ThreadSanitizer. Beside the soak's six CPU hogs and two other test runs
    /// (`scripts/soak-tests --side-by-side`), a whole AddressSanitizer run took 17 minutes and tripped ten-minute
    /// bounds on tests still making progress.
    package static func hangLimit(minutes: Int) -> Self {
        .timeLimit(.minutes(minutes * Sanitizers.hangLimitFactor))
    }
}

extension Trait where Self == ConditionTrait {
    /// Skips a single-threaded test on pure values under ThreadSanitizer, which has nothing to find there and only
    /// multiplies its length.
    package static var skippedUnderThreadSanitizer: Self {
        .enabled(if: !Sanitizers.threadSanitizerIsOn, "one thread, pure values: nothing for ThreadSanitizer")
    }
}
