#ifndef C_ROOMLINK_MALLOC_TUNING_H
#define C_ROOMLINK_MALLOC_TUNING_H

#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
#include <unistd.h>
#endif

// glibc's allocator set up for a simulation (RoomLinkCLI's MemoryTuning says why): one arena, and every block of
// `mmap_threshold` bytes or more mapped on its own. Swift's Glibc module leaves <malloc.h> out, so `mallopt` is
// reached through this header. Returns 1 when both settings took, 0 otherwise (and where the C library is not glibc).
static inline int CRoomLinkMalloc_tuneForSimulation(int mmap_threshold) {
#if defined(__GLIBC__)
    return mallopt(M_ARENA_MAX, 1) == 1 && mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1;
#else
    (void)mmap_threshold;
    return 0;
#endif
}

// Whether the C library is glibc, whose tunables (GLIBC_TUNABLES) a restart can set.
static inline int CRoomLinkMalloc_isGlibc(void) {
#if defined(__GLIBC__)
    return 1;
#else
    return 0;
#endif
}

// Starts this program again, with the same arguments, in place of this process (`/proc/self/exe`: the program's own
// file, wherever it was started from). Returns only if that fails, with -1.
static inline int CRoomLinkMalloc_restart(char *const argv[]) {
#if defined(__GLIBC__)
    return execv("/proc/self/exe", argv);
#else
    (void)argv;
    return -1;
#endif
}

#endif
