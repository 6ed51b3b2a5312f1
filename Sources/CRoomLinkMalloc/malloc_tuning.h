#ifndef C_ROOMLINK_MALLOC_TUNING_H
#define C_ROOMLINK_MALLOC_TUNING_H

#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
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

#endif
