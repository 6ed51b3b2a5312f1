// `roomlink-fence-checks`: every check of `FenceChecks`, one after the other, in a process of its own — so that CI can
// build it, and only what it needs, with AddressSanitizer (`swift build --sanitize=address --product
// roomlink-fence-checks`), where a broken invariant is a use-after-free report. Exits 1 naming each failed check.
import Foundation
import RoomLinkFenceChecks

var failed: [String] = []
for check in FenceChecks.all {
    do {
        try await check.run()
        print("passed: \(check.name)")
    } catch {
        print("FAILED: \(check.name): \(error)")
        failed.append(check.name)
    }
}
if !failed.isEmpty {
    print("roomlink-fence-checks: \(failed.count) of \(FenceChecks.all.count) checks failed")
    exit(1)
}
print("roomlink-fence-checks: all \(FenceChecks.all.count) checks passed")
