import CRoomLinkMalloc
import Foundation

/// How `roomlink run` and `roomlink load` set up glibc's allocator for a simulation's population, before any thread
/// of theirs allocates.
///
/// A simulation keeps a million small objects (clients, messages in flight, logins waiting) that one loop thread
/// allocates and another frees, and a few tables of hundreds of megabytes that grow while it runs. glibc's defaults
/// suit neither: each thread allocating takes an arena of its own, and a block freed by another thread goes back to
/// the arena it came from, where only that arena's threads reuse it; and a large block is taken from the heap
/// rather than mapped once the dynamic threshold has grown past it (up to 32 MiB), where its spare capacity, and
/// the copy a growing table leaves behind, stay resident. So a simulation uses one arena and maps every block
/// of 128 KiB or more. Measured side by side (BENCHMARKS.md, issue 31's eighth part): the million-client storm's
/// peak RSS falls by ≈ 50 bytes a client (medians 1,070 → 1,019 B), for ≈ 4 % more CPU (the one arena's lock, taken
/// when a thread's cache of free blocks runs dry); mapping alone saves about half as much and costs nothing.
///
/// And its heap goes in transparent huge pages (glibc's `hugetlb=1`: the heap is advised `MADV_HUGEPAGE`): every
/// message touches a client and a room nowhere near the last ones, and with 4 KiB pages nearly every touch of a
/// population of millions (gigabytes) also missed the TLB and walked the page tables. Measured side by side
/// (BENCHMARKS.md, issue 31's eleventh part): 0.90× the CPU at a million clients, 0.82× at three million, for the
/// same memory a client. glibc reads that setting only when a program starts, so `roomlink` starts itself again,
/// once, with the three settings in `GLIBC_TUNABLES` (and ``restartMarker`` set, so that the second start goes on);
/// where that cannot be done, it sets the first two with `mallopt` and goes on without huge pages.
///
/// Anyone who tunes the allocator themselves (`GLIBC_TUNABLES` naming a malloc setting, or `MALLOC_ARENA_MAX` and
/// friends) keeps their settings: then nothing is changed. `serve` is left alone too: its loops allocate and free
/// each frame on their own threads, which is what an arena each is for.
enum MemoryTuning {
    /// The commands that play a simulation (and so take the tuning).
    static let commands: Set<String> = ["run", "load"]
    /// Blocks of at least this many bytes are mapped on their own.
    static let mmapThreshold: Int32 = 128 * 1024
    /// Set in the environment of the process `roomlink` restarts itself as, with the tuning in `GLIBC_TUNABLES`.
    static let restartMarker = "ROOMLINK_ALLOCATOR_TUNED"
    /// The tuning as glibc's tunables: huge pages for the heap, one arena, the mapping threshold.
    static var tunables: String {
        "glibc.malloc.hugetlb=1:glibc.malloc.arena_max=1:glibc.malloc.mmap_threshold=\(mmapThreshold)"
    }

    /// Whether `arguments` (without the program's name) run a command that takes the tuning, under `environment`.
    static func applies(to arguments: [String], environment: [String: String]) -> Bool {
        guard let command = arguments.first, commands.contains(command) else { return false }
        if environment.keys.contains(where: { $0.hasPrefix("MALLOC_") }) { return false }
        if let tunables = environment["GLIBC_TUNABLES"], tunables.contains("glibc.malloc.") { return false }
        return true
    }

    /// Sets glibc's allocator up for a simulation when ``applies(to:environment:)``; call it first thing in `main`,
    /// while the main thread is the only one that has allocated. Does nothing where the C library is not glibc.
    static func apply(for arguments: [String], environment: [String: String]) {
        guard CRoomLinkMalloc_isGlibc() == 1, applies(to: arguments, environment: environment) else { return }
        if environment[restartMarker] == nil, transparentHugePagesOnAdvice {
            // The same program and arguments, with the tunables set: `execv` returns only if it failed.
            let previous = environment["GLIBC_TUNABLES"]
            let settings = previous.map { "\($0):\(tunables)" } ?? tunables
            setenv("GLIBC_TUNABLES", settings, 1)
            setenv(restartMarker, "1", 1)
            _ = CRoomLinkMalloc_restart(CommandLine.unsafeArgv)
            if let previous { setenv("GLIBC_TUNABLES", previous, 1) } else { unsetenv("GLIBC_TUNABLES") }
            unsetenv(restartMarker)
        }
        _ = CRoomLinkMalloc_tuneForSimulation(mmapThreshold)
    }

    /// Whether the kernel gives a mapping advised `MADV_HUGEPAGE` transparent huge pages (its setting is `always` or
    /// `madvise`, not `never`), as Linux's `/sys/kernel/mm/transparent_hugepage/enabled` says.
    private static var transparentHugePagesOnAdvice: Bool {
        guard
            let setting = try? String(
                contentsOfFile: "/sys/kernel/mm/transparent_hugepage/enabled",
                encoding: .utf8
            )
        else { return false }
        return !setting.contains("[never]")
    }
}
